
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
            [CompletionResult]::new('__generate', '__generate', [CompletionResultType]::ParameterValue, 'Internal: regenerate man/ and completions/')
            [CompletionResult]::new('__exec-writer', '__exec-writer', [CompletionResultType]::ParameterValue, 'Internal: the launcher `run` starts writers through')
            [CompletionResult]::new('verify', 'verify', [CompletionResultType]::ParameterValue, 'Check a sealed lock''s proof against the transcript; change nothing')
            [CompletionResult]::new('recover', 'recover', [CompletionResultType]::ParameterValue, 'Plan, and with --writers-fenced --yes carry out, moving residue of crashed writers aside (never deleting)')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show what is on disk for one session, or for every session under the runtime directory, with the next safe step')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'writerctl;acquire' {
            [CompletionResult]::new('--runtime-dir', '--runtime-dir', [CompletionResultType]::ParameterName, 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Session id (any non-empty string; the lock file name encodes it as qwen-code does)')
            [CompletionResult]::new('--lock', '--lock', [CompletionResultType]::ParameterName, 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]')
            [CompletionResult]::new('--transcript-key', '--transcript-key', [CompletionResultType]::ParameterName, 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]')
            [CompletionResult]::new('--project-root', '--project-root', [CompletionResultType]::ParameterName, 'Use qwen-code''s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl')
            [CompletionResult]::new('--pid', '--pid', [CompletionResultType]::ParameterName, 'The process the lock names as holder [default: the process that ran writerctl, skipping forked subshells such as `$(...)`]')
            [CompletionResult]::new('--process-kind', '--process-kind', [CompletionResultType]::ParameterName, 'process_kind recorded in the lock')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Write the owner token to this new file (created 0600; never overwritten) instead of printing it')
            [CompletionResult]::new('--managed', '--managed', [CompletionResultType]::ParameterName, 'Managed mode (qwen''s reclaimPolicy `never` + takeoverPolicy `certified`): never reclaim a stale lock; with the gate on, take over a sealed one')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;release' {
            [CompletionResult]::new('--runtime-dir', '--runtime-dir', [CompletionResultType]::ParameterName, 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Session id (any non-empty string; the lock file name encodes it as qwen-code does)')
            [CompletionResult]::new('--lock', '--lock', [CompletionResultType]::ParameterName, 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]')
            [CompletionResult]::new('--transcript-key', '--transcript-key', [CompletionResultType]::ParameterName, 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]')
            [CompletionResult]::new('--project-root', '--project-root', [CompletionResultType]::ParameterName, 'Use qwen-code''s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Read the owner token from this file [default: env WRITERCTL_OWNER_TOKEN]')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;seal' {
            [CompletionResult]::new('--runtime-dir', '--runtime-dir', [CompletionResultType]::ParameterName, 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Session id (any non-empty string; the lock file name encodes it as qwen-code does)')
            [CompletionResult]::new('--lock', '--lock', [CompletionResultType]::ParameterName, 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]')
            [CompletionResult]::new('--transcript-key', '--transcript-key', [CompletionResultType]::ParameterName, 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]')
            [CompletionResult]::new('--project-root', '--project-root', [CompletionResultType]::ParameterName, 'Use qwen-code''s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Read the owner token from this file [default: env WRITERCTL_OWNER_TOKEN]. Without a token, ask the `writerctl run` supervising this session to drain its writer and seal (the Kubernetes preStop path), and wait for the result')
            [CompletionResult]::new('--control-socket', '--control-socket', [CompletionResultType]::ParameterName, 'The supervisor''s control socket [default: derived from the runtime directory and session, as `writerctl run` derives it]')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Seconds to wait for a supervisor to finish draining and sealing')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;takeover' {
            [CompletionResult]::new('--runtime-dir', '--runtime-dir', [CompletionResultType]::ParameterName, 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Session id (any non-empty string; the lock file name encodes it as qwen-code does)')
            [CompletionResult]::new('--lock', '--lock', [CompletionResultType]::ParameterName, 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]')
            [CompletionResult]::new('--transcript-key', '--transcript-key', [CompletionResultType]::ParameterName, 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]')
            [CompletionResult]::new('--project-root', '--project-root', [CompletionResultType]::ParameterName, 'Use qwen-code''s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl')
            [CompletionResult]::new('--pid', '--pid', [CompletionResultType]::ParameterName, 'The process the lock names as holder [default: the process that ran writerctl, skipping forked subshells such as `$(...)`]')
            [CompletionResult]::new('--process-kind', '--process-kind', [CompletionResultType]::ParameterName, 'process_kind recorded in the lock')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Write the owner token to this new file (created 0600; never overwritten) instead of printing it')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;run' {
            [CompletionResult]::new('--runtime-dir', '--runtime-dir', [CompletionResultType]::ParameterName, 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Session id (any non-empty string; the lock file name encodes it as qwen-code does)')
            [CompletionResult]::new('--lock', '--lock', [CompletionResultType]::ParameterName, 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]')
            [CompletionResult]::new('--transcript-key', '--transcript-key', [CompletionResultType]::ParameterName, 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]')
            [CompletionResult]::new('--project-root', '--project-root', [CompletionResultType]::ParameterName, 'Use qwen-code''s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl')
            [CompletionResult]::new('--grace', '--grace', [CompletionResultType]::ParameterName, 'Seconds the writer gets to exit after the stop signal before it is killed')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Seconds to wait at start for a live owner to seal or release (or a transition to finish) before giving up with session_writer_conflict')
            [CompletionResult]::new('--control-socket', '--control-socket', [CompletionResultType]::ParameterName, 'The local control socket preStop `writerctl seal` talks to [default: derived from the runtime directory and session, under $XDG_RUNTIME_DIR/writerctl or /tmp/writerctl-UID]')
            [CompletionResult]::new('--process-kind', '--process-kind', [CompletionResultType]::ParameterName, 'process_kind recorded in the lock')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;completions' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;__generate' {
            [CompletionResult]::new('--out', '--out', [CompletionResultType]::ParameterName, 'Repository root to write `man/` and `completions/` under')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;__exec-writer' {
            [CompletionResult]::new('--parent', '--parent', [CompletionResultType]::ParameterName, 'The supervisor''s pid: if it is already gone, do not start the writer at all')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;verify' {
            [CompletionResult]::new('--runtime-dir', '--runtime-dir', [CompletionResultType]::ParameterName, 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Session id (any non-empty string; the lock file name encodes it as qwen-code does)')
            [CompletionResult]::new('--lock', '--lock', [CompletionResultType]::ParameterName, 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]')
            [CompletionResult]::new('--transcript-key', '--transcript-key', [CompletionResultType]::ParameterName, 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]')
            [CompletionResult]::new('--project-root', '--project-root', [CompletionResultType]::ParameterName, 'Use qwen-code''s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;recover' {
            [CompletionResult]::new('--runtime-dir', '--runtime-dir', [CompletionResultType]::ParameterName, 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Session id (any non-empty string; the lock file name encodes it as qwen-code does)')
            [CompletionResult]::new('--lock', '--lock', [CompletionResultType]::ParameterName, 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]')
            [CompletionResult]::new('--transcript-key', '--transcript-key', [CompletionResultType]::ParameterName, 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]')
            [CompletionResult]::new('--project-root', '--project-root', [CompletionResultType]::ParameterName, 'Use qwen-code''s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl')
            [CompletionResult]::new('--writers-fenced', '--writers-fenced', [CompletionResultType]::ParameterName, 'State that every writer that can reach this storage (processes, containers, other hosts) is stopped or fenced')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Carry the plan out (with --writers-fenced)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'writerctl;status' {
            [CompletionResult]::new('--runtime-dir', '--runtime-dir', [CompletionResultType]::ParameterName, 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Session id (any non-empty string; the lock file name encodes it as qwen-code does)')
            [CompletionResult]::new('--lock', '--lock', [CompletionResultType]::ParameterName, 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]')
            [CompletionResult]::new('--transcript-key', '--transcript-key', [CompletionResultType]::ParameterName, 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]')
            [CompletionResult]::new('--project-root', '--project-root', [CompletionResultType]::ParameterName, 'Use qwen-code''s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add causes to error messages (never an owner id)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
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
            [CompletionResult]::new('__generate', '__generate', [CompletionResultType]::ParameterValue, 'Internal: regenerate man/ and completions/')
            [CompletionResult]::new('__exec-writer', '__exec-writer', [CompletionResultType]::ParameterValue, 'Internal: the launcher `run` starts writers through')
            [CompletionResult]::new('verify', 'verify', [CompletionResultType]::ParameterValue, 'Check a sealed lock''s proof against the transcript; change nothing')
            [CompletionResult]::new('recover', 'recover', [CompletionResultType]::ParameterValue, 'Plan, and with --writers-fenced --yes carry out, moving residue of crashed writers aside (never deleting)')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show what is on disk for one session, or for every session under the runtime directory, with the next safe step')
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
        'writerctl;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
