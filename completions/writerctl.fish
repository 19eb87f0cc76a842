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
complete -c writerctl -n "__fish_writerctl_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c writerctl -n "__fish_writerctl_using_subcommand acquire" -l runtime-dir -d 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand acquire" -l session -d 'Session id (any non-empty string; the lock file name encodes it as qwen-code does)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand acquire" -l lock -d 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand acquire" -l transcript-key -d 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand acquire" -l project-root -d 'Use qwen-code\'s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl' -r -F
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
complete -c writerctl -n "__fish_writerctl_using_subcommand release" -l project-root -d 'Use qwen-code\'s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand release" -l token-file -d 'Read the owner token from this file [default: env WRITERCTL_OWNER_TOKEN]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand release" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand release" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand release" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand release" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -l runtime-dir -d 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -l session -d 'Session id (any non-empty string; the lock file name encodes it as qwen-code does)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -l lock -d 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -l transcript-key -d 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -l project-root -d 'Use qwen-code\'s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -l token-file -d 'Read the owner token from this file [default: env WRITERCTL_OWNER_TOKEN]. Without a token, ask the `writerctl run` supervising this session to drain its writer and seal (the Kubernetes preStop path), and wait for the result' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -l control-socket -d 'The supervisor\'s control socket [default: derived from the runtime directory and session, as `writerctl run` derives it]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -l timeout -d 'Seconds to wait for a supervisor to finish draining and sealing' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand seal" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand takeover" -l runtime-dir -d 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand takeover" -l session -d 'Session id (any non-empty string; the lock file name encodes it as qwen-code does)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand takeover" -l lock -d 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand takeover" -l transcript-key -d 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand takeover" -l project-root -d 'Use qwen-code\'s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl' -r -F
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
complete -c writerctl -n "__fish_writerctl_using_subcommand run" -l project-root -d 'Use qwen-code\'s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl' -r -F
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
complete -c writerctl -n "__fish_writerctl_using_subcommand verify" -l project-root -d 'Use qwen-code\'s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand verify" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand verify" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand verify" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand verify" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand recover" -l runtime-dir -d 'Runtime directory R [env: WRITERCTL_RUNTIME_DIR, then QWEN_RUNTIME_DIR]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand recover" -l session -d 'Session id (any non-empty string; the lock file name encodes it as qwen-code does)' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand recover" -l lock -d 'Lock path override [default: R/tmp/session-writer-locks/<encoded ID>.lock]' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand recover" -l transcript-key -d 'Transcript path relative to R [default: chats/<encoded ID>.jsonl]' -r
complete -c writerctl -n "__fish_writerctl_using_subcommand recover" -l project-root -d 'Use qwen-code\'s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl' -r -F
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
complete -c writerctl -n "__fish_writerctl_using_subcommand status" -l project-root -d 'Use qwen-code\'s transcript key projects/<sanitized DIR>/chats/<ID>.jsonl' -r -F
complete -c writerctl -n "__fish_writerctl_using_subcommand status" -l json -d 'Print one JSON document on stdout (errors as {"error":{"code","message","hint"}})'
complete -c writerctl -n "__fish_writerctl_using_subcommand status" -s v -l verbose -d 'Add causes to error messages (never an owner id)'
complete -c writerctl -n "__fish_writerctl_using_subcommand status" -s h -l help -d 'Print help'
complete -c writerctl -n "__fish_writerctl_using_subcommand status" -s V -l version -d 'Print version'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status help" -f -a "acquire" -d 'Take the session\'s writer lock (prints the owner token, or writes it to --token-file)'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status help" -f -a "release" -d 'Release a lock you own (ordinary close); the token comes from --token-file or WRITERCTL_OWNER_TOKEN'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status help" -f -a "seal" -d 'Seal the lock you own for handoff: certify the drained transcript so a replacement can take over (needs experimental.session_writer_lease)'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status help" -f -a "takeover" -d 'Take over a sealed session after validating its proof (needs experimental.session_writer_lease)'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status help" -f -a "run" -d 'Supervise a writer so that every stop (SIGTERM, preStop) hands its session over'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status help" -f -a "completions" -d 'Print a shell completion script (bash, zsh, fish, powershell)'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status help" -f -a "__generate" -d 'Internal: regenerate man/ and completions/'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status help" -f -a "__exec-writer" -d 'Internal: the launcher `run` starts writers through'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status help" -f -a "verify" -d 'Check a sealed lock\'s proof against the transcript; change nothing'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status help" -f -a "recover" -d 'Plan, and with --writers-fenced --yes carry out, moving residue of crashed writers aside (never deleting)'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status help" -f -a "status" -d 'Show what is on disk for one session, or for every session under the runtime directory, with the next safe step'
complete -c writerctl -n "__fish_writerctl_using_subcommand help; and not __fish_seen_subcommand_from acquire release seal takeover run completions __generate __exec-writer verify recover status help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
