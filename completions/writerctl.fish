# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_writerctl_global_optspecs
    string join \n json v/verbose h/help V/version
end

function __fish_writerctl_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_writerctl_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_writerctl_using_subcommand
    set -l cmd (__fish_writerctl_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c writerctl -n "__fish_writerctl_needs_command" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_needs_command" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c writerctl -n "__fish_writerctl_needs_command" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "acquire" -d 'Take the session\'s writer lock (prints the owner token, or writes it to --token-file)'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "release" -d 'Release a lock you own (ordinary close); the token comes from --token-file or WRITERCTL_OWNER_TOKEN'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "seal" -d 'Seal the lock you own for handoff: certify the drained transcript so a replacement can take over (needs experimental.session_writer_lease)'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "takeover" -d 'Take over a sealed session after validating its proof (needs experimental.session_writer_lease)'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "run" -d 'Supervise a writer so that every stop (SIGTERM, preStop) hands its session over'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "completions" -d 'Print a shell completion script (bash, zsh, fish, powershell)'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "__generate" -d 'Internal: regenerate man/ and completions/'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "__exec-writer" -d 'Internal: the launcher `run` starts writers through'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "verify" -d 'Check a sealed lock\'s proof against the transcript; change nothing'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "recover" -d 'Plan, and with --writers-fenced --yes carry out, moving residue of crashed writers aside (never deleting)'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "status" -d 'Show what is on disk for one session, or for every session under the runtime directory, with the next safe step'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "session" -d 'Coordinator: register, heartbeat and deregister controller sessions'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "master" -d 'Coordinator: show the master, hand it off, or claim it for a named target'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "operator" -d 'Coordinator: operator credentials for `master claim`'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "inbox" -d 'Coordinator: read an identity\'s inbox (MasterPreempted, ClaimReleased), by cursor or --follow'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "audit" -d 'Coordinator: show the audit log (every verb, who, what, result, epoch)'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "channel" -d 'Work claims: create a channel (steward, SLA, TTL floor)'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "claim" -d 'Work claims: take, touch, release, show, list and sweep claims (deputy, TTL, next step)'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "focus" -d 'Work claims: a focus lease keeps a heads-down seat\'s claims from TTL release'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "steward" -d 'Work claims: the steward\'s report of old claims without a TTL'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "coordinator" -d 'Coordinator: run the HTTP server (`coordinator serve`)'
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c writerctl -n "__fish_writerctl_using_subcommand acquire" -l runtime-dir -d 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand acquire" -l session -d 'Session id (any non-empty string; the lock file name encodes it as qwen-code does)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand acquire" -l lock -d 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand acquire" -l transcript-key -d 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand acquire" -l project-root -d 'Use qwen-code\'s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl: DIR sanitized per UTF-16 code unit as qwen does, the raw ID as the file name (so the ID must be one path component)' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand acquire" -l pid -d 'The process the lock names as holder [default: the process that ran writerctl, skipping forked subshells such as `$(...)`]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand acquire" -l process-kind -d 'process_kind recorded in the lock' -r -f -a "interactive\t''
acp\t''
daemon\t''
unknown\t''"
complete -c writerctl -n "__fish_writerctl_using_subcommand acquire" -l token-file -d 'Write the owner token to this new file (created 0600; never overwritten) instead of printing it' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand acquire" -l managed -d 'Managed mode (qwen\'s reclaimPolicy `never` + takeoverPolicy `certified`): never reclaim a stale lock; with the gate on, take over a sealed one'
complete -c writerctl -n "__fish_writerctl_using_subcommand acquire" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand acquire" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand acquire" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand acquire" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand release" -l runtime-dir -d 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand release" -l session -d 'Session id (any non-empty string; the lock file name encodes it as qwen-code does)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand release" -l lock -d 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand release" -l transcript-key -d 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand release" -l project-root -d 'Use qwen-code\'s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl: DIR sanitized per UTF-16 code unit as qwen does, the raw ID as the file name (so the ID must be one path component)' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand release" -l token-file -d 'Read the owner token from this file [default: env WRITERCTL_OWNER_TOKEN]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand release" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand release" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand release" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand release" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -l runtime-dir -d 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -l session -d 'Session id (any non-empty string; the lock file name encodes it as qwen-code does)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -l lock -d 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -l transcript-key -d 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -l project-root -d 'Use qwen-code\'s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl: DIR sanitized per UTF-16 code unit as qwen does, the raw ID as the file name (so the ID must be one path component)' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -l token-file -d 'Read the owner token from this file [default: env WRITERCTL_OWNER_TOKEN]. Without a token, ask the `writerctl run` supervising this session to drain its writer and seal (the Kubernetes preStop path), and wait for the result' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -l control-socket -d 'The supervisor\'s control socket [default: derived from the runtime directory and session, as `writerctl run` derives it]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -l timeout -d 'Seconds to wait for a supervisor to finish draining and sealing [default: 3600]. Only without a token (the supervisor path)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand takeover" -l runtime-dir -d 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand takeover" -l session -d 'Session id (any non-empty string; the lock file name encodes it as qwen-code does)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand takeover" -l lock -d 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand takeover" -l transcript-key -d 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand takeover" -l project-root -d 'Use qwen-code\'s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl: DIR sanitized per UTF-16 code unit as qwen does, the raw ID as the file name (so the ID must be one path component)' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand takeover" -l pid -d 'The process the lock names as holder [default: the process that ran writerctl, skipping forked subshells such as `$(...)`]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand takeover" -l process-kind -d 'process_kind recorded in the lock' -r -f -a "interactive\t''
acp\t''
daemon\t''
unknown\t''"
complete -c writerctl -n "__fish_writerctl_using_subcommand takeover" -l token-file -d 'Write the owner token to this new file (created 0600; never overwritten) instead of printing it' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand takeover" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand takeover" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand takeover" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand takeover" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand run" -l runtime-dir -d 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand run" -l session -d 'Session id (any non-empty string; the lock file name encodes it as qwen-code does)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand run" -l lock -d 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand run" -l transcript-key -d 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand run" -l project-root -d 'Use qwen-code\'s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl: DIR sanitized per UTF-16 code unit as qwen does, the raw ID as the file name (so the ID must be one path component)' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand run" -l grace -d 'Seconds the writer gets to exit after the stop signal before it is killed' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand run" -l wait -d 'Seconds to wait at start for a live owner to seal or release (or a transition to finish) before giving up with session_writer_conflict' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand run" -l control-socket -d 'The local control socket preStop `writerctl seal` talks to [default: derived from the runtime directory and session, under $XDG_RUNTIME_DIR/writerctl or /tmp/writerctl-UID]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand run" -l process-kind -d 'process_kind recorded in the lock' -r -f -a "interactive\t''
acp\t''
daemon\t''
unknown\t''"
complete -c writerctl -n "__fish_writerctl_using_subcommand run" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand run" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand run" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand run" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand completions" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand completions" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand completions" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand completions" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand __generate" -l out -d 'Repository root to write `man/` and `completions/` under' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand __generate" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand __generate" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand __generate" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand __generate" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand __exec-writer" -l parent -d 'The supervisor\'s pid: if it is already gone, do not start the writer at all' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand __exec-writer" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand __exec-writer" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand __exec-writer" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand __exec-writer" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand verify" -l runtime-dir -d 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand verify" -l session -d 'Session id (any non-empty string; the lock file name encodes it as qwen-code does)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand verify" -l lock -d 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand verify" -l transcript-key -d 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand verify" -l project-root -d 'Use qwen-code\'s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl: DIR sanitized per UTF-16 code unit as qwen does, the raw ID as the file name (so the ID must be one path component)' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand verify" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand verify" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand verify" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand verify" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand recover" -l runtime-dir -d 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand recover" -l session -d 'Session id (any non-empty string; the lock file name encodes it as qwen-code does)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand recover" -l lock -d 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand recover" -l transcript-key -d 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand recover" -l project-root -d 'Use qwen-code\'s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl: DIR sanitized per UTF-16 code unit as qwen does, the raw ID as the file name (so the ID must be one path component)' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand recover" -l writers-fenced -d 'State that every writer that can reach this storage (processes, containers, other hosts) is stopped or fenced'
complete -c writerctl -n "__fish_writerctl_using_subcommand recover" -l yes -d 'Carry the plan out (with --writers-fenced)'
complete -c writerctl -n "__fish_writerctl_using_subcommand recover" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand recover" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand recover" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand recover" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand status" -l runtime-dir -d 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand status" -l session -d 'Session id (any non-empty string; the lock file name encodes it as qwen-code does)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand status" -l lock -d 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand status" -l transcript-key -d 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand status" -l project-root -d 'Use qwen-code\'s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl: DIR sanitized per UTF-16 code unit as qwen does, the raw ID as the file name (so the ID must be one path component)' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand status" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand status" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand status" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand status" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and not __fish_seen_subcommand_from register heartbeat deregister help" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and not __fish_seen_subcommand_from register heartbeat deregister help" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and not __fish_seen_subcommand_from register heartbeat deregister help" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and not __fish_seen_subcommand_from register heartbeat deregister help" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and not __fish_seen_subcommand_from register heartbeat deregister help" -f -a "register" -d 'Register a controller (UPSERT on project, identity, surface, machine) and print its session id and token; the first one registered with no master becomes master'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and not __fish_seen_subcommand_from register heartbeat deregister help" -f -a "heartbeat" -d 'Renew a session\'s heartbeat (targets must be fresh to receive mastership)'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and not __fish_seen_subcommand_from register heartbeat deregister help" -f -a "deregister" -d 'Remove a session\'s row; a master that leaves empties the master slot'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and not __fish_seen_subcommand_from register heartbeat deregister help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from register" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from register" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from register" -l project -d 'Project id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from register" -l identity -d 'Controller identity (who it is)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from register" -l surface -d 'Surface within the machine (cli, ide, daemon, ...)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from register" -l machine -d 'Machine id [default: /etc/machine-id, else the hostname]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from register" -l token-file -d 'Write the session token to this new file (0600, never overwritten) instead of printing it' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from register" -l previous-token-file -d 'The token this controller had before a restart: re-registering a key whose session is still live (heartbeat within the freshness threshold) needs it' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from register" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from register" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from register" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from register" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from heartbeat" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from heartbeat" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from heartbeat" -l project -d 'Project id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from heartbeat" -l session -d 'The session id `register` printed' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from heartbeat" -l token-file -d 'Read the session token from this file [default: env WRITERCTL_SESSION_TOKEN]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from heartbeat" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from heartbeat" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from heartbeat" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from heartbeat" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from deregister" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from deregister" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from deregister" -l project -d 'Project id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from deregister" -l session -d 'The session id `register` printed' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from deregister" -l token-file -d 'Read the session token from this file [default: env WRITERCTL_SESSION_TOKEN]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from deregister" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from deregister" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from deregister" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from deregister" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "register" -d 'Register a controller (UPSERT on project, identity, surface, machine) and print its session id and token; the first one registered with no master becomes master'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "heartbeat" -d 'Renew a session\'s heartbeat (targets must be fresh to receive mastership)'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "deregister" -d 'Remove a session\'s row; a master that leaves empties the master slot'
complete -c writerctl -n "__fish_writerctl_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and not __fish_seen_subcommand_from status handoff claim help" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and not __fish_seen_subcommand_from status handoff claim help" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and not __fish_seen_subcommand_from status handoff claim help" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and not __fish_seen_subcommand_from status handoff claim help" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and not __fish_seen_subcommand_from status handoff claim help" -f -a "status" -d 'Show the master, its epoch, and every controller with its freshness'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and not __fish_seen_subcommand_from status handoff claim help" -f -a "handoff" -d 'Cooperative transfer: the current master hands mastership to a named identity'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and not __fish_seen_subcommand_from status handoff claim help" -f -a "claim" -d 'Operator-authorized preempt: promote the named target (never the caller), proving authority with an operator id and password'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and not __fish_seen_subcommand_from status handoff claim help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from status" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from status" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from status" -l project -d 'Project id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from status" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from status" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from status" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from status" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from handoff" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from handoff" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from handoff" -l project -d 'Project id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from handoff" -l to -d 'Identity to make master' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from handoff" -l to-session -d 'The exact controller row to promote (disambiguates several fresh rows)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from handoff" -l expect-epoch -d 'Epoch the decision was made from; `stale_master` if the master changed since [default: read from `master status` just before]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from handoff" -l session -d 'The caller\'s session id (it must be master)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from handoff" -l token-file -d 'Read the caller\'s session token from this file [default: env WRITERCTL_SESSION_TOKEN]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from handoff" -s y -l yes -d 'Do not ask for confirmation on a terminal'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from handoff" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from handoff" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from handoff" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from handoff" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from claim" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from claim" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from claim" -l project -d 'Project id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from claim" -l to -d 'Identity to make master' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from claim" -l to-session -d 'The exact controller row to promote (disambiguates several fresh rows)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from claim" -l expect-epoch -d 'Epoch the decision was made from; `stale_master` if the master changed since [default: read from `master status` just before]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from claim" -l operator -d 'Operator id (see `writerctl operator add`)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from claim" -l password-file -d 'Read the password from this file (one trailing newline is dropped)' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from claim" -s y -l yes -d 'Do not ask for confirmation on a terminal'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from claim" -l password-stdin -d 'Read the password from standard input (one trailing newline is dropped)'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from claim" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from claim" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from claim" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from claim" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from help" -f -a "status" -d 'Show the master, its epoch, and every controller with its freshness'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from help" -f -a "handoff" -d 'Cooperative transfer: the current master hands mastership to a named identity'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from help" -f -a "claim" -d 'Operator-authorized preempt: promote the named target (never the caller), proving authority with an operator id and password'
complete -c writerctl -n "__fish_writerctl_using_subcommand master; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c writerctl -n "__fish_writerctl_using_subcommand operator; and not __fish_seen_subcommand_from add help" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand operator; and not __fish_seen_subcommand_from add help" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand operator; and not __fish_seen_subcommand_from add help" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand operator; and not __fish_seen_subcommand_from add help" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand operator; and not __fish_seen_subcommand_from add help" -f -a "add" -d 'Add an operator. The password comes from --password-file, --password-stdin, WRITERCTL_OPERATOR_PASSWORD, or a no-echo prompt (asked twice); never from argv. An existing operator is never overwritten'
complete -c writerctl -n "__fish_writerctl_using_subcommand operator; and not __fish_seen_subcommand_from add help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c writerctl -n "__fish_writerctl_using_subcommand operator; and __fish_seen_subcommand_from add" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand operator; and __fish_seen_subcommand_from add" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand operator; and __fish_seen_subcommand_from add" -l password-file -d 'Read the password from this file (one trailing newline is dropped)' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand operator; and __fish_seen_subcommand_from add" -l password-stdin -d 'Read the password from standard input (one trailing newline is dropped)'
complete -c writerctl -n "__fish_writerctl_using_subcommand operator; and __fish_seen_subcommand_from add" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand operator; and __fish_seen_subcommand_from add" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand operator; and __fish_seen_subcommand_from add" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand operator; and __fish_seen_subcommand_from add" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand operator; and __fish_seen_subcommand_from help" -f -a "add" -d 'Add an operator. The password comes from --password-file, --password-stdin, WRITERCTL_OPERATOR_PASSWORD, or a no-echo prompt (asked twice); never from argv. An existing operator is never overwritten'
complete -c writerctl -n "__fish_writerctl_using_subcommand operator; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c writerctl -n "__fish_writerctl_using_subcommand inbox" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand inbox" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand inbox" -l project -d 'Project id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand inbox" -l identity -d 'Whose inbox' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand inbox" -l after -d 'Only events after this cursor' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand inbox" -l timeout -d 'With --follow: stop (exit 0) after this many seconds [default: never]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand inbox" -l limit -d 'At most this many events per read' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand inbox" -l follow -d 'Keep waiting for new events'
complete -c writerctl -n "__fish_writerctl_using_subcommand inbox" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand inbox" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand inbox" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand inbox" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand audit" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand audit" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand audit" -l project -d 'Only this project [default: every project, and operator administration]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand audit" -l limit -d 'The newest N rows' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand audit" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand audit" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand audit" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand audit" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and not __fish_seen_subcommand_from create show help" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and not __fish_seen_subcommand_from create show help" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and not __fish_seen_subcommand_from create show help" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and not __fish_seen_subcommand_from create show help" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and not __fish_seen_subcommand_from create show help" -f -a "create" -d 'Create a channel. Its steward gets a doorbell on every release and reads the SLA report; its TTL floor raises shorter claim TTLs. Never overwritten'
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and not __fish_seen_subcommand_from create show help" -f -a "show" -d 'Show a channel'
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and not __fish_seen_subcommand_from create show help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from create" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from create" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from create" -l project -d 'Project id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from create" -l channel -d 'Channel name' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from create" -l steward -d 'Who receives release doorbells and reads the SLA report' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from create" -l sla-minutes -d 'Claims older than this without a TTL are reported to the steward [default: 60]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from create" -l ttl-floor-minutes -d 'The smallest TTL a claim here may declare; shorter ones are raised [default: 5]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from create" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from create" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from create" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from create" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from show" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from show" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from show" -l project -d 'Project id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from show" -l channel -d 'Channel name' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from show" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from show" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from show" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from help" -f -a "create" -d 'Create a channel. Its steward gets a doorbell on every release and reads the SLA report; its TTL floor raises shorter claim TTLs. Never overwritten'
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from help" -f -a "show" -d 'Show a channel'
complete -c writerctl -n "__fish_writerctl_using_subcommand channel; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and not __fish_seen_subcommand_from take touch release show history list sweep help" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and not __fish_seen_subcommand_from take touch release show history list sweep help" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and not __fish_seen_subcommand_from take touch release show history list sweep help" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and not __fish_seen_subcommand_from take touch release show history list sweep help" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and not __fish_seen_subcommand_from take touch release show history list sweep help" -f -a "take" -d 'Take a task: open a claim, or take a released one. A live claim is `claim_taken`'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and not __fish_seen_subcommand_from take touch release show history list sweep help" -f -a "touch" -d 'The owner\'s write: resets the TTL clock; may change deputy, TTL and next step'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and not __fish_seen_subcommand_from take touch release show history list sweep help" -f -a "release" -d 'The owner opens the task again (or, with --done, closes it). Rings the deputy and the steward'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and not __fish_seen_subcommand_from take touch release show history list sweep help" -f -a "show" -d 'Show one claim'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and not __fish_seen_subcommand_from take touch release show history list sweep help" -f -a "history" -d 'Every step of one claim, oldest first (takes, touches, releases, TTL releases)'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and not __fish_seen_subcommand_from take touch release show history list sweep help" -f -a "list" -d 'Every claim in a channel'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and not __fish_seen_subcommand_from take touch release show history list sweep help" -f -a "sweep" -d 'Release every claim whose TTL ran out (a server sweeps on its own; with the embedded store, run this from cron). --dry-run previews; --as-of previews a moment (a future --as-of needs --dry-run)'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and not __fish_seen_subcommand_from take touch release show history list sweep help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from take" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from take" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from take" -l project -d 'Project id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from take" -l channel -d 'Channel name' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from take" -l task -d 'Task id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from take" -l seat -d 'The seat taking the task' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from take" -l deputy -d 'The successor if the TTL fires' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from take" -l ttl-minutes -d 'Release the claim after N minutes without an owner write (floored by the channel)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from take" -l next-step -d 'What the next hands should do (required with --ttl-minutes or --deputy)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from take" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from take" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from take" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from take" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from touch" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from touch" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from touch" -l project -d 'Project id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from touch" -l channel -d 'Channel name' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from touch" -l task -d 'Task id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from touch" -l seat -d 'The owner' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from touch" -l expect-version -d 'The version you read; the write is refused (version_conflict) if the claim moved since [default: not checked]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from touch" -l deputy -d 'A new deputy' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from touch" -l ttl-minutes -d 'A new TTL' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from touch" -l next-step -d 'A new next step' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from touch" -l no-deputy -d 'Remove the deputy'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from touch" -l no-ttl -d 'Remove the TTL'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from touch" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from touch" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from touch" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from touch" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from release" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from release" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from release" -l project -d 'Project id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from release" -l channel -d 'Channel name' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from release" -l task -d 'Task id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from release" -l seat -d 'The owner' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from release" -l expect-version -d 'The version you read; the write is refused (version_conflict) if the claim moved since [default: not checked]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from release" -l next-step -d 'What whoever takes it next should do' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from release" -l done -d 'The task is finished (status done; never taken again)'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from release" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from release" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from release" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from release" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from show" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from show" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from show" -l project -d 'Project id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from show" -l channel -d 'Channel name' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from show" -l task -d 'Task id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from show" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from show" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from show" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from history" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from history" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from history" -l project -d 'Project id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from history" -l channel -d 'Channel name' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from history" -l task -d 'Task id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from history" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from history" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from history" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from history" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from list" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from list" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from list" -l project -d 'Project id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from list" -l channel -d 'Channel name' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from list" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from list" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from list" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from sweep" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from sweep" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from sweep" -l project -d 'Project id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from sweep" -l as-of -d 'Judge by this moment instead of now (RFC 3339)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from sweep" -l dry-run -d 'Report what would be released; write nothing'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from sweep" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from sweep" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from sweep" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from sweep" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from help" -f -a "take" -d 'Take a task: open a claim, or take a released one. A live claim is `claim_taken`'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from help" -f -a "touch" -d 'The owner\'s write: resets the TTL clock; may change deputy, TTL and next step'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from help" -f -a "release" -d 'The owner opens the task again (or, with --done, closes it). Rings the deputy and the steward'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from help" -f -a "show" -d 'Show one claim'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from help" -f -a "history" -d 'Every step of one claim, oldest first (takes, touches, releases, TTL releases)'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from help" -f -a "list" -d 'Every claim in a channel'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from help" -f -a "sweep" -d 'Release every claim whose TTL ran out (a server sweeps on its own; with the embedded store, run this from cron). --dry-run previews; --as-of previews a moment (a future --as-of needs --dry-run)'
complete -c writerctl -n "__fish_writerctl_using_subcommand claim; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and not __fish_seen_subcommand_from start end show help" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and not __fish_seen_subcommand_from start end show help" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and not __fish_seen_subcommand_from start end show help" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and not __fish_seen_subcommand_from start end show help" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and not __fish_seen_subcommand_from start end show help" -f -a "start" -d 'Start (or restart) a focus lease of N minutes, capped at 240'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and not __fish_seen_subcommand_from start end show help" -f -a "end" -d 'End the seat\'s focus lease now; its claims\' TTLs count from now'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and not __fish_seen_subcommand_from start end show help" -f -a "show" -d 'Show the seat\'s focus lease, if it holds one'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and not __fish_seen_subcommand_from start end show help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from start" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from start" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from start" -l project -d 'Project id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from start" -l seat -d 'The seat' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from start" -l minutes -d 'Lease length in minutes (capped at 240; a capped value is reported)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from start" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from start" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from start" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from start" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from end" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from end" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from end" -l project -d 'Project id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from end" -l seat -d 'The seat' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from end" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from end" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from end" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from end" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from show" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from show" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from show" -l project -d 'Project id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from show" -l seat -d 'The seat' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from show" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from show" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from show" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from help" -f -a "start" -d 'Start (or restart) a focus lease of N minutes, capped at 240'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from help" -f -a "end" -d 'End the seat\'s focus lease now; its claims\' TTLs count from now'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from help" -f -a "show" -d 'Show the seat\'s focus lease, if it holds one'
complete -c writerctl -n "__fish_writerctl_using_subcommand focus; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c writerctl -n "__fish_writerctl_using_subcommand steward; and not __fish_seen_subcommand_from report help" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand steward; and not __fish_seen_subcommand_from report help" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand steward; and not __fish_seen_subcommand_from report help" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand steward; and not __fish_seen_subcommand_from report help" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand steward; and not __fish_seen_subcommand_from report help" -f -a "report" -d 'Live claims older than the channel\'s SLA that carry no TTL: the ones that would freeze the fleet if their owner went dark'
complete -c writerctl -n "__fish_writerctl_using_subcommand steward; and not __fish_seen_subcommand_from report help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c writerctl -n "__fish_writerctl_using_subcommand steward; and __fish_seen_subcommand_from report" -l coordinator -d 'http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the embedded store used in-process [default: sqlite file $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...]. For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand steward; and __fish_seen_subcommand_from report" -l freshness-seconds -d 'Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30]. Only for the embedded store: a server judges freshness by its own `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag is refused (exit 2) rather than silently ignored' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand steward; and __fish_seen_subcommand_from report" -l project -d 'Project id' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand steward; and __fish_seen_subcommand_from report" -l channel -d 'Channel name' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand steward; and __fish_seen_subcommand_from report" -l as-of -d 'Judge by this moment instead of now (RFC 3339)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand steward; and __fish_seen_subcommand_from report" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand steward; and __fish_seen_subcommand_from report" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand steward; and __fish_seen_subcommand_from report" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand steward; and __fish_seen_subcommand_from report" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand steward; and __fish_seen_subcommand_from help" -f -a "report" -d 'Live claims older than the channel\'s SLA that carry no TTL: the ones that would freeze the fleet if their owner went dark'
complete -c writerctl -n "__fish_writerctl_using_subcommand steward; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and not __fish_seen_subcommand_from serve help" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and not __fish_seen_subcommand_from serve help" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and not __fish_seen_subcommand_from serve help" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and not __fish_seen_subcommand_from serve help" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and not __fish_seen_subcommand_from serve help" -f -a "serve" -d 'Serve the coordinator verbs over HTTP (JSON API /v1, /healthz, /metrics, /openapi.json) until SIGTERM or SIGINT, then finish in-flight requests'
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and not __fish_seen_subcommand_from serve help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and __fish_seen_subcommand_from serve" -l listen -d 'Address to listen on (port 0 picks a free port; the bound address is printed)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and __fish_seen_subcommand_from serve" -l store -d 'Embedded store, sqlite:PATH [default: the user\'s state directory]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and __fish_seen_subcommand_from serve" -l redis -d 'Redis URL (authoritative plane); needs --postgres. Prefer the environment variable when the URL carries a password (argv is visible in `ps`)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and __fish_seen_subcommand_from serve" -l postgres -d 'Postgres URL (audit plane, cold restore); needs --redis' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and __fish_seen_subcommand_from serve" -l namespace -d 'Redis key prefix and Postgres schema for this deployment' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and __fish_seen_subcommand_from serve" -l admin-token-file -d 'File holding the admin token that authorizes `operator add` and `audit` over HTTP (clients set WRITERCTL_ADMIN_TOKEN); without it those calls are refused' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and __fish_seen_subcommand_from serve" -l tls-cert -d 'PEM certificate chain for TLS (with --tls-key)' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and __fish_seen_subcommand_from serve" -l tls-key -d 'PEM private key for TLS (with --tls-cert)' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and __fish_seen_subcommand_from serve" -l freshness-seconds -d 'Heartbeat freshness for target resolution, in seconds' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and __fish_seen_subcommand_from serve" -l sweep-interval-seconds -d 'How often the background sweeper releases work claims whose TTL ran out (to their deputy, or open), in seconds, from 1 to 86400; 0 turns the sweeper off. Sweeps never overlap; each is logged per project and counted on /metrics (writerctl_sweep_runs_total, writerctl_sweep_released_total)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and __fish_seen_subcommand_from serve" -l time-scale -d 'Drills only: the server\'s clock runs N times faster (60: one real second reads as one minute), so a TTL exercise of half an hour takes 30 s. Every TTL, freshness threshold and throttle delay shrinks by the same factor; never use it in production. The sweep interval stays in real seconds' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and __fish_seen_subcommand_from serve" -l log-format -d 'Log format on stderr: text, or json (one object per line, for log shippers). The level comes from WRITERCTL_LOG (default info)' -r -f -a "text\t''
json\t''"
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and __fish_seen_subcommand_from serve" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and __fish_seen_subcommand_from serve" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and __fish_seen_subcommand_from serve" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and __fish_seen_subcommand_from serve" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and __fish_seen_subcommand_from help" -f -a "serve" -d 'Serve the coordinator verbs over HTTP (JSON API /v1, /healthz, /metrics, /openapi.json) until SIGTERM or SIGINT, then finish in-flight requests'
complete -c writerctl -n "__fish_writerctl_using_subcommand coordinator; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "acquire" -d 'Take the session\'s writer lock (prints the owner token, or writes it to --token-file)'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "release" -d 'Release a lock you own (ordinary close); the token comes from --token-file or WRITERCTL_OWNER_TOKEN'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "seal" -d 'Seal the lock you own for handoff: certify the drained transcript so a replacement can take over (needs experimental.session_writer_lease)'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "takeover" -d 'Take over a sealed session after validating its proof (needs experimental.session_writer_lease)'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "run" -d 'Supervise a writer so that every stop (SIGTERM, preStop) hands its session over'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "completions" -d 'Print a shell completion script (bash, zsh, fish, powershell)'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "__generate" -d 'Internal: regenerate man/ and completions/'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "__exec-writer" -d 'Internal: the launcher `run` starts writers through'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "verify" -d 'Check a sealed lock\'s proof against the transcript; change nothing'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "recover" -d 'Plan, and with --writers-fenced --yes carry out, moving residue of crashed writers aside (never deleting)'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "status" -d 'Show what is on disk for one session, or for every session under the runtime directory, with the next safe step'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "session" -d 'Coordinator: register, heartbeat and deregister controller sessions'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "master" -d 'Coordinator: show the master, hand it off, or claim it for a named target'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "operator" -d 'Coordinator: operator credentials for `master claim`'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "inbox" -d 'Coordinator: read an identity\'s inbox (MasterPreempted, ClaimReleased), by cursor or --follow'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "audit" -d 'Coordinator: show the audit log (every verb, who, what, result, epoch)'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "channel" -d 'Work claims: create a channel (steward, SLA, TTL floor)'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "claim" -d 'Work claims: take, touch, release, show, list and sweep claims (deputy, TTL, next step)'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "focus" -d 'Work claims: a focus lease keeps a heads-down seat\'s claims from TTL release'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "steward" -d 'Work claims: the steward\'s report of old claims without a TTL'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "coordinator" -d 'Coordinator: run the HTTP server (`coordinator serve`)'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status session master operator inbox audit channel claim focus steward coordinator help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and __fish_seen_subcommand_from session" -f -a "register" -d 'Register a controller (UPSERT on project, identity, surface, machine) and print its session id and token; the first one registered with no master becomes master'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and __fish_seen_subcommand_from session" -f -a "heartbeat" -d 'Renew a session\'s heartbeat (targets must be fresh to receive mastership)'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and __fish_seen_subcommand_from session" -f -a "deregister" -d 'Remove a session\'s row; a master that leaves empties the master slot'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and __fish_seen_subcommand_from master" -f -a "status" -d 'Show the master, its epoch, and every controller with its freshness'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and __fish_seen_subcommand_from master" -f -a "handoff" -d 'Cooperative transfer: the current master hands mastership to a named identity'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and __fish_seen_subcommand_from master" -f -a "claim" -d 'Operator-authorized preempt: promote the named target (never the caller), proving authority with an operator id and password'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and __fish_seen_subcommand_from operator" -f -a "add" -d 'Add an operator. The password comes from --password-file, --password-stdin, WRITERCTL_OPERATOR_PASSWORD, or a no-echo prompt (asked twice); never from argv. An existing operator is never overwritten'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and __fish_seen_subcommand_from channel" -f -a "create" -d 'Create a channel. Its steward gets a doorbell on every release and reads the SLA report; its TTL floor raises shorter claim TTLs. Never overwritten'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and __fish_seen_subcommand_from channel" -f -a "show" -d 'Show a channel'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and __fish_seen_subcommand_from claim" -f -a "take" -d 'Take a task: open a claim, or take a released one. A live claim is `claim_taken`'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and __fish_seen_subcommand_from claim" -f -a "touch" -d 'The owner\'s write: resets the TTL clock; may change deputy, TTL and next step'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and __fish_seen_subcommand_from claim" -f -a "release" -d 'The owner opens the task again (or, with --done, closes it). Rings the deputy and the steward'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and __fish_seen_subcommand_from claim" -f -a "show" -d 'Show one claim'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and __fish_seen_subcommand_from claim" -f -a "history" -d 'Every step of one claim, oldest first (takes, touches, releases, TTL releases)'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and __fish_seen_subcommand_from claim" -f -a "list" -d 'Every claim in a channel'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and __fish_seen_subcommand_from claim" -f -a "sweep" -d 'Release every claim whose TTL ran out (a server sweeps on its own; with the embedded store, run this from cron). --dry-run previews; --as-of previews a moment (a future --as-of needs --dry-run)'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and __fish_seen_subcommand_from focus" -f -a "start" -d 'Start (or restart) a focus lease of N minutes, capped at 240'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and __fish_seen_subcommand_from focus" -f -a "end" -d 'End the seat\'s focus lease now; its claims\' TTLs count from now'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and __fish_seen_subcommand_from focus" -f -a "show" -d 'Show the seat\'s focus lease, if it holds one'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and __fish_seen_subcommand_from steward" -f -a "report" -d 'Live claims older than the channel\'s SLA that carry no TTL: the ones that would freeze the fleet if their owner went dark'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and __fish_seen_subcommand_from coordinator" -f -a "serve" -d 'Serve the coordinator verbs over HTTP (JSON API /v1, /healthz, /metrics, /openapi.json) until SIGTERM or SIGINT, then finish in-flight requests'
