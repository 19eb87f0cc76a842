
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'writerctl' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'writerctl'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'writerctl' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('acquire', 'acquire', [CompletionResultType]::ParameterValue, 'Take the session''s writer lock (prints the owner token, or writes it to --token-file)')
            [CompletionResult]::new('release', 'release', [CompletionResultType]::ParameterValue, 'Release a lock you own (ordinary close); the token comes from --token-file or WRITERCTL_OWNER_TOKEN')
            [CompletionResult]::new('seal', 'seal', [CompletionResultType]::ParameterValue, 'Seal the lock you own for handoff: certify the drained transcript so a replacement can take over (needs experimental.session_writer_lease)')
            [CompletionResult]::new('takeover', 'takeover', [CompletionResultType]::ParameterValue, 'Take over a sealed session after validating its proof (needs experimental.session_writer_lease)')
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Supervise a writer so that every stop (SIGTERM, preStop) hands its session over')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script (bash, zsh, fish, powershell)')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Show a command''s man page, rendered from the same definitions as --help: no installed page needed')
            [CompletionResult]::new('__generate', '__generate', [CompletionResultType]::ParameterValue, 'Internal: regenerate man/ and completions/')
            [CompletionResult]::new('__exec-writer', '__exec-writer', [CompletionResultType]::ParameterValue, 'Internal: the launcher `run` starts writers through')
            [CompletionResult]::new('verify', 'verify', [CompletionResultType]::ParameterValue, 'Check a sealed lock''s proof against the transcript; change nothing')
            [CompletionResult]::new('recover', 'recover', [CompletionResultType]::ParameterValue, 'Plan, and with --writers-fenced --yes carry out, moving residue of crashed writers aside (never deleting)')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show what is on disk for one session, or for every session under the runtime directory, with the next safe step')
            [CompletionResult]::new('session', 'session', [CompletionResultType]::ParameterValue, 'Coordinator: register, heartbeat and deregister controller sessions')
            [CompletionResult]::new('master', 'master', [CompletionResultType]::ParameterValue, 'Coordinator: show the master, hand it off, or claim it for a named target')
            [CompletionResult]::new('operator', 'operator', [CompletionResultType]::ParameterValue, 'Coordinator: operator credentials for `master claim`')
            [CompletionResult]::new('identity', 'identity', [CompletionResultType]::ParameterValue, 'Coordinator: enroll identities (each gets a key `session register` proves it with)')
            [CompletionResult]::new('inbox', 'inbox', [CompletionResultType]::ParameterValue, 'Coordinator: read an identity''s inbox (MasterPreempted, ClaimReleased), by cursor or --follow')
            [CompletionResult]::new('audit', 'audit', [CompletionResultType]::ParameterValue, 'Coordinator: show the audit log (every verb, who, what, result, epoch)')
            [CompletionResult]::new('channel', 'channel', [CompletionResultType]::ParameterValue, 'Work claims: create a channel (steward, SLA, TTL floor)')
            [CompletionResult]::new('claim', 'claim', [CompletionResultType]::ParameterValue, 'Work claims: take, touch, release, show, list and sweep claims (deputy, TTL, next step)')
            [CompletionResult]::new('focus', 'focus', [CompletionResultType]::ParameterValue, 'Work claims: a focus lease keeps a heads-down seat''s claims from TTL release')
            [CompletionResult]::new('steward', 'steward', [CompletionResultType]::ParameterValue, 'Work claims: the steward''s report of old claims without a TTL')
            [CompletionResult]::new('coordinator', 'coordinator', [CompletionResultType]::ParameterValue, 'Coordinator: run the HTTP server (`coordinator serve`), make its admin token (`coordinator admin-token new`)')
            [CompletionResult]::new('history', 'history', [CompletionResultType]::ParameterValue, 'List the lock-file handoffs of a runtime directory (acquire, reclaim, seal, takeover, release, recover, give back), with epoch, host, pid, pod and reason')
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Diagnose a runtime directory and a coordinator in one read-only pass: every check ok, warn or fail, with a hint')
            [CompletionResult]::new('pause', 'pause', [CompletionResultType]::ParameterValue, 'Pause a project: no TTL release and no deputy handoff until `resume` (or --until)')
            [CompletionResult]::new('resume', 'resume', [CompletionResultType]::ParameterValue, 'End a project''s pause: the next sweep releases what is due')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;acquire' {
            [CompletionResult]::new('--runtime-dir', '--runtime-dir', [CompletionResultType]::ParameterName, 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]')
            [CompletionResult]::new('--lock', '--lock', [CompletionResultType]::ParameterName, 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]')
            [CompletionResult]::new('--transcript-key', '--transcript-key', [CompletionResultType]::ParameterName, 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]')
            [CompletionResult]::new('--project-root', '--project-root', [CompletionResultType]::ParameterName, 'Use qwen-code''s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl: DIR sanitized per UTF-16 code unit as qwen does, the raw ID as the file name (so the ID must be one path component)')
            [CompletionResult]::new('--pid', '--pid', [CompletionResultType]::ParameterName, 'The process the lock names as holder [default: the process that ran writerctl, skipping forked subshells such as `$(...)`]')
            [CompletionResult]::new('--process-kind', '--process-kind', [CompletionResultType]::ParameterName, 'process_kind recorded in the lock')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Write the owner token to this new file (created 0600; never overwritten) instead of printing it')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Wait up to SECONDS (fractions allowed) while a live holder or a transition in progress refuses the session, retrying with a jittered back-off, as `flock -w` does. On timeout the last refusal is returned with its own code. Refusals that waiting cannot clear (a stale holder under --managed, a malformed record, a changed transcript) are returned at once')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why (recorded in the lock-file history, never in the lock record): one line, at most 512 bytes, no control characters')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Session id (any non-empty string; the lock file name encodes it as qwen-code does). The commands that address exactly one session also read it from WRITERCTL_SESSION (which `run` exports to its writer); status, history and recover read only the flag, since without it they cover every session')
            [CompletionResult]::new('--statefulset-identity', '--statefulset-identity', [CompletionResultType]::ParameterName, 'Trust the StatefulSet rule: a lock written by a pod of this pod''s name and namespace with another pod UID was written by a replaced pod, which may be reclaimed once its holder lock proves the old pod''s processes gone — never on the WRITERCTL_POD_* variables alone (only a StatefulSet''s manifest should set this; a force delete voids it) [env: WRITERCTL_STATEFULSET_IDENTITY=1]')
            [CompletionResult]::new('--managed', '--managed', [CompletionResultType]::ParameterName, 'Managed mode (qwen''s reclaimPolicy `never` + takeoverPolicy `certified`): a stale lock is reclaimed only under a pod rule proven by evidence — the lock of this container of this pod (or, with --statefulset-identity, of this StatefulSet pod''s predecessor) whose holder lock the kernel has released; never on the WRITERCTL_POD_* variables alone, never by pid. With the gate on, take over a sealed one')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;release' {
            [CompletionResult]::new('--runtime-dir', '--runtime-dir', [CompletionResultType]::ParameterName, 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]')
            [CompletionResult]::new('--lock', '--lock', [CompletionResultType]::ParameterName, 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]')
            [CompletionResult]::new('--transcript-key', '--transcript-key', [CompletionResultType]::ParameterName, 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]')
            [CompletionResult]::new('--project-root', '--project-root', [CompletionResultType]::ParameterName, 'Use qwen-code''s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl: DIR sanitized per UTF-16 code unit as qwen does, the raw ID as the file name (so the ID must be one path component)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Read the owner token from this file (a regular file, not a symlink, FIFO or device) [default: env WRITERCTL_OWNER_TOKEN]')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why (recorded in the lock-file history, never in the lock record): one line, at most 512 bytes, no control characters')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Session id (any non-empty string; the lock file name encodes it as qwen-code does). The commands that address exactly one session also read it from WRITERCTL_SESSION (which `run` exports to its writer); status, history and recover read only the flag, since without it they cover every session')
            [CompletionResult]::new('--statefulset-identity', '--statefulset-identity', [CompletionResultType]::ParameterName, 'Trust the StatefulSet rule: a lock written by a pod of this pod''s name and namespace with another pod UID was written by a replaced pod, which may be reclaimed once its holder lock proves the old pod''s processes gone — never on the WRITERCTL_POD_* variables alone (only a StatefulSet''s manifest should set this; a force delete voids it) [env: WRITERCTL_STATEFULSET_IDENTITY=1]')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Make every check the release makes (the directory''s filesystem and trust, and that the lock is exactly the active record this token owns) and print the record that would be removed, changing nothing. Exits with the code the release would give (3 session_not_owner for a wrong token, ...). With --json: {"dry_run":true,...}')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;seal' {
            [CompletionResult]::new('--runtime-dir', '--runtime-dir', [CompletionResultType]::ParameterName, 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]')
            [CompletionResult]::new('--lock', '--lock', [CompletionResultType]::ParameterName, 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]')
            [CompletionResult]::new('--transcript-key', '--transcript-key', [CompletionResultType]::ParameterName, 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]')
            [CompletionResult]::new('--project-root', '--project-root', [CompletionResultType]::ParameterName, 'Use qwen-code''s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl: DIR sanitized per UTF-16 code unit as qwen does, the raw ID as the file name (so the ID must be one path component)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Read the owner token from this file (a regular file, not a symlink, FIFO or device) [default: env WRITERCTL_OWNER_TOKEN]. Without a token, ask the `writerctl run` supervising this session to drain its writer and seal (the Kubernetes preStop path), and wait for the result')
            [CompletionResult]::new('--control-socket', '--control-socket', [CompletionResultType]::ParameterName, 'The supervisor''s control socket [default: derived from the runtime directory and session, as `writerctl run` derives it]')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Seconds to wait for a supervisor to finish draining and sealing [default: 3600]. Only without a token (the supervisor path)')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why (recorded in the lock-file history, never in the lock record): one line, at most 512 bytes, no control characters')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Session id (any non-empty string; the lock file name encodes it as qwen-code does). The commands that address exactly one session also read it from WRITERCTL_SESSION (which `run` exports to its writer); status, history and recover read only the flag, since without it they cover every session')
            [CompletionResult]::new('--statefulset-identity', '--statefulset-identity', [CompletionResultType]::ParameterName, 'Trust the StatefulSet rule: a lock written by a pod of this pod''s name and namespace with another pod UID was written by a replaced pod, which may be reclaimed once its holder lock proves the old pod''s processes gone — never on the WRITERCTL_POD_* variables alone (only a StatefulSet''s manifest should set this; a force delete voids it) [env: WRITERCTL_STATEFULSET_IDENTITY=1]')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;takeover' {
            [CompletionResult]::new('--runtime-dir', '--runtime-dir', [CompletionResultType]::ParameterName, 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]')
            [CompletionResult]::new('--lock', '--lock', [CompletionResultType]::ParameterName, 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]')
            [CompletionResult]::new('--transcript-key', '--transcript-key', [CompletionResultType]::ParameterName, 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]')
            [CompletionResult]::new('--project-root', '--project-root', [CompletionResultType]::ParameterName, 'Use qwen-code''s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl: DIR sanitized per UTF-16 code unit as qwen does, the raw ID as the file name (so the ID must be one path component)')
            [CompletionResult]::new('--pid', '--pid', [CompletionResultType]::ParameterName, 'The process the lock names as holder [default: the process that ran writerctl, skipping forked subshells such as `$(...)`]')
            [CompletionResult]::new('--process-kind', '--process-kind', [CompletionResultType]::ParameterName, 'process_kind recorded in the lock')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Write the owner token to this new file (created 0600; never overwritten) instead of printing it')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Wait up to SECONDS (fractions allowed) while a live holder or a transition in progress refuses the session, retrying with a jittered back-off, as `flock -w` does. On timeout the last refusal is returned with its own code. Refusals that waiting cannot clear (a stale holder under --managed, a malformed record, a changed transcript) are returned at once')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why (recorded in the lock-file history, never in the lock record): one line, at most 512 bytes, no control characters')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Session id (any non-empty string; the lock file name encodes it as qwen-code does). The commands that address exactly one session also read it from WRITERCTL_SESSION (which `run` exports to its writer); status, history and recover read only the flag, since without it they cover every session')
            [CompletionResult]::new('--statefulset-identity', '--statefulset-identity', [CompletionResultType]::ParameterName, 'Trust the StatefulSet rule: a lock written by a pod of this pod''s name and namespace with another pod UID was written by a replaced pod, which may be reclaimed once its holder lock proves the old pod''s processes gone — never on the WRITERCTL_POD_* variables alone (only a StatefulSet''s manifest should set this; a force delete voids it) [env: WRITERCTL_STATEFULSET_IDENTITY=1]')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Make every check the takeover makes (gate, --pid, the token file''s destination, the directory''s filesystem and trust, the claim, the lock''s state and liveness, the sealed proof against the transcript) and print the plan — who loses the session, the new epoch, the record that would be replaced and the one that would be written — changing nothing. Exits with the code the takeover would give (4 for a changed transcript, 3 for a live holder, ...). With --json: {"dry_run":true,...}')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;run' {
            [CompletionResult]::new('--runtime-dir', '--runtime-dir', [CompletionResultType]::ParameterName, 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]')
            [CompletionResult]::new('--lock', '--lock', [CompletionResultType]::ParameterName, 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]')
            [CompletionResult]::new('--transcript-key', '--transcript-key', [CompletionResultType]::ParameterName, 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]')
            [CompletionResult]::new('--project-root', '--project-root', [CompletionResultType]::ParameterName, 'Use qwen-code''s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl: DIR sanitized per UTF-16 code unit as qwen does, the raw ID as the file name (so the ID must be one path component)')
            [CompletionResult]::new('--grace', '--grace', [CompletionResultType]::ParameterName, 'Seconds the writer gets to exit after the stop signal before it is killed')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Seconds to wait at start for a live owner to seal or release (or a transition to finish) before giving up with session_writer_conflict')
            [CompletionResult]::new('--check-interval', '--check-interval', [CompletionResultType]::ParameterName, 'Seconds between checks of the lock while the writer runs and while it drains. If the lock no longer holds this supervisor''s exact record (a `writerctl recover` elsewhere, an operator moved or replaced it), or the lock directory''s path names another directory than the one held (moved or replaced), the writer gets SIGTERM, is killed after --grace, nothing is sealed or released, and run exits 3 (session_not_owner). Each check is one stat and one small read')
            [CompletionResult]::new('--max-unverified', '--max-unverified', [CompletionResultType]::ParameterName, 'Seconds the lock may stay unverifiable (every check failing, or one that does not answer at all: a network or FUSE volume gone away) before the writer is stopped as if the lock were lost, measured by a clock that never waits on the disk (event=lock_lost with the reason; the lock is kept as it is; exit 3, session_not_owner)')
            [CompletionResult]::new('--control-socket', '--control-socket', [CompletionResultType]::ParameterName, 'The local control socket preStop `writerctl seal` talks to [default: derived from the runtime directory and session, under $XDG_RUNTIME_DIR/writerctl or /tmp/writerctl-UID]')
            [CompletionResult]::new('--pid-namespace', '--pid-namespace', [CompletionResultType]::ParameterName, 'Put the writer in a pid namespace of its own, so that if run dies (even by SIGKILL) every process the writer started dies with it — setuid and file-capability binaries, double forks and setsid included. auto: where the kernel allows it (root: a new pid namespace; otherwise inside a user namespace mapping your own uid/gid), else the shared namespace, said in the log; require: refuse to start the writer without one (exit 2, invalid_argument); off: never. The writer sees WRITERCTL_PID_NAMESPACE=own or shared')
            [CompletionResult]::new('--process-kind', '--process-kind', [CompletionResultType]::ParameterName, 'process_kind recorded in the lock')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why (recorded in the lock-file history, never in the lock record): one line, at most 512 bytes, no control characters')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Session id (any non-empty string; the lock file name encodes it as qwen-code does). The commands that address exactly one session also read it from WRITERCTL_SESSION (which `run` exports to its writer); status, history and recover read only the flag, since without it they cover every session')
            [CompletionResult]::new('--statefulset-identity', '--statefulset-identity', [CompletionResultType]::ParameterName, 'Trust the StatefulSet rule: a lock written by a pod of this pod''s name and namespace with another pod UID was written by a replaced pod, which may be reclaimed once its holder lock proves the old pod''s processes gone — never on the WRITERCTL_POD_* variables alone (only a StatefulSet''s manifest should set this; a force delete voids it) [env: WRITERCTL_STATEFULSET_IDENTITY=1]')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;completions' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;man' {
            [CompletionResult]::new('--out-dir', '--out-dir', [CompletionResultType]::ParameterName, 'Write every page into DIR (created if missing) instead of showing one, e.g. ~/.local/share/man/man1')
            [CompletionResult]::new('--roff', '--roff', [CompletionResultType]::ParameterName, 'Print the roff source even on a terminal')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;__generate' {
            [CompletionResult]::new('--out', '--out', [CompletionResultType]::ParameterName, 'Repository root to write `man/` and `completions/` under')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;__exec-writer' {
            [CompletionResult]::new('--parent', '--parent', [CompletionResultType]::ParameterName, 'The supervisor''s pid: if it is already gone, do not start the writer at all')
            [CompletionResult]::new('--pid-namespace', '--pid-namespace', [CompletionResultType]::ParameterName, 'Whether to put the writer in a pid namespace of its own (see `run --pid-namespace`)')
            [CompletionResult]::new('--report-fd', '--report-fd', [CompletionResultType]::ParameterName, 'A descriptor (inherited from the supervisor) to report the namespace outcome on')
            [CompletionResult]::new('--status-fd', '--status-fd', [CompletionResultType]::ParameterName, 'With --init: the socket (inherited from the launcher) to send the writer''s status on')
            [CompletionResult]::new('--init', '--init', [CompletionResultType]::ParameterName, 'Run as the namespace''s init (PID 1), started by the launcher')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;verify' {
            [CompletionResult]::new('--runtime-dir', '--runtime-dir', [CompletionResultType]::ParameterName, 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]')
            [CompletionResult]::new('--lock', '--lock', [CompletionResultType]::ParameterName, 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]')
            [CompletionResult]::new('--transcript-key', '--transcript-key', [CompletionResultType]::ParameterName, 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]')
            [CompletionResult]::new('--project-root', '--project-root', [CompletionResultType]::ParameterName, 'Use qwen-code''s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl: DIR sanitized per UTF-16 code unit as qwen does, the raw ID as the file name (so the ID must be one path component)')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Session id (any non-empty string; the lock file name encodes it as qwen-code does). The commands that address exactly one session also read it from WRITERCTL_SESSION (which `run` exports to its writer); status, history and recover read only the flag, since without it they cover every session')
            [CompletionResult]::new('--statefulset-identity', '--statefulset-identity', [CompletionResultType]::ParameterName, 'Trust the StatefulSet rule: a lock written by a pod of this pod''s name and namespace with another pod UID was written by a replaced pod, which may be reclaimed once its holder lock proves the old pod''s processes gone — never on the WRITERCTL_POD_* variables alone (only a StatefulSet''s manifest should set this; a force delete voids it) [env: WRITERCTL_STATEFULSET_IDENTITY=1]')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;recover' {
            [CompletionResult]::new('--runtime-dir', '--runtime-dir', [CompletionResultType]::ParameterName, 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Session id (any non-empty string; the lock file name encodes it as qwen-code does). The commands that address exactly one session also read it from WRITERCTL_SESSION (which `run` exports to its writer); status, history and recover read only the flag, since without it they cover every session')
            [CompletionResult]::new('--lock', '--lock', [CompletionResultType]::ParameterName, 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]')
            [CompletionResult]::new('--transcript-key', '--transcript-key', [CompletionResultType]::ParameterName, 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]')
            [CompletionResult]::new('--project-root', '--project-root', [CompletionResultType]::ParameterName, 'Use qwen-code''s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl: DIR sanitized per UTF-16 code unit as qwen does, the raw ID as the file name (so the ID must be one path component)')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why (recorded in the lock-file history, never in the lock record): one line, at most 512 bytes, no control characters')
            [CompletionResult]::new('--statefulset-identity', '--statefulset-identity', [CompletionResultType]::ParameterName, 'Trust the StatefulSet rule: a lock written by a pod of this pod''s name and namespace with another pod UID was written by a replaced pod, which may be reclaimed once its holder lock proves the old pod''s processes gone — never on the WRITERCTL_POD_* variables alone (only a StatefulSet''s manifest should set this; a force delete voids it) [env: WRITERCTL_STATEFULSET_IDENTITY=1]')
            [CompletionResult]::new('--writers-fenced', '--writers-fenced', [CompletionResultType]::ParameterName, 'State that every writer that can reach this storage (processes, containers, other hosts) is stopped or fenced')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Carry the plan out (with --writers-fenced)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;status' {
            [CompletionResult]::new('--runtime-dir', '--runtime-dir', [CompletionResultType]::ParameterName, 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Session id (any non-empty string; the lock file name encodes it as qwen-code does). The commands that address exactly one session also read it from WRITERCTL_SESSION (which `run` exports to its writer); status, history and recover read only the flag, since without it they cover every session')
            [CompletionResult]::new('--lock', '--lock', [CompletionResultType]::ParameterName, 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]')
            [CompletionResult]::new('--transcript-key', '--transcript-key', [CompletionResultType]::ParameterName, 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]')
            [CompletionResult]::new('--project-root', '--project-root', [CompletionResultType]::ParameterName, 'Use qwen-code''s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl: DIR sanitized per UTF-16 code unit as qwen does, the raw ID as the file name (so the ID must be one path component)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format (for JSON, pass --json)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'With --format prometheus: write to F atomically (temp file, fsync, rename, mode 0644) instead of stdout; F''s directory must exist')
            [CompletionResult]::new('--interval', '--interval', [CompletionResultType]::ParameterName, 'With --watch: read the state again at least this often [default: 2]. On a network filesystem this is the polling interval; under inotify it is how soon a holder that died (which changes no file) is shown as stale')
            [CompletionResult]::new('--statefulset-identity', '--statefulset-identity', [CompletionResultType]::ParameterName, 'Trust the StatefulSet rule: a lock written by a pod of this pod''s name and namespace with another pod UID was written by a replaced pod, which may be reclaimed once its holder lock proves the old pod''s processes gone — never on the WRITERCTL_POD_* variables alone (only a StatefulSet''s manifest should set this; a force delete voids it) [env: WRITERCTL_STATEFULSET_IDENTITY=1]')
            [CompletionResult]::new('--watch', '--watch', [CompletionResultType]::ParameterName, 'Keep running: print the state now, then again each time it changes, until SIGINT or SIGTERM (exit 0). With --json, one JSON document per line (the one `status --json` prints) with an "at" time. Changes are seen through inotify on a local filesystem and by reading again every --interval on a network filesystem (NFS, CephFS, SMB, FUSE: inotify there sees only this host''s changes); stderr says which, once')
            [CompletionResult]::new('--poll', '--poll', [CompletionResultType]::ParameterName, 'With --watch: poll at --interval even on a local filesystem (a directory other hosts change behind the kernel''s back, e.g. a block device two hosts mount)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;session' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('register', 'register', [CompletionResultType]::ParameterValue, 'Register a controller (UPSERT on project, identity, surface, machine) and print its session id and token; the first one registered with no master becomes master')
            [CompletionResult]::new('heartbeat', 'heartbeat', [CompletionResultType]::ParameterValue, 'Renew a session''s heartbeat (targets must be fresh to receive mastership)')
            [CompletionResult]::new('deregister', 'deregister', [CompletionResultType]::ParameterValue, 'Remove a session''s row; a master that leaves empties the master slot')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;session;register' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--request-id', '--request-id', [CompletionResultType]::ParameterName, 'Id of this write, 1 to 128 of [A-Za-z0-9._:-] [default: a new random id]. The coordinator keeps the answer under it for 10 minutes: a retry with the same id (and the same request) returns the first answer and acts once, even when the first reply was lost (exit 75 prints the id to retry with)')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--identity', '--identity', [CompletionResultType]::ParameterName, 'Controller identity (who it is)')
            [CompletionResult]::new('--surface', '--surface', [CompletionResultType]::ParameterName, 'Surface within the machine (cli, ide, daemon, ...)')
            [CompletionResult]::new('--machine', '--machine', [CompletionResultType]::ParameterName, 'Machine id [default: /etc/machine-id, else the hostname]')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Write the session token to this file (0600) instead of printing it. A new path is created; an existing file must hold this controller''s current token (a restart): it proves the row and is replaced by the new token. Anything else there is refused')
            [CompletionResult]::new('--previous-token-file', '--previous-token-file', [CompletionResultType]::ParameterName, 'The token this controller had before a restart [default: env WRITERCTL_SESSION_TOKEN]: it proves the row it re-registers, and re-registering a row that is still live (heartbeat within the freshness threshold) needs it')
            [CompletionResult]::new('--identity-key-file', '--identity-key-file', [CompletionResultType]::ParameterName, 'The identity''s key from `writerctl identity add` [default: env WRITERCTL_IDENTITY_KEY]. A registration proves the identity with it, or with --previous-token-file')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;session;heartbeat' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--request-id', '--request-id', [CompletionResultType]::ParameterName, 'Id of this write, 1 to 128 of [A-Za-z0-9._:-] [default: a new random id]. The coordinator keeps the answer under it for 10 minutes: a retry with the same id (and the same request) returns the first answer and acts once, even when the first reply was lost (exit 75 prints the id to retry with)')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'The session id `register` printed')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Read the session token from this file [default: env WRITERCTL_SESSION_TOKEN]')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;session;deregister' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--request-id', '--request-id', [CompletionResultType]::ParameterName, 'Id of this write, 1 to 128 of [A-Za-z0-9._:-] [default: a new random id]. The coordinator keeps the answer under it for 10 minutes: a retry with the same id (and the same request) returns the first answer and acts once, even when the first reply was lost (exit 75 prints the id to retry with)')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'The session id `register` printed')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Read the session token from this file [default: env WRITERCTL_SESSION_TOKEN]')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;session;help' {
            [CompletionResult]::new('register', 'register', [CompletionResultType]::ParameterValue, 'Register a controller (UPSERT on project, identity, surface, machine) and print its session id and token; the first one registered with no master becomes master')
            [CompletionResult]::new('heartbeat', 'heartbeat', [CompletionResultType]::ParameterValue, 'Renew a session''s heartbeat (targets must be fresh to receive mastership)')
            [CompletionResult]::new('deregister', 'deregister', [CompletionResultType]::ParameterValue, 'Remove a session''s row; a master that leaves empties the master slot')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;session;help;register' {
            break
        }
        'writerctl;session;help;heartbeat' {
            break
        }
        'writerctl;session;help;deregister' {
            break
        }
        'writerctl;session;help;help' {
            break
        }
        'writerctl;master' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show the master, its epoch, and every controller with its freshness')
            [CompletionResult]::new('handoff', 'handoff', [CompletionResultType]::ParameterValue, 'Cooperative transfer: the current master hands mastership to a named identity')
            [CompletionResult]::new('claim', 'claim', [CompletionResultType]::ParameterValue, 'Operator-authorized preempt: promote the named target (never the caller), proving authority with an operator id and password')
            [CompletionResult]::new('history', 'history', [CompletionResultType]::ParameterValue, 'Every change of master of a project, oldest first: when, the epoch after it, from and to (identity and session), the verb, who ran it and the reason given')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;master;status' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--interval', '--interval', [CompletionResultType]::ParameterName, 'With --watch on the embedded store: read it again this often [default: 2]. A server pushes changes and needs no interval')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--watch', '--watch', [CompletionResultType]::ParameterName, 'Keep running and print the status again each time it changes (see above)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;master;handoff' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--request-id', '--request-id', [CompletionResultType]::ParameterName, 'Id of this write, 1 to 128 of [A-Za-z0-9._:-] [default: a new random id]. The coordinator keeps the answer under it for 10 minutes: a retry with the same id (and the same request) returns the first answer and acts once, even when the first reply was lost (exit 75 prints the id to retry with)')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'Identity to make master')
            [CompletionResult]::new('--to-session', '--to-session', [CompletionResultType]::ParameterName, 'The exact controller row to promote (disambiguates several fresh rows)')
            [CompletionResult]::new('--expect-epoch', '--expect-epoch', [CompletionResultType]::ParameterName, 'Epoch the decision was made from; `stale_master` if the master changed since [default: read from `master status` just before]')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why, recorded on the audit row and in `master history` (at most 512 bytes, no control characters)')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'The caller''s session id (it must be master)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Read the caller''s session token from this file [default: env WRITERCTL_SESSION_TOKEN]')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation on a terminal')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation on a terminal')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Make every check, change nothing, print the plan; exit as the real command would')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;master;claim' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--request-id', '--request-id', [CompletionResultType]::ParameterName, 'Id of this write, 1 to 128 of [A-Za-z0-9._:-] [default: a new random id]. The coordinator keeps the answer under it for 10 minutes: a retry with the same id (and the same request) returns the first answer and acts once, even when the first reply was lost (exit 75 prints the id to retry with)')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'Identity to make master')
            [CompletionResult]::new('--to-session', '--to-session', [CompletionResultType]::ParameterName, 'The exact controller row to promote (disambiguates several fresh rows)')
            [CompletionResult]::new('--expect-epoch', '--expect-epoch', [CompletionResultType]::ParameterName, 'Epoch the decision was made from; `stale_master` if the master changed since [default: read from `master status` just before]')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why, recorded on the audit row and in `master history` (at most 512 bytes, no control characters)')
            [CompletionResult]::new('--operator', '--operator', [CompletionResultType]::ParameterName, 'Operator id (see `writerctl operator add`)')
            [CompletionResult]::new('--password-file', '--password-file', [CompletionResultType]::ParameterName, 'Read the password from this file (one trailing newline is dropped)')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation on a terminal')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation on a terminal')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Make every check, change nothing, print the plan; exit as the real command would')
            [CompletionResult]::new('--password-stdin', '--password-stdin', [CompletionResultType]::ParameterName, 'Read the password from standard input (one trailing newline is dropped)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;master;history' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'The newest N changes (a server answers at most 1000)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Read a session token of a controller registered in the project from this file, to see who ran each change and why [default: env WRITERCTL_SESSION_TOKEN, then WRITERCTL_ADMIN_TOKEN]')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;master;help' {
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show the master, its epoch, and every controller with its freshness')
            [CompletionResult]::new('handoff', 'handoff', [CompletionResultType]::ParameterValue, 'Cooperative transfer: the current master hands mastership to a named identity')
            [CompletionResult]::new('claim', 'claim', [CompletionResultType]::ParameterValue, 'Operator-authorized preempt: promote the named target (never the caller), proving authority with an operator id and password')
            [CompletionResult]::new('history', 'history', [CompletionResultType]::ParameterValue, 'Every change of master of a project, oldest first: when, the epoch after it, from and to (identity and session), the verb, who ran it and the reason given')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;master;help;status' {
            break
        }
        'writerctl;master;help;handoff' {
            break
        }
        'writerctl;master;help;claim' {
            break
        }
        'writerctl;master;help;history' {
            break
        }
        'writerctl;master;help;help' {
            break
        }
        'writerctl;operator' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('add', 'add', [CompletionResultType]::ParameterValue, 'Add an operator. The password comes from --password-file, --password-stdin, WRITERCTL_OPERATOR_PASSWORD, or a no-echo prompt (asked twice); never from argv. An existing operator is never overwritten')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;operator;add' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--request-id', '--request-id', [CompletionResultType]::ParameterName, 'Id of this write, 1 to 128 of [A-Za-z0-9._:-] [default: a new random id]. The coordinator keeps the answer under it for 10 minutes: a retry with the same id (and the same request) returns the first answer and acts once, even when the first reply was lost (exit 75 prints the id to retry with)')
            [CompletionResult]::new('--password-file', '--password-file', [CompletionResultType]::ParameterName, 'Read the password from this file (one trailing newline is dropped)')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--password-stdin', '--password-stdin', [CompletionResultType]::ParameterName, 'Read the password from standard input (one trailing newline is dropped)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;operator;help' {
            [CompletionResult]::new('add', 'add', [CompletionResultType]::ParameterValue, 'Add an operator. The password comes from --password-file, --password-stdin, WRITERCTL_OPERATOR_PASSWORD, or a no-echo prompt (asked twice); never from argv. An existing operator is never overwritten')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;operator;help;add' {
            break
        }
        'writerctl;operator;help;help' {
            break
        }
        'writerctl;identity' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('add', 'add', [CompletionResultType]::ParameterValue, 'Enroll an identity in a project and issue its key, shown once (stdout, or a new --key-file F, 0600, never overwritten). The store keeps only a hash. Over HTTP this needs the admin token (WRITERCTL_ADMIN_TOKEN; without it `unauthorized`, 6). A name that reads like an existing identity of the project (TR39 skeleton, case folded: Cyrillic `а`, fullwidth, case) is refused with `name_confusable` (2). Enrolling the project''s first identity (or this one) deregisters the sessions open registration created (audited as `invalidated_open_sessions`). A key file not written after the enrollment applied: `answer_not_delivered` (75), with the request id and the command that recovers the key')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the identities enrolled in a project (names and times; never keys)')
            [CompletionResult]::new('rotate', 'rotate', [CompletionResultType]::ParameterValue, 'Issue a new key for an enrolled identity; the old key is refused at once. Sessions already registered keep their tokens')
            [CompletionResult]::new('remove', 'remove', [CompletionResultType]::ParameterValue, 'Remove an identity: its key is refused and its sessions deregistered at once. A master among them leaves the master slot empty (as a deregistering master does); claims it holds follow their TTL, deputy and steward')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;identity;add' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--request-id', '--request-id', [CompletionResultType]::ParameterName, 'Id of this write, 1 to 128 of [A-Za-z0-9._:-] [default: a new random id]. The coordinator keeps the answer under it for 10 minutes: a retry with the same id (and the same request) returns the first answer and acts once, even when the first reply was lost (exit 75 prints the id to retry with)')
            [CompletionResult]::new('--key-file', '--key-file', [CompletionResultType]::ParameterName, 'Write the key to this new file (0600, never overwritten) instead of printing it')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;identity;list' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;identity;rotate' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--request-id', '--request-id', [CompletionResultType]::ParameterName, 'Id of this write, 1 to 128 of [A-Za-z0-9._:-] [default: a new random id]. The coordinator keeps the answer under it for 10 minutes: a retry with the same id (and the same request) returns the first answer and acts once, even when the first reply was lost (exit 75 prints the id to retry with)')
            [CompletionResult]::new('--key-file', '--key-file', [CompletionResultType]::ParameterName, 'Write the key to this new file (0600, never overwritten) instead of printing it')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;identity;remove' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--request-id', '--request-id', [CompletionResultType]::ParameterName, 'Id of this write, 1 to 128 of [A-Za-z0-9._:-] [default: a new random id]. The coordinator keeps the answer under it for 10 minutes: a retry with the same id (and the same request) returns the first answer and acts once, even when the first reply was lost (exit 75 prints the id to retry with)')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;identity;help' {
            [CompletionResult]::new('add', 'add', [CompletionResultType]::ParameterValue, 'Enroll an identity in a project and issue its key, shown once (stdout, or a new --key-file F, 0600, never overwritten). The store keeps only a hash. Over HTTP this needs the admin token (WRITERCTL_ADMIN_TOKEN; without it `unauthorized`, 6). A name that reads like an existing identity of the project (TR39 skeleton, case folded: Cyrillic `а`, fullwidth, case) is refused with `name_confusable` (2). Enrolling the project''s first identity (or this one) deregisters the sessions open registration created (audited as `invalidated_open_sessions`). A key file not written after the enrollment applied: `answer_not_delivered` (75), with the request id and the command that recovers the key')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the identities enrolled in a project (names and times; never keys)')
            [CompletionResult]::new('rotate', 'rotate', [CompletionResultType]::ParameterValue, 'Issue a new key for an enrolled identity; the old key is refused at once. Sessions already registered keep their tokens')
            [CompletionResult]::new('remove', 'remove', [CompletionResultType]::ParameterValue, 'Remove an identity: its key is refused and its sessions deregistered at once. A master among them leaves the master slot empty (as a deregistering master does); claims it holds follow their TTL, deputy and steward')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;identity;help;add' {
            break
        }
        'writerctl;identity;help;list' {
            break
        }
        'writerctl;identity;help;rotate' {
            break
        }
        'writerctl;identity;help;remove' {
            break
        }
        'writerctl;identity;help;help' {
            break
        }
        'writerctl;inbox' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--identity', '--identity', [CompletionResultType]::ParameterName, 'Whose inbox')
            [CompletionResult]::new('--after', '--after', [CompletionResultType]::ParameterName, 'Only events after this cursor')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'With --follow: stop (exit 0) after this many seconds [default: never]')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'At most this many events per read')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Read the session token of a controller registered as this identity from this file [default: env WRITERCTL_SESSION_TOKEN]')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--follow', '--follow', [CompletionResultType]::ParameterName, 'Keep waiting for new events')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;audit' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Only this project [default: every project, and operator administration]')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'The newest N rows')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('prune', 'prune', [CompletionResultType]::ParameterValue, 'Delete audit rows and claim history steps (but each task''s newest) older than N days from the embedded store, and operator-attempt rows idle for a day; optionally trim inboxes too. A server prunes by itself (`coordinator serve --audit-retention-days`), so an http(s) --coordinator is refused. Run it from cron (daily is plenty); the prune leaves one `retention.prune` audit row')
            [CompletionResult]::new('export', 'export', [CompletionResultType]::ParameterValue, 'Every audit row written since a time, oldest first, as JSON lines or CSV, streamed page by page (the log is never read whole), with a cursor to resume from')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;audit;prune' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--older-than-days', '--older-than-days', [CompletionResultType]::ParameterName, 'Delete audit rows and claim history steps older than this many days (at least 1)')
            [CompletionResult]::new('--inbox-older-than-days', '--inbox-older-than-days', [CompletionResultType]::ParameterName, 'Also delete inbox events older than this many days; a reader whose cursor falls behind gets inbox_cursor_trimmed')
            [CompletionResult]::new('--inbox-max-events', '--inbox-max-events', [CompletionResultType]::ParameterName, 'Also keep at most the newest N events per inbox')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;audit;export' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Only this project [default: every project, and operator administration]')
            [CompletionResult]::new('--since', '--since', [CompletionResultType]::ParameterName, 'Only rows written at or after this time (RFC 3339)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--cursor', '--cursor', [CompletionResultType]::ParameterName, 'Resume after this row (the cursor the previous export ended with)')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;audit;help' {
            [CompletionResult]::new('prune', 'prune', [CompletionResultType]::ParameterValue, 'Delete audit rows and claim history steps (but each task''s newest) older than N days from the embedded store, and operator-attempt rows idle for a day; optionally trim inboxes too. A server prunes by itself (`coordinator serve --audit-retention-days`), so an http(s) --coordinator is refused. Run it from cron (daily is plenty); the prune leaves one `retention.prune` audit row')
            [CompletionResult]::new('export', 'export', [CompletionResultType]::ParameterValue, 'Every audit row written since a time, oldest first, as JSON lines or CSV, streamed page by page (the log is never read whole), with a cursor to resume from')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;audit;help;prune' {
            break
        }
        'writerctl;audit;help;export' {
            break
        }
        'writerctl;audit;help;help' {
            break
        }
        'writerctl;channel' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Create a channel. Its steward gets a doorbell on every release and reads the SLA report; its TTL floor raises shorter claim TTLs. Never overwritten')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show a channel')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;channel;create' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--channel', '--channel', [CompletionResultType]::ParameterName, 'Channel name')
            [CompletionResult]::new('--request-id', '--request-id', [CompletionResultType]::ParameterName, 'Id of this write, 1 to 128 of [A-Za-z0-9._:-] [default: a new random id]. The coordinator keeps the answer under it for 10 minutes: a retry with the same id (and the same request) returns the first answer and acts once, even when the first reply was lost (exit 75 prints the id to retry with)')
            [CompletionResult]::new('--steward', '--steward', [CompletionResultType]::ParameterName, 'Who receives release doorbells and reads the SLA report')
            [CompletionResult]::new('--sla-minutes', '--sla-minutes', [CompletionResultType]::ParameterName, 'Claims older than this without a TTL are reported to the steward [default: 60]')
            [CompletionResult]::new('--ttl-floor-minutes', '--ttl-floor-minutes', [CompletionResultType]::ParameterName, 'The smallest TTL a claim here may declare; shorter ones are raised [default: 5]')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;channel;show' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--channel', '--channel', [CompletionResultType]::ParameterName, 'Channel name')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;channel;help' {
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Create a channel. Its steward gets a doorbell on every release and reads the SLA report; its TTL floor raises shorter claim TTLs. Never overwritten')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show a channel')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;channel;help;create' {
            break
        }
        'writerctl;channel;help;show' {
            break
        }
        'writerctl;channel;help;help' {
            break
        }
        'writerctl;claim' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('take', 'take', [CompletionResultType]::ParameterValue, 'Take a task: open a claim, or take a released one. A live claim is `claim_taken`')
            [CompletionResult]::new('touch', 'touch', [CompletionResultType]::ParameterValue, 'The owner''s write: resets the TTL clock; may change deputy, TTL and next step')
            [CompletionResult]::new('release', 'release', [CompletionResultType]::ParameterValue, 'The owner opens the task again (or, with --done, closes it). Rings the deputy and the steward')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one claim')
            [CompletionResult]::new('history', 'history', [CompletionResultType]::ParameterValue, 'Every step of one claim, oldest first (takes, touches, releases, TTL releases)')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'Every claim in a channel')
            [CompletionResult]::new('sweep', 'sweep', [CompletionResultType]::ParameterValue, 'Release every claim whose TTL ran out (a server sweeps on its own; with the embedded store, run this from cron). --dry-run previews; --as-of previews a moment (a future --as-of needs --dry-run)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;claim;take' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--channel', '--channel', [CompletionResultType]::ParameterName, 'Channel name')
            [CompletionResult]::new('--task', '--task', [CompletionResultType]::ParameterName, 'Task id')
            [CompletionResult]::new('--request-id', '--request-id', [CompletionResultType]::ParameterName, 'Id of this write, 1 to 128 of [A-Za-z0-9._:-] [default: a new random id]. The coordinator keeps the answer under it for 10 minutes: a retry with the same id (and the same request) returns the first answer and acts once, even when the first reply was lost (exit 75 prints the id to retry with)')
            [CompletionResult]::new('--seat', '--seat', [CompletionResultType]::ParameterName, 'The seat taking the task')
            [CompletionResult]::new('--deputy', '--deputy', [CompletionResultType]::ParameterName, 'The successor if the TTL fires')
            [CompletionResult]::new('--ttl-minutes', '--ttl-minutes', [CompletionResultType]::ParameterName, 'Release the claim after N minutes without an owner write (floored by the channel)')
            [CompletionResult]::new('--next-step', '--next-step', [CompletionResultType]::ParameterName, 'What the next hands should do (required with --ttl-minutes or --deputy)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Read the session token of a controller registered as this identity from this file [default: env WRITERCTL_SESSION_TOKEN]')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why, recorded on the audit row (at most 512 bytes, no control characters)')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;claim;touch' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--channel', '--channel', [CompletionResultType]::ParameterName, 'Channel name')
            [CompletionResult]::new('--task', '--task', [CompletionResultType]::ParameterName, 'Task id')
            [CompletionResult]::new('--request-id', '--request-id', [CompletionResultType]::ParameterName, 'Id of this write, 1 to 128 of [A-Za-z0-9._:-] [default: a new random id]. The coordinator keeps the answer under it for 10 minutes: a retry with the same id (and the same request) returns the first answer and acts once, even when the first reply was lost (exit 75 prints the id to retry with)')
            [CompletionResult]::new('--seat', '--seat', [CompletionResultType]::ParameterName, 'The owner')
            [CompletionResult]::new('--expect-version', '--expect-version', [CompletionResultType]::ParameterName, 'The version you read; the write is refused (version_conflict) if the claim moved since [default: not checked]')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Read the session token of a controller registered as this identity from this file [default: env WRITERCTL_SESSION_TOKEN]')
            [CompletionResult]::new('--deputy', '--deputy', [CompletionResultType]::ParameterName, 'A new deputy')
            [CompletionResult]::new('--ttl-minutes', '--ttl-minutes', [CompletionResultType]::ParameterName, 'A new TTL')
            [CompletionResult]::new('--next-step', '--next-step', [CompletionResultType]::ParameterName, 'A new next step')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--no-deputy', '--no-deputy', [CompletionResultType]::ParameterName, 'Remove the deputy')
            [CompletionResult]::new('--no-ttl', '--no-ttl', [CompletionResultType]::ParameterName, 'Remove the TTL')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;claim;release' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--channel', '--channel', [CompletionResultType]::ParameterName, 'Channel name')
            [CompletionResult]::new('--task', '--task', [CompletionResultType]::ParameterName, 'Task id')
            [CompletionResult]::new('--request-id', '--request-id', [CompletionResultType]::ParameterName, 'Id of this write, 1 to 128 of [A-Za-z0-9._:-] [default: a new random id]. The coordinator keeps the answer under it for 10 minutes: a retry with the same id (and the same request) returns the first answer and acts once, even when the first reply was lost (exit 75 prints the id to retry with)')
            [CompletionResult]::new('--seat', '--seat', [CompletionResultType]::ParameterName, 'The owner')
            [CompletionResult]::new('--expect-version', '--expect-version', [CompletionResultType]::ParameterName, 'The version you read; the write is refused (version_conflict) if the claim moved since [default: not checked]')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Read the session token of a controller registered as this identity from this file [default: env WRITERCTL_SESSION_TOKEN]')
            [CompletionResult]::new('--next-step', '--next-step', [CompletionResultType]::ParameterName, 'What whoever takes it next should do')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why, recorded on the audit row (at most 512 bytes, no control characters)')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--done', '--done', [CompletionResultType]::ParameterName, 'The task is finished (status done; never taken again)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;claim;show' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--channel', '--channel', [CompletionResultType]::ParameterName, 'Channel name')
            [CompletionResult]::new('--task', '--task', [CompletionResultType]::ParameterName, 'Task id')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;claim;history' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--channel', '--channel', [CompletionResultType]::ParameterName, 'Channel name')
            [CompletionResult]::new('--task', '--task', [CompletionResultType]::ParameterName, 'Task id')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;claim;list' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--channel', '--channel', [CompletionResultType]::ParameterName, 'Channel name')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;claim;sweep' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--as-of', '--as-of', [CompletionResultType]::ParameterName, 'Judge by this moment instead of now (RFC 3339)')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Report what would be released; write nothing')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;claim;help' {
            [CompletionResult]::new('take', 'take', [CompletionResultType]::ParameterValue, 'Take a task: open a claim, or take a released one. A live claim is `claim_taken`')
            [CompletionResult]::new('touch', 'touch', [CompletionResultType]::ParameterValue, 'The owner''s write: resets the TTL clock; may change deputy, TTL and next step')
            [CompletionResult]::new('release', 'release', [CompletionResultType]::ParameterValue, 'The owner opens the task again (or, with --done, closes it). Rings the deputy and the steward')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one claim')
            [CompletionResult]::new('history', 'history', [CompletionResultType]::ParameterValue, 'Every step of one claim, oldest first (takes, touches, releases, TTL releases)')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'Every claim in a channel')
            [CompletionResult]::new('sweep', 'sweep', [CompletionResultType]::ParameterValue, 'Release every claim whose TTL ran out (a server sweeps on its own; with the embedded store, run this from cron). --dry-run previews; --as-of previews a moment (a future --as-of needs --dry-run)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;claim;help;take' {
            break
        }
        'writerctl;claim;help;touch' {
            break
        }
        'writerctl;claim;help;release' {
            break
        }
        'writerctl;claim;help;show' {
            break
        }
        'writerctl;claim;help;history' {
            break
        }
        'writerctl;claim;help;list' {
            break
        }
        'writerctl;claim;help;sweep' {
            break
        }
        'writerctl;claim;help;help' {
            break
        }
        'writerctl;focus' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('start', 'start', [CompletionResultType]::ParameterValue, 'Start (or restart) a focus lease of N minutes, capped at 240')
            [CompletionResult]::new('end', 'end', [CompletionResultType]::ParameterValue, 'End the seat''s focus lease now; its claims'' TTLs count from now')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show the seat''s focus lease, if it holds one')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;focus;start' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--seat', '--seat', [CompletionResultType]::ParameterName, 'The seat')
            [CompletionResult]::new('--request-id', '--request-id', [CompletionResultType]::ParameterName, 'Id of this write, 1 to 128 of [A-Za-z0-9._:-] [default: a new random id]. The coordinator keeps the answer under it for 10 minutes: a retry with the same id (and the same request) returns the first answer and acts once, even when the first reply was lost (exit 75 prints the id to retry with)')
            [CompletionResult]::new('--minutes', '--minutes', [CompletionResultType]::ParameterName, 'Lease length in minutes (capped at 240; a capped value is reported)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Read the session token of a controller registered as this identity from this file [default: env WRITERCTL_SESSION_TOKEN]')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;focus;end' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--seat', '--seat', [CompletionResultType]::ParameterName, 'The seat')
            [CompletionResult]::new('--request-id', '--request-id', [CompletionResultType]::ParameterName, 'Id of this write, 1 to 128 of [A-Za-z0-9._:-] [default: a new random id]. The coordinator keeps the answer under it for 10 minutes: a retry with the same id (and the same request) returns the first answer and acts once, even when the first reply was lost (exit 75 prints the id to retry with)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Read the session token of a controller registered as this identity from this file [default: env WRITERCTL_SESSION_TOKEN]')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;focus;show' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--seat', '--seat', [CompletionResultType]::ParameterName, 'The seat')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;focus;help' {
            [CompletionResult]::new('start', 'start', [CompletionResultType]::ParameterValue, 'Start (or restart) a focus lease of N minutes, capped at 240')
            [CompletionResult]::new('end', 'end', [CompletionResultType]::ParameterValue, 'End the seat''s focus lease now; its claims'' TTLs count from now')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show the seat''s focus lease, if it holds one')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;focus;help;start' {
            break
        }
        'writerctl;focus;help;end' {
            break
        }
        'writerctl;focus;help;show' {
            break
        }
        'writerctl;focus;help;help' {
            break
        }
        'writerctl;steward' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('report', 'report', [CompletionResultType]::ParameterValue, 'Live claims older than the channel''s SLA that carry no TTL: the ones that would freeze the fleet if their owner went dark')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;steward;report' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--channel', '--channel', [CompletionResultType]::ParameterName, 'Channel name')
            [CompletionResult]::new('--as-of', '--as-of', [CompletionResultType]::ParameterName, 'Judge by this moment instead of now (RFC 3339)')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;steward;help' {
            [CompletionResult]::new('report', 'report', [CompletionResultType]::ParameterValue, 'Live claims older than the channel''s SLA that carry no TTL: the ones that would freeze the fleet if their owner went dark')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;steward;help;report' {
            break
        }
        'writerctl;steward;help;help' {
            break
        }
        'writerctl;coordinator' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Serve the coordinator verbs over HTTP (JSON API /v1, /livez, /readyz, /healthz, /metrics, /openapi.json) until SIGTERM or SIGINT, then finish in-flight requests')
            [CompletionResult]::new('admin-token', 'admin-token', [CompletionResultType]::ParameterValue, 'Make the admin token `serve --admin-token-file` accepts (64 random hex digits)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;coordinator;serve' {
            [CompletionResult]::new('--listen', '--listen', [CompletionResultType]::ParameterName, 'Address to listen on (port 0 picks a free port; the bound address is printed)')
            [CompletionResult]::new('--store', '--store', [CompletionResultType]::ParameterName, 'Embedded store, sqlite:PATH [default: the user''s state directory]')
            [CompletionResult]::new('--redis', '--redis', [CompletionResultType]::ParameterName, 'Redis URL (authoritative plane); needs --postgres: redis://HOST:PORT[/DB], rediss://... (TLS), or Sentinel: redis+sentinel://HOST:PORT[,HOST:PORT...]/MASTER_NAME[/DB] (rediss+sentinel:// for TLS), which follows failovers. Prefer the environment variable when the URL carries a password (argv is visible in `ps`)')
            [CompletionResult]::new('--postgres', '--postgres', [CompletionResultType]::ParameterName, 'Postgres URL (audit plane, cold restore); needs --redis. TLS with the URL''s sslmode=require|verify-ca|verify-full and sslrootcert=F (never a fallback to clear text); several hosts (postgres://u@h1,h2/db?target_session_attrs=read-write) find a promoted standby without a restart')
            [CompletionResult]::new('--redis-ca-file', '--redis-ca-file', [CompletionResultType]::ParameterName, 'PEM file of the CA that signs the Redis servers'' (and Sentinels'') certificates, for rediss:// and rediss+sentinel:// [default: the system roots]')
            [CompletionResult]::new('--redis-min-replicas', '--redis-min-replicas', [CompletionResultType]::ParameterName, 'After each verb''s Redis write, wait (Redis WAIT, up to 1 s) until N replicas hold it; fewer fails the verb with coordinator_unavailable (the write may have applied). 0: do not wait, and a Sentinel failover may lose the last acknowledged writes (replication is asynchronous)')
            [CompletionResult]::new('--audit-queue-max-rows', '--audit-queue-max-rows', [CompletionResultType]::ParameterName, 'Bound on the Redis queue of writes waiting for Postgres, in entries (default 100000; 0: none). When a Postgres outage fills it, failed verbs'' audit rows are dropped and counted, write verbs are refused with coordinator_unavailable (nothing written), and routine heartbeats skip their Postgres write; writerctl_audit_queue_* on /metrics')
            [CompletionResult]::new('--audit-queue-max-bytes', '--audit-queue-max-bytes', [CompletionResultType]::ParameterName, 'Bound on the same queue in bytes of entry data (default 67108864, 64 MiB; 0: none), exceeded by at most one entry')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Redis key prefix and Postgres schema for this deployment')
            [CompletionResult]::new('--admin-token-file', '--admin-token-file', [CompletionResultType]::ParameterName, 'File holding the admin token that authorizes administrative calls over HTTP (`operator add`, `identity add|list|rotate|remove`, `channel create`, `audit`; clients set WRITERCTL_ADMIN_TOKEN); without it those calls are refused. The file must be 0600 (0640 if root owns it) and hold 64 random hex digits, as `writerctl coordinator admin-token new --out F` writes them; anything else is refused (exit 2)')
            [CompletionResult]::new('--tls-cert', '--tls-cert', [CompletionResultType]::ParameterName, 'PEM certificate chain for TLS (with --tls-key)')
            [CompletionResult]::new('--tls-key', '--tls-key', [CompletionResultType]::ParameterName, 'PEM private key for TLS (with --tls-cert)')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution, in seconds')
            [CompletionResult]::new('--sweep-interval-seconds', '--sweep-interval-seconds', [CompletionResultType]::ParameterName, 'How often the background sweeper releases work claims whose TTL ran out (to their deputy, or open), in seconds, from 1 to 86400; 0 turns the sweeper off. Sweeps never overlap; each is logged per project and counted on /metrics (writerctl_sweep_runs_total, writerctl_sweep_released_total)')
            [CompletionResult]::new('--time-scale', '--time-scale', [CompletionResultType]::ParameterName, 'Drills only: the server''s clock runs N times faster (60: one real second reads as one minute), so a TTL exercise of half an hour takes 30 s. Every TTL, freshness threshold and throttle delay shrinks by the same factor; never use it in production. The sweep interval stays in real seconds')
            [CompletionResult]::new('--audit-retention-days', '--audit-retention-days', [CompletionResultType]::ParameterName, 'Keep audit rows this many days (default 90: a quarter, enough for a quarterly access review and a late incident investigation); older rows, claim history steps (each task''s newest is kept) and queue entries Postgres refused are deleted every --retention-interval-seconds. 0 keeps the audit log forever. Days follow the server''s clock (--time-scale shrinks them too)')
            [CompletionResult]::new('--inbox-retention-days', '--inbox-retention-days', [CompletionResultType]::ParameterName, 'Keep inbox events this many days (default 7: a controller off over a long weekend still finds its events); 0: no age limit. A reader whose cursor falls behind what was removed gets inbox_cursor_trimmed, never a silent skip')
            [CompletionResult]::new('--inbox-max-events', '--inbox-max-events', [CompletionResultType]::ParameterName, 'Keep at most the newest N events per inbox (default 1000), enforced on every append (and by the periodic prune); 0: no count limit')
            [CompletionResult]::new('--retention-interval-seconds', '--retention-interval-seconds', [CompletionResultType]::ParameterName, 'How often retention prunes audit rows, inbox events and idle operator-attempt rows, in real seconds (default 300); 0 never prunes. Each prune is logged and counted on /metrics (writerctl_retention_runs_total, writerctl_retention_pruned_total)')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr: text, or json (one object per line, for log shippers). The level comes from WRITERCTL_LOG (default info)')
            [CompletionResult]::new('--max-connections', '--max-connections', [CompletionResultType]::ParameterName, 'Open connections served at once, from 1 to 1000000; one more is refused at once (503 on plain HTTP, closed under TLS) and counted (writerctl_connections_refused_total). Lowered below the open-file limit when that is smaller (64 descriptors are kept for the store and the listener), and to what 40% of --memory-budget holds at 48 KiB a connection (1747 under a 256 MiB cgroup limit); both logged. 1024 is far above what the CLI''s short connections need')
            [CompletionResult]::new('--header-timeout-seconds', '--header-timeout-seconds', [CompletionResultType]::ParameterName, 'Seconds a connection has to send a complete request head, from 1 to 300, counted from when it connects and again after each answer: also the idle keep-alive timeout. 10 s is plenty for any real client and frees a silent or trickling connection''s slot')
            [CompletionResult]::new('--max-connections-per-source', '--max-connections-per-source', [CompletionResultType]::ParameterName, 'Open connections one source address (an IPv4 address, or an IPv6 /64) may hold, from 1 to 1000000. A new connection from a source at its cap evicts that source''s connection that has waited on its client the longest (no complete request head yet, a body still arriving, or idle keep-alive; never one being served), so a flood of idle or trickling connections evicts itself while a probe or a real client from the same address is served; only when none is evictable is it refused. At --max-connections the same order applies to every source''s connections, whatever their number. 128 is far above what one host''s CLI calls need and keeps one source to 1/8 of the default cap')
            [CompletionResult]::new('--body-timeout-seconds', '--body-timeout-seconds', [CompletionResultType]::ParameterName, 'Seconds a request body has to arrive in full after its head, from 1 to 300; a body averaging under 64 bytes/s after its first 2 s is cut off sooner. Either way it is answered 408 `coordinator_unavailable` and its connection closed (counted in writerctl_body_timeouts_total). A Content-Length over 64 KiB is refused 413 at once')
            [CompletionResult]::new('--probe-listen', '--probe-listen', [CompletionResultType]::ParameterName, 'Also listen on ADDR (plain HTTP) for GET /livez, /readyz and /metrics only, with its own cap of 16 connections: point orchestrator probes and scrapers here, so that no flood of the main port can delay them. Other paths answer 404')
            [CompletionResult]::new('--memory-budget', '--memory-budget', [CompletionResultType]::ParameterName, 'Memory the server keeps under: bytes, or with Ki, Mi, Gi or Ti (e.g. 200Mi); at least 64Mi. Without it: 80% of the memory limit of the server''s cgroup (a Kubernetes memory limit, a systemd MemoryMax=), else 512Mi. Half of it sizes the password hashing memory (19 MiB per argon2 permit, allocated at start, at most one permit per core); while the resident set is above 90% of it, requests are refused at once with 503 `coordinator_unavailable` (/livez and /readyz still answer). The budget and how it was decided are logged at start and shown on /metrics')
            [CompletionResult]::new('--open-registration', '--open-registration', [CompletionResultType]::ParameterName, 'A lab only: identities nobody enrolled may register without a key (the first registrant in a new project becomes master). Enrolled identities still prove themselves. Warned at start and shown on /metrics (writerctl_open_registration 1)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;coordinator;admin-token' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('new', 'new', [CompletionResultType]::ParameterValue, 'Make a new admin token: 256 random bits from the kernel as 64 hex digits, shown once (stdout, or a new --out F, 0600, never overwritten)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;coordinator;admin-token;new' {
            [CompletionResult]::new('--out', '--out', [CompletionResultType]::ParameterName, 'Write the token to this new file (0600, never overwritten, fsynced) instead of printing it')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;coordinator;admin-token;help' {
            [CompletionResult]::new('new', 'new', [CompletionResultType]::ParameterValue, 'Make a new admin token: 256 random bits from the kernel as 64 hex digits, shown once (stdout, or a new --out F, 0600, never overwritten)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;coordinator;admin-token;help;new' {
            break
        }
        'writerctl;coordinator;admin-token;help;help' {
            break
        }
        'writerctl;coordinator;help' {
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Serve the coordinator verbs over HTTP (JSON API /v1, /livez, /readyz, /healthz, /metrics, /openapi.json) until SIGTERM or SIGINT, then finish in-flight requests')
            [CompletionResult]::new('admin-token', 'admin-token', [CompletionResultType]::ParameterValue, 'Make the admin token `serve --admin-token-file` accepts (64 random hex digits)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;coordinator;help;serve' {
            break
        }
        'writerctl;coordinator;help;admin-token' {
            [CompletionResult]::new('new', 'new', [CompletionResultType]::ParameterValue, 'Make a new admin token: 256 random bits from the kernel as 64 hex digits, shown once (stdout, or a new --out F, 0600, never overwritten)')
            break
        }
        'writerctl;coordinator;help;admin-token;new' {
            break
        }
        'writerctl;coordinator;help;help' {
            break
        }
        'writerctl;history' {
            [CompletionResult]::new('--runtime-dir', '--runtime-dir', [CompletionResultType]::ParameterName, 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Session id (any non-empty string; the lock file name encodes it as qwen-code does). The commands that address exactly one session also read it from WRITERCTL_SESSION (which `run` exports to its writer); status, history and recover read only the flag, since without it they cover every session')
            [CompletionResult]::new('--lock', '--lock', [CompletionResultType]::ParameterName, 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]')
            [CompletionResult]::new('--transcript-key', '--transcript-key', [CompletionResultType]::ParameterName, 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]')
            [CompletionResult]::new('--project-root', '--project-root', [CompletionResultType]::ParameterName, 'Use qwen-code''s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl: DIR sanitized per UTF-16 code unit as qwen does, the raw ID as the file name (so the ID must be one path component)')
            [CompletionResult]::new('--since', '--since', [CompletionResultType]::ParameterName, 'Only events at or after this time (RFC 3339, e.g. 2026-12-01T09:00:00Z)')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'The newest N events (after --session and --since)')
            [CompletionResult]::new('--statefulset-identity', '--statefulset-identity', [CompletionResultType]::ParameterName, 'Trust the StatefulSet rule: a lock written by a pod of this pod''s name and namespace with another pod UID was written by a replaced pod, which may be reclaimed once its holder lock proves the old pod''s processes gone — never on the WRITERCTL_POD_* variables alone (only a StatefulSet''s manifest should set this; a force delete voids it) [env: WRITERCTL_STATEFULSET_IDENTITY=1]')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;doctor' {
            [CompletionResult]::new('--runtime-dir', '--runtime-dir', [CompletionResultType]::ParameterName, 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]; without one, only the coordinator is checked')
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH of an embedded store; without one, only the runtime directory is checked. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file')
            [CompletionResult]::new('--storage', '--storage', [CompletionResultType]::ParameterName, 'Check only the storage a writer needs, for a Kubernetes initContainer: the runtime directory, its filesystem, who may change R/tmp and the lock directory, and — the one write doctor makes — a probe file created, hard-linked and removed beside the lock directory (in R/tmp), as this user (a volume whose driver ignored fsGroup, a read-only mount, an SMB share without hard links fail here, not later in a crash loop). Lock states are left out: a lock still held by the pod being replaced is a rollout, not a fault')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;pause' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--request-id', '--request-id', [CompletionResultType]::ParameterName, 'Id of this write, 1 to 128 of [A-Za-z0-9._:-] [default: a new random id]. The coordinator keeps the answer under it for 10 minutes: a retry with the same id (and the same request) returns the first answer and acts once, even when the first reply was lost (exit 75 prints the id to retry with)')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why the project is paused (shown in `master status` and audited)')
            [CompletionResult]::new('--until', '--until', [CompletionResultType]::ParameterName, 'End the pause by itself at this moment (RFC 3339, in the future) [default: at `resume`]')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;resume' {
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN')
            [CompletionResult]::new('--freshness-seconds', '--freshness-seconds', [CompletionResultType]::ParameterName, 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored')
            [CompletionResult]::new('--request-id', '--request-id', [CompletionResultType]::ParameterName, 'Id of this write, 1 to 128 of [A-Za-z0-9._:-] [default: a new random id]. The coordinator keeps the answer under it for 10 minutes: a retry with the same id (and the same request) returns the first answer and acts once, even when the first reply was lost (exit 75 prints the id to retry with)')
            [CompletionResult]::new('--project', '--project', [CompletionResultType]::ParameterName, 'Project id')
            [CompletionResult]::new('--allow-insecure-http', '--allow-insecure-http', [CompletionResultType]::ParameterName, 'Allow http:// (clear text: session tokens, the admin token and operator passwords readable on the network) to a host that is not this machine. Without it such an address is refused (exit 2); use https:// instead')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;help' {
            [CompletionResult]::new('acquire', 'acquire', [CompletionResultType]::ParameterValue, 'Take the session''s writer lock (prints the owner token, or writes it to --token-file)')
            [CompletionResult]::new('release', 'release', [CompletionResultType]::ParameterValue, 'Release a lock you own (ordinary close); the token comes from --token-file or WRITERCTL_OWNER_TOKEN')
            [CompletionResult]::new('seal', 'seal', [CompletionResultType]::ParameterValue, 'Seal the lock you own for handoff: certify the drained transcript so a replacement can take over (needs experimental.session_writer_lease)')
            [CompletionResult]::new('takeover', 'takeover', [CompletionResultType]::ParameterValue, 'Take over a sealed session after validating its proof (needs experimental.session_writer_lease)')
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Supervise a writer so that every stop (SIGTERM, preStop) hands its session over')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script (bash, zsh, fish, powershell)')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Show a command''s man page, rendered from the same definitions as --help: no installed page needed')
            [CompletionResult]::new('__generate', '__generate', [CompletionResultType]::ParameterValue, 'Internal: regenerate man/ and completions/')
            [CompletionResult]::new('__exec-writer', '__exec-writer', [CompletionResultType]::ParameterValue, 'Internal: the launcher `run` starts writers through')
            [CompletionResult]::new('verify', 'verify', [CompletionResultType]::ParameterValue, 'Check a sealed lock''s proof against the transcript; change nothing')
            [CompletionResult]::new('recover', 'recover', [CompletionResultType]::ParameterValue, 'Plan, and with --writers-fenced --yes carry out, moving residue of crashed writers aside (never deleting)')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show what is on disk for one session, or for every session under the runtime directory, with the next safe step')
            [CompletionResult]::new('session', 'session', [CompletionResultType]::ParameterValue, 'Coordinator: register, heartbeat and deregister controller sessions')
            [CompletionResult]::new('master', 'master', [CompletionResultType]::ParameterValue, 'Coordinator: show the master, hand it off, or claim it for a named target')
            [CompletionResult]::new('operator', 'operator', [CompletionResultType]::ParameterValue, 'Coordinator: operator credentials for `master claim`')
            [CompletionResult]::new('identity', 'identity', [CompletionResultType]::ParameterValue, 'Coordinator: enroll identities (each gets a key `session register` proves it with)')
            [CompletionResult]::new('inbox', 'inbox', [CompletionResultType]::ParameterValue, 'Coordinator: read an identity''s inbox (MasterPreempted, ClaimReleased), by cursor or --follow')
            [CompletionResult]::new('audit', 'audit', [CompletionResultType]::ParameterValue, 'Coordinator: show the audit log (every verb, who, what, result, epoch)')
            [CompletionResult]::new('channel', 'channel', [CompletionResultType]::ParameterValue, 'Work claims: create a channel (steward, SLA, TTL floor)')
            [CompletionResult]::new('claim', 'claim', [CompletionResultType]::ParameterValue, 'Work claims: take, touch, release, show, list and sweep claims (deputy, TTL, next step)')
            [CompletionResult]::new('focus', 'focus', [CompletionResultType]::ParameterValue, 'Work claims: a focus lease keeps a heads-down seat''s claims from TTL release')
            [CompletionResult]::new('steward', 'steward', [CompletionResultType]::ParameterValue, 'Work claims: the steward''s report of old claims without a TTL')
            [CompletionResult]::new('coordinator', 'coordinator', [CompletionResultType]::ParameterValue, 'Coordinator: run the HTTP server (`coordinator serve`), make its admin token (`coordinator admin-token new`)')
            [CompletionResult]::new('history', 'history', [CompletionResultType]::ParameterValue, 'List the lock-file handoffs of a runtime directory (acquire, reclaim, seal, takeover, release, recover, give back), with epoch, host, pid, pod and reason')
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Diagnose a runtime directory and a coordinator in one read-only pass: every check ok, warn or fail, with a hint')
            [CompletionResult]::new('pause', 'pause', [CompletionResultType]::ParameterValue, 'Pause a project: no TTL release and no deputy handoff until `resume` (or --until)')
            [CompletionResult]::new('resume', 'resume', [CompletionResultType]::ParameterValue, 'End a project''s pause: the next sweep releases what is due')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;help;acquire' {
            break
        }
        'writerctl;help;release' {
            break
        }
        'writerctl;help;seal' {
            break
        }
        'writerctl;help;takeover' {
            break
        }
        'writerctl;help;run' {
            break
        }
        'writerctl;help;completions' {
            break
        }
        'writerctl;help;man' {
            break
        }
        'writerctl;help;__generate' {
            break
        }
        'writerctl;help;__exec-writer' {
            break
        }
        'writerctl;help;verify' {
            break
        }
        'writerctl;help;recover' {
            break
        }
        'writerctl;help;status' {
            break
        }
        'writerctl;help;session' {
            [CompletionResult]::new('register', 'register', [CompletionResultType]::ParameterValue, 'Register a controller (UPSERT on project, identity, surface, machine) and print its session id and token; the first one registered with no master becomes master')
            [CompletionResult]::new('heartbeat', 'heartbeat', [CompletionResultType]::ParameterValue, 'Renew a session''s heartbeat (targets must be fresh to receive mastership)')
            [CompletionResult]::new('deregister', 'deregister', [CompletionResultType]::ParameterValue, 'Remove a session''s row; a master that leaves empties the master slot')
            break
        }
        'writerctl;help;session;register' {
            break
        }
        'writerctl;help;session;heartbeat' {
            break
        }
        'writerctl;help;session;deregister' {
            break
        }
        'writerctl;help;master' {
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show the master, its epoch, and every controller with its freshness')
            [CompletionResult]::new('handoff', 'handoff', [CompletionResultType]::ParameterValue, 'Cooperative transfer: the current master hands mastership to a named identity')
            [CompletionResult]::new('claim', 'claim', [CompletionResultType]::ParameterValue, 'Operator-authorized preempt: promote the named target (never the caller), proving authority with an operator id and password')
            [CompletionResult]::new('history', 'history', [CompletionResultType]::ParameterValue, 'Every change of master of a project, oldest first: when, the epoch after it, from and to (identity and session), the verb, who ran it and the reason given')
            break
        }
        'writerctl;help;master;status' {
            break
        }
        'writerctl;help;master;handoff' {
            break
        }
        'writerctl;help;master;claim' {
            break
        }
        'writerctl;help;master;history' {
            break
        }
        'writerctl;help;operator' {
            [CompletionResult]::new('add', 'add', [CompletionResultType]::ParameterValue, 'Add an operator. The password comes from --password-file, --password-stdin, WRITERCTL_OPERATOR_PASSWORD, or a no-echo prompt (asked twice); never from argv. An existing operator is never overwritten')
            break
        }
        'writerctl;help;operator;add' {
            break
        }
        'writerctl;help;identity' {
            [CompletionResult]::new('add', 'add', [CompletionResultType]::ParameterValue, 'Enroll an identity in a project and issue its key, shown once (stdout, or a new --key-file F, 0600, never overwritten). The store keeps only a hash. Over HTTP this needs the admin token (WRITERCTL_ADMIN_TOKEN; without it `unauthorized`, 6). A name that reads like an existing identity of the project (TR39 skeleton, case folded: Cyrillic `а`, fullwidth, case) is refused with `name_confusable` (2). Enrolling the project''s first identity (or this one) deregisters the sessions open registration created (audited as `invalidated_open_sessions`). A key file not written after the enrollment applied: `answer_not_delivered` (75), with the request id and the command that recovers the key')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the identities enrolled in a project (names and times; never keys)')
            [CompletionResult]::new('rotate', 'rotate', [CompletionResultType]::ParameterValue, 'Issue a new key for an enrolled identity; the old key is refused at once. Sessions already registered keep their tokens')
            [CompletionResult]::new('remove', 'remove', [CompletionResultType]::ParameterValue, 'Remove an identity: its key is refused and its sessions deregistered at once. A master among them leaves the master slot empty (as a deregistering master does); claims it holds follow their TTL, deputy and steward')
            break
        }
        'writerctl;help;identity;add' {
            break
        }
        'writerctl;help;identity;list' {
            break
        }
        'writerctl;help;identity;rotate' {
            break
        }
        'writerctl;help;identity;remove' {
            break
        }
        'writerctl;help;inbox' {
            break
        }
        'writerctl;help;audit' {
            [CompletionResult]::new('prune', 'prune', [CompletionResultType]::ParameterValue, 'Delete audit rows and claim history steps (but each task''s newest) older than N days from the embedded store, and operator-attempt rows idle for a day; optionally trim inboxes too. A server prunes by itself (`coordinator serve --audit-retention-days`), so an http(s) --coordinator is refused. Run it from cron (daily is plenty); the prune leaves one `retention.prune` audit row')
            [CompletionResult]::new('export', 'export', [CompletionResultType]::ParameterValue, 'Every audit row written since a time, oldest first, as JSON lines or CSV, streamed page by page (the log is never read whole), with a cursor to resume from')
            break
        }
        'writerctl;help;audit;prune' {
            break
        }
        'writerctl;help;audit;export' {
            break
        }
        'writerctl;help;channel' {
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Create a channel. Its steward gets a doorbell on every release and reads the SLA report; its TTL floor raises shorter claim TTLs. Never overwritten')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show a channel')
            break
        }
        'writerctl;help;channel;create' {
            break
        }
        'writerctl;help;channel;show' {
            break
        }
        'writerctl;help;claim' {
            [CompletionResult]::new('take', 'take', [CompletionResultType]::ParameterValue, 'Take a task: open a claim, or take a released one. A live claim is `claim_taken`')
            [CompletionResult]::new('touch', 'touch', [CompletionResultType]::ParameterValue, 'The owner''s write: resets the TTL clock; may change deputy, TTL and next step')
            [CompletionResult]::new('release', 'release', [CompletionResultType]::ParameterValue, 'The owner opens the task again (or, with --done, closes it). Rings the deputy and the steward')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one claim')
            [CompletionResult]::new('history', 'history', [CompletionResultType]::ParameterValue, 'Every step of one claim, oldest first (takes, touches, releases, TTL releases)')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'Every claim in a channel')
            [CompletionResult]::new('sweep', 'sweep', [CompletionResultType]::ParameterValue, 'Release every claim whose TTL ran out (a server sweeps on its own; with the embedded store, run this from cron). --dry-run previews; --as-of previews a moment (a future --as-of needs --dry-run)')
            break
        }
        'writerctl;help;claim;take' {
            break
        }
        'writerctl;help;claim;touch' {
            break
        }
        'writerctl;help;claim;release' {
            break
        }
        'writerctl;help;claim;show' {
            break
        }
        'writerctl;help;claim;history' {
            break
        }
        'writerctl;help;claim;list' {
            break
        }
        'writerctl;help;claim;sweep' {
            break
        }
        'writerctl;help;focus' {
            [CompletionResult]::new('start', 'start', [CompletionResultType]::ParameterValue, 'Start (or restart) a focus lease of N minutes, capped at 240')
            [CompletionResult]::new('end', 'end', [CompletionResultType]::ParameterValue, 'End the seat''s focus lease now; its claims'' TTLs count from now')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show the seat''s focus lease, if it holds one')
            break
        }
        'writerctl;help;focus;start' {
            break
        }
        'writerctl;help;focus;end' {
            break
        }
        'writerctl;help;focus;show' {
            break
        }
        'writerctl;help;steward' {
            [CompletionResult]::new('report', 'report', [CompletionResultType]::ParameterValue, 'Live claims older than the channel''s SLA that carry no TTL: the ones that would freeze the fleet if their owner went dark')
            break
        }
        'writerctl;help;steward;report' {
            break
        }
        'writerctl;help;coordinator' {
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Serve the coordinator verbs over HTTP (JSON API /v1, /livez, /readyz, /healthz, /metrics, /openapi.json) until SIGTERM or SIGINT, then finish in-flight requests')
            [CompletionResult]::new('admin-token', 'admin-token', [CompletionResultType]::ParameterValue, 'Make the admin token `serve --admin-token-file` accepts (64 random hex digits)')
            break
        }
        'writerctl;help;coordinator;serve' {
            break
        }
        'writerctl;help;coordinator;admin-token' {
            [CompletionResult]::new('new', 'new', [CompletionResultType]::ParameterValue, 'Make a new admin token: 256 random bits from the kernel as 64 hex digits, shown once (stdout, or a new --out F, 0600, never overwritten)')
            break
        }
        'writerctl;help;coordinator;admin-token;new' {
            break
        }
        'writerctl;help;history' {
            break
        }
        'writerctl;help;doctor' {
            break
        }
        'writerctl;help;pause' {
            break
        }
        'writerctl;help;resume' {
            break
        }
        'writerctl;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
