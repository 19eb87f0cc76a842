_writerctl() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="writerctl"
                ;;
            writerctl,__exec-writer)
                cmd="writerctl__subcmd____exec__subcmd__writer"
                ;;
            writerctl,__generate)
                cmd="writerctl__subcmd____generate"
                ;;
            writerctl,acquire)
                cmd="writerctl__subcmd__acquire"
                ;;
            writerctl,audit)
                cmd="writerctl__subcmd__audit"
                ;;
            writerctl,channel)
                cmd="writerctl__subcmd__channel"
                ;;
            writerctl,claim)
                cmd="writerctl__subcmd__claim"
                ;;
            writerctl,completions)
                cmd="writerctl__subcmd__completions"
                ;;
            writerctl,coordinator)
                cmd="writerctl__subcmd__coordinator"
                ;;
            writerctl,doctor)
                cmd="writerctl__subcmd__doctor"
                ;;
            writerctl,focus)
                cmd="writerctl__subcmd__focus"
                ;;
            writerctl,help)
                cmd="writerctl__subcmd__help"
                ;;
            writerctl,history)
                cmd="writerctl__subcmd__history"
                ;;
            writerctl,identity)
                cmd="writerctl__subcmd__identity"
                ;;
            writerctl,inbox)
                cmd="writerctl__subcmd__inbox"
                ;;
            writerctl,man)
                cmd="writerctl__subcmd__man"
                ;;
            writerctl,master)
                cmd="writerctl__subcmd__master"
                ;;
            writerctl,operator)
                cmd="writerctl__subcmd__operator"
                ;;
            writerctl,pause)
                cmd="writerctl__subcmd__pause"
                ;;
            writerctl,recover)
                cmd="writerctl__subcmd__recover"
                ;;
            writerctl,release)
                cmd="writerctl__subcmd__release"
                ;;
            writerctl,resume)
                cmd="writerctl__subcmd__resume"
                ;;
            writerctl,run)
                cmd="writerctl__subcmd__run"
                ;;
            writerctl,seal)
                cmd="writerctl__subcmd__seal"
                ;;
            writerctl,session)
                cmd="writerctl__subcmd__session"
                ;;
            writerctl,status)
                cmd="writerctl__subcmd__status"
                ;;
            writerctl,steward)
                cmd="writerctl__subcmd__steward"
                ;;
            writerctl,takeover)
                cmd="writerctl__subcmd__takeover"
                ;;
            writerctl,verify)
                cmd="writerctl__subcmd__verify"
                ;;
            writerctl__subcmd__audit,export)
                cmd="writerctl__subcmd__audit__subcmd__export"
                ;;
            writerctl__subcmd__audit,help)
                cmd="writerctl__subcmd__audit__subcmd__help"
                ;;
            writerctl__subcmd__audit,prune)
                cmd="writerctl__subcmd__audit__subcmd__prune"
                ;;
            writerctl__subcmd__audit__subcmd__help,export)
                cmd="writerctl__subcmd__audit__subcmd__help__subcmd__export"
                ;;
            writerctl__subcmd__audit__subcmd__help,help)
                cmd="writerctl__subcmd__audit__subcmd__help__subcmd__help"
                ;;
            writerctl__subcmd__audit__subcmd__help,prune)
                cmd="writerctl__subcmd__audit__subcmd__help__subcmd__prune"
                ;;
            writerctl__subcmd__channel,create)
                cmd="writerctl__subcmd__channel__subcmd__create"
                ;;
            writerctl__subcmd__channel,help)
                cmd="writerctl__subcmd__channel__subcmd__help"
                ;;
            writerctl__subcmd__channel,show)
                cmd="writerctl__subcmd__channel__subcmd__show"
                ;;
            writerctl__subcmd__channel__subcmd__help,create)
                cmd="writerctl__subcmd__channel__subcmd__help__subcmd__create"
                ;;
            writerctl__subcmd__channel__subcmd__help,help)
                cmd="writerctl__subcmd__channel__subcmd__help__subcmd__help"
                ;;
            writerctl__subcmd__channel__subcmd__help,show)
                cmd="writerctl__subcmd__channel__subcmd__help__subcmd__show"
                ;;
            writerctl__subcmd__claim,help)
                cmd="writerctl__subcmd__claim__subcmd__help"
                ;;
            writerctl__subcmd__claim,history)
                cmd="writerctl__subcmd__claim__subcmd__history"
                ;;
            writerctl__subcmd__claim,list)
                cmd="writerctl__subcmd__claim__subcmd__list"
                ;;
            writerctl__subcmd__claim,release)
                cmd="writerctl__subcmd__claim__subcmd__release"
                ;;
            writerctl__subcmd__claim,show)
                cmd="writerctl__subcmd__claim__subcmd__show"
                ;;
            writerctl__subcmd__claim,sweep)
                cmd="writerctl__subcmd__claim__subcmd__sweep"
                ;;
            writerctl__subcmd__claim,take)
                cmd="writerctl__subcmd__claim__subcmd__take"
                ;;
            writerctl__subcmd__claim,touch)
                cmd="writerctl__subcmd__claim__subcmd__touch"
                ;;
            writerctl__subcmd__claim__subcmd__help,help)
                cmd="writerctl__subcmd__claim__subcmd__help__subcmd__help"
                ;;
            writerctl__subcmd__claim__subcmd__help,history)
                cmd="writerctl__subcmd__claim__subcmd__help__subcmd__history"
                ;;
            writerctl__subcmd__claim__subcmd__help,list)
                cmd="writerctl__subcmd__claim__subcmd__help__subcmd__list"
                ;;
            writerctl__subcmd__claim__subcmd__help,release)
                cmd="writerctl__subcmd__claim__subcmd__help__subcmd__release"
                ;;
            writerctl__subcmd__claim__subcmd__help,show)
                cmd="writerctl__subcmd__claim__subcmd__help__subcmd__show"
                ;;
            writerctl__subcmd__claim__subcmd__help,sweep)
                cmd="writerctl__subcmd__claim__subcmd__help__subcmd__sweep"
                ;;
            writerctl__subcmd__claim__subcmd__help,take)
                cmd="writerctl__subcmd__claim__subcmd__help__subcmd__take"
                ;;
            writerctl__subcmd__claim__subcmd__help,touch)
                cmd="writerctl__subcmd__claim__subcmd__help__subcmd__touch"
                ;;
            writerctl__subcmd__coordinator,admin-token)
                cmd="writerctl__subcmd__coordinator__subcmd__admin__subcmd__token"
                ;;
            writerctl__subcmd__coordinator,help)
                cmd="writerctl__subcmd__coordinator__subcmd__help"
                ;;
            writerctl__subcmd__coordinator,serve)
                cmd="writerctl__subcmd__coordinator__subcmd__serve"
                ;;
            writerctl__subcmd__coordinator__subcmd__admin__subcmd__token,help)
                cmd="writerctl__subcmd__coordinator__subcmd__admin__subcmd__token__subcmd__help"
                ;;
            writerctl__subcmd__coordinator__subcmd__admin__subcmd__token,new)
                cmd="writerctl__subcmd__coordinator__subcmd__admin__subcmd__token__subcmd__new"
                ;;
            writerctl__subcmd__coordinator__subcmd__admin__subcmd__token__subcmd__help,help)
                cmd="writerctl__subcmd__coordinator__subcmd__admin__subcmd__token__subcmd__help__subcmd__help"
                ;;
            writerctl__subcmd__coordinator__subcmd__admin__subcmd__token__subcmd__help,new)
                cmd="writerctl__subcmd__coordinator__subcmd__admin__subcmd__token__subcmd__help__subcmd__new"
                ;;
            writerctl__subcmd__coordinator__subcmd__help,admin-token)
                cmd="writerctl__subcmd__coordinator__subcmd__help__subcmd__admin__subcmd__token"
                ;;
            writerctl__subcmd__coordinator__subcmd__help,help)
                cmd="writerctl__subcmd__coordinator__subcmd__help__subcmd__help"
                ;;
            writerctl__subcmd__coordinator__subcmd__help,serve)
                cmd="writerctl__subcmd__coordinator__subcmd__help__subcmd__serve"
                ;;
            writerctl__subcmd__coordinator__subcmd__help__subcmd__admin__subcmd__token,new)
                cmd="writerctl__subcmd__coordinator__subcmd__help__subcmd__admin__subcmd__token__subcmd__new"
                ;;
            writerctl__subcmd__focus,end)
                cmd="writerctl__subcmd__focus__subcmd__end"
                ;;
            writerctl__subcmd__focus,help)
                cmd="writerctl__subcmd__focus__subcmd__help"
                ;;
            writerctl__subcmd__focus,show)
                cmd="writerctl__subcmd__focus__subcmd__show"
                ;;
            writerctl__subcmd__focus,start)
                cmd="writerctl__subcmd__focus__subcmd__start"
                ;;
            writerctl__subcmd__focus__subcmd__help,end)
                cmd="writerctl__subcmd__focus__subcmd__help__subcmd__end"
                ;;
            writerctl__subcmd__focus__subcmd__help,help)
                cmd="writerctl__subcmd__focus__subcmd__help__subcmd__help"
                ;;
            writerctl__subcmd__focus__subcmd__help,show)
                cmd="writerctl__subcmd__focus__subcmd__help__subcmd__show"
                ;;
            writerctl__subcmd__focus__subcmd__help,start)
                cmd="writerctl__subcmd__focus__subcmd__help__subcmd__start"
                ;;
            writerctl__subcmd__help,__exec-writer)
                cmd="writerctl__subcmd__help__subcmd____exec__subcmd__writer"
                ;;
            writerctl__subcmd__help,__generate)
                cmd="writerctl__subcmd__help__subcmd____generate"
                ;;
            writerctl__subcmd__help,acquire)
                cmd="writerctl__subcmd__help__subcmd__acquire"
                ;;
            writerctl__subcmd__help,audit)
                cmd="writerctl__subcmd__help__subcmd__audit"
                ;;
            writerctl__subcmd__help,channel)
                cmd="writerctl__subcmd__help__subcmd__channel"
                ;;
            writerctl__subcmd__help,claim)
                cmd="writerctl__subcmd__help__subcmd__claim"
                ;;
            writerctl__subcmd__help,completions)
                cmd="writerctl__subcmd__help__subcmd__completions"
                ;;
            writerctl__subcmd__help,coordinator)
                cmd="writerctl__subcmd__help__subcmd__coordinator"
                ;;
            writerctl__subcmd__help,doctor)
                cmd="writerctl__subcmd__help__subcmd__doctor"
                ;;
            writerctl__subcmd__help,focus)
                cmd="writerctl__subcmd__help__subcmd__focus"
                ;;
            writerctl__subcmd__help,help)
                cmd="writerctl__subcmd__help__subcmd__help"
                ;;
            writerctl__subcmd__help,history)
                cmd="writerctl__subcmd__help__subcmd__history"
                ;;
            writerctl__subcmd__help,identity)
                cmd="writerctl__subcmd__help__subcmd__identity"
                ;;
            writerctl__subcmd__help,inbox)
                cmd="writerctl__subcmd__help__subcmd__inbox"
                ;;
            writerctl__subcmd__help,man)
                cmd="writerctl__subcmd__help__subcmd__man"
                ;;
            writerctl__subcmd__help,master)
                cmd="writerctl__subcmd__help__subcmd__master"
                ;;
            writerctl__subcmd__help,operator)
                cmd="writerctl__subcmd__help__subcmd__operator"
                ;;
            writerctl__subcmd__help,pause)
                cmd="writerctl__subcmd__help__subcmd__pause"
                ;;
            writerctl__subcmd__help,recover)
                cmd="writerctl__subcmd__help__subcmd__recover"
                ;;
            writerctl__subcmd__help,release)
                cmd="writerctl__subcmd__help__subcmd__release"
                ;;
            writerctl__subcmd__help,resume)
                cmd="writerctl__subcmd__help__subcmd__resume"
                ;;
            writerctl__subcmd__help,run)
                cmd="writerctl__subcmd__help__subcmd__run"
                ;;
            writerctl__subcmd__help,seal)
                cmd="writerctl__subcmd__help__subcmd__seal"
                ;;
            writerctl__subcmd__help,session)
                cmd="writerctl__subcmd__help__subcmd__session"
                ;;
            writerctl__subcmd__help,status)
                cmd="writerctl__subcmd__help__subcmd__status"
                ;;
            writerctl__subcmd__help,steward)
                cmd="writerctl__subcmd__help__subcmd__steward"
                ;;
            writerctl__subcmd__help,takeover)
                cmd="writerctl__subcmd__help__subcmd__takeover"
                ;;
            writerctl__subcmd__help,verify)
                cmd="writerctl__subcmd__help__subcmd__verify"
                ;;
            writerctl__subcmd__help__subcmd__audit,export)
                cmd="writerctl__subcmd__help__subcmd__audit__subcmd__export"
                ;;
            writerctl__subcmd__help__subcmd__audit,prune)
                cmd="writerctl__subcmd__help__subcmd__audit__subcmd__prune"
                ;;
            writerctl__subcmd__help__subcmd__channel,create)
                cmd="writerctl__subcmd__help__subcmd__channel__subcmd__create"
                ;;
            writerctl__subcmd__help__subcmd__channel,show)
                cmd="writerctl__subcmd__help__subcmd__channel__subcmd__show"
                ;;
            writerctl__subcmd__help__subcmd__claim,history)
                cmd="writerctl__subcmd__help__subcmd__claim__subcmd__history"
                ;;
            writerctl__subcmd__help__subcmd__claim,list)
                cmd="writerctl__subcmd__help__subcmd__claim__subcmd__list"
                ;;
            writerctl__subcmd__help__subcmd__claim,release)
                cmd="writerctl__subcmd__help__subcmd__claim__subcmd__release"
                ;;
            writerctl__subcmd__help__subcmd__claim,show)
                cmd="writerctl__subcmd__help__subcmd__claim__subcmd__show"
                ;;
            writerctl__subcmd__help__subcmd__claim,sweep)
                cmd="writerctl__subcmd__help__subcmd__claim__subcmd__sweep"
                ;;
            writerctl__subcmd__help__subcmd__claim,take)
                cmd="writerctl__subcmd__help__subcmd__claim__subcmd__take"
                ;;
            writerctl__subcmd__help__subcmd__claim,touch)
                cmd="writerctl__subcmd__help__subcmd__claim__subcmd__touch"
                ;;
            writerctl__subcmd__help__subcmd__coordinator,admin-token)
                cmd="writerctl__subcmd__help__subcmd__coordinator__subcmd__admin__subcmd__token"
                ;;
            writerctl__subcmd__help__subcmd__coordinator,serve)
                cmd="writerctl__subcmd__help__subcmd__coordinator__subcmd__serve"
                ;;
            writerctl__subcmd__help__subcmd__coordinator__subcmd__admin__subcmd__token,new)
                cmd="writerctl__subcmd__help__subcmd__coordinator__subcmd__admin__subcmd__token__subcmd__new"
                ;;
            writerctl__subcmd__help__subcmd__focus,end)
                cmd="writerctl__subcmd__help__subcmd__focus__subcmd__end"
                ;;
            writerctl__subcmd__help__subcmd__focus,show)
                cmd="writerctl__subcmd__help__subcmd__focus__subcmd__show"
                ;;
            writerctl__subcmd__help__subcmd__focus,start)
                cmd="writerctl__subcmd__help__subcmd__focus__subcmd__start"
                ;;
            writerctl__subcmd__help__subcmd__identity,add)
                cmd="writerctl__subcmd__help__subcmd__identity__subcmd__add"
                ;;
            writerctl__subcmd__help__subcmd__identity,list)
                cmd="writerctl__subcmd__help__subcmd__identity__subcmd__list"
                ;;
            writerctl__subcmd__help__subcmd__identity,remove)
                cmd="writerctl__subcmd__help__subcmd__identity__subcmd__remove"
                ;;
            writerctl__subcmd__help__subcmd__identity,rotate)
                cmd="writerctl__subcmd__help__subcmd__identity__subcmd__rotate"
                ;;
            writerctl__subcmd__help__subcmd__master,claim)
                cmd="writerctl__subcmd__help__subcmd__master__subcmd__claim"
                ;;
            writerctl__subcmd__help__subcmd__master,handoff)
                cmd="writerctl__subcmd__help__subcmd__master__subcmd__handoff"
                ;;
            writerctl__subcmd__help__subcmd__master,history)
                cmd="writerctl__subcmd__help__subcmd__master__subcmd__history"
                ;;
            writerctl__subcmd__help__subcmd__master,status)
                cmd="writerctl__subcmd__help__subcmd__master__subcmd__status"
                ;;
            writerctl__subcmd__help__subcmd__operator,add)
                cmd="writerctl__subcmd__help__subcmd__operator__subcmd__add"
                ;;
            writerctl__subcmd__help__subcmd__session,deregister)
                cmd="writerctl__subcmd__help__subcmd__session__subcmd__deregister"
                ;;
            writerctl__subcmd__help__subcmd__session,heartbeat)
                cmd="writerctl__subcmd__help__subcmd__session__subcmd__heartbeat"
                ;;
            writerctl__subcmd__help__subcmd__session,register)
                cmd="writerctl__subcmd__help__subcmd__session__subcmd__register"
                ;;
            writerctl__subcmd__help__subcmd__steward,report)
                cmd="writerctl__subcmd__help__subcmd__steward__subcmd__report"
                ;;
            writerctl__subcmd__identity,add)
                cmd="writerctl__subcmd__identity__subcmd__add"
                ;;
            writerctl__subcmd__identity,help)
                cmd="writerctl__subcmd__identity__subcmd__help"
                ;;
            writerctl__subcmd__identity,list)
                cmd="writerctl__subcmd__identity__subcmd__list"
                ;;
            writerctl__subcmd__identity,remove)
                cmd="writerctl__subcmd__identity__subcmd__remove"
                ;;
            writerctl__subcmd__identity,rotate)
                cmd="writerctl__subcmd__identity__subcmd__rotate"
                ;;
            writerctl__subcmd__identity__subcmd__help,add)
                cmd="writerctl__subcmd__identity__subcmd__help__subcmd__add"
                ;;
            writerctl__subcmd__identity__subcmd__help,help)
                cmd="writerctl__subcmd__identity__subcmd__help__subcmd__help"
                ;;
            writerctl__subcmd__identity__subcmd__help,list)
                cmd="writerctl__subcmd__identity__subcmd__help__subcmd__list"
                ;;
            writerctl__subcmd__identity__subcmd__help,remove)
                cmd="writerctl__subcmd__identity__subcmd__help__subcmd__remove"
                ;;
            writerctl__subcmd__identity__subcmd__help,rotate)
                cmd="writerctl__subcmd__identity__subcmd__help__subcmd__rotate"
                ;;
            writerctl__subcmd__master,claim)
                cmd="writerctl__subcmd__master__subcmd__claim"
                ;;
            writerctl__subcmd__master,handoff)
                cmd="writerctl__subcmd__master__subcmd__handoff"
                ;;
            writerctl__subcmd__master,help)
                cmd="writerctl__subcmd__master__subcmd__help"
                ;;
            writerctl__subcmd__master,history)
                cmd="writerctl__subcmd__master__subcmd__history"
                ;;
            writerctl__subcmd__master,status)
                cmd="writerctl__subcmd__master__subcmd__status"
                ;;
            writerctl__subcmd__master__subcmd__help,claim)
                cmd="writerctl__subcmd__master__subcmd__help__subcmd__claim"
                ;;
            writerctl__subcmd__master__subcmd__help,handoff)
                cmd="writerctl__subcmd__master__subcmd__help__subcmd__handoff"
                ;;
            writerctl__subcmd__master__subcmd__help,help)
                cmd="writerctl__subcmd__master__subcmd__help__subcmd__help"
                ;;
            writerctl__subcmd__master__subcmd__help,history)
                cmd="writerctl__subcmd__master__subcmd__help__subcmd__history"
                ;;
            writerctl__subcmd__master__subcmd__help,status)
                cmd="writerctl__subcmd__master__subcmd__help__subcmd__status"
                ;;
            writerctl__subcmd__operator,add)
                cmd="writerctl__subcmd__operator__subcmd__add"
                ;;
            writerctl__subcmd__operator,help)
                cmd="writerctl__subcmd__operator__subcmd__help"
                ;;
            writerctl__subcmd__operator__subcmd__help,add)
                cmd="writerctl__subcmd__operator__subcmd__help__subcmd__add"
                ;;
            writerctl__subcmd__operator__subcmd__help,help)
                cmd="writerctl__subcmd__operator__subcmd__help__subcmd__help"
                ;;
            writerctl__subcmd__session,deregister)
                cmd="writerctl__subcmd__session__subcmd__deregister"
                ;;
            writerctl__subcmd__session,heartbeat)
                cmd="writerctl__subcmd__session__subcmd__heartbeat"
                ;;
            writerctl__subcmd__session,help)
                cmd="writerctl__subcmd__session__subcmd__help"
                ;;
            writerctl__subcmd__session,register)
                cmd="writerctl__subcmd__session__subcmd__register"
                ;;
            writerctl__subcmd__session__subcmd__help,deregister)
                cmd="writerctl__subcmd__session__subcmd__help__subcmd__deregister"
                ;;
            writerctl__subcmd__session__subcmd__help,heartbeat)
                cmd="writerctl__subcmd__session__subcmd__help__subcmd__heartbeat"
                ;;
            writerctl__subcmd__session__subcmd__help,help)
                cmd="writerctl__subcmd__session__subcmd__help__subcmd__help"
                ;;
            writerctl__subcmd__session__subcmd__help,register)
                cmd="writerctl__subcmd__session__subcmd__help__subcmd__register"
                ;;
            writerctl__subcmd__steward,help)
                cmd="writerctl__subcmd__steward__subcmd__help"
                ;;
            writerctl__subcmd__steward,report)
                cmd="writerctl__subcmd__steward__subcmd__report"
                ;;
            writerctl__subcmd__steward__subcmd__help,help)
                cmd="writerctl__subcmd__steward__subcmd__help__subcmd__help"
                ;;
            writerctl__subcmd__steward__subcmd__help,report)
                cmd="writerctl__subcmd__steward__subcmd__help__subcmd__report"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        writerctl)
            opts="-v -h -V --json --verbose --help --version acquire release seal takeover run completions man __generate __exec-writer verify recover status session master operator identity inbox audit channel claim focus steward coordinator history doctor pause resume help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd____exec__subcmd__writer)
            opts="-v -h -V --parent --pid-namespace --report-fd --init --status-fd --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --parent)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pid-namespace)
                    COMPREPLY=($(compgen -W "auto require off" -- "${cur}"))
                    return 0
                    ;;
                --report-fd)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --status-fd)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd____generate)
            opts="-v -h -V --out --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__acquire)
            opts="-v -h -V --runtime-dir --lock --transcript-key --project-root --statefulset-identity --managed --pid --process-kind --token-file --wait --reason --session --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --runtime-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --lock)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --transcript-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project-root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pid)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --process-kind)
                    COMPREPLY=($(compgen -W "interactive acp daemon unknown" -- "${cur}"))
                    return 0
                    ;;
                --token-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --wait)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --reason)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --session)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__audit)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --limit --json --verbose --help --version prune export help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__audit__subcmd__export)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --since --format --cursor --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --since)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "jsonl csv" -- "${cur}"))
                    return 0
                    ;;
                --cursor)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__audit__subcmd__help)
            opts="prune export help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__audit__subcmd__help__subcmd__export)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__audit__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__audit__subcmd__help__subcmd__prune)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__audit__subcmd__prune)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --older-than-days --inbox-older-than-days --inbox-max-events --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --older-than-days)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --inbox-older-than-days)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --inbox-max-events)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__channel)
            opts="-v -h -V --json --verbose --help --version create show help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__channel__subcmd__create)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --channel --request-id --steward --sla-minutes --ttl-floor-minutes --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --channel)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --steward)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sla-minutes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ttl-floor-minutes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__channel__subcmd__help)
            opts="create show help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__channel__subcmd__help__subcmd__create)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__channel__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__channel__subcmd__help__subcmd__show)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__channel__subcmd__show)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --channel --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --channel)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__claim)
            opts="-v -h -V --json --verbose --help --version take touch release show history list sweep help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__claim__subcmd__help)
            opts="take touch release show history list sweep help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__claim__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__claim__subcmd__help__subcmd__history)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__claim__subcmd__help__subcmd__list)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__claim__subcmd__help__subcmd__release)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__claim__subcmd__help__subcmd__show)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__claim__subcmd__help__subcmd__sweep)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__claim__subcmd__help__subcmd__take)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__claim__subcmd__help__subcmd__touch)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__claim__subcmd__history)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --channel --task --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --channel)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --task)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__claim__subcmd__list)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --channel --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --channel)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__claim__subcmd__release)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --channel --task --request-id --seat --expect-version --token-file --done --next-step --reason --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --channel)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --task)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --seat)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --expect-version)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --next-step)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --reason)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__claim__subcmd__show)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --channel --task --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --channel)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --task)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__claim__subcmd__sweep)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --as-of --dry-run --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --as-of)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__claim__subcmd__take)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --channel --task --request-id --seat --deputy --ttl-minutes --next-step --token-file --reason --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --channel)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --task)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --seat)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --deputy)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ttl-minutes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --next-step)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --reason)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__claim__subcmd__touch)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --channel --task --request-id --seat --expect-version --token-file --deputy --no-deputy --ttl-minutes --no-ttl --next-step --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --channel)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --task)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --seat)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --expect-version)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --deputy)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ttl-minutes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --next-step)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__completions)
            opts="-v -h -V --json --verbose --help --version bash elvish fish powershell zsh"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__coordinator)
            opts="-v -h -V --json --verbose --help --version serve admin-token help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__coordinator__subcmd__admin__subcmd__token)
            opts="-v -h -V --json --verbose --help --version new help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__coordinator__subcmd__admin__subcmd__token__subcmd__help)
            opts="new help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__coordinator__subcmd__admin__subcmd__token__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__coordinator__subcmd__admin__subcmd__token__subcmd__help__subcmd__new)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__coordinator__subcmd__admin__subcmd__token__subcmd__new)
            opts="-v -h -V --out --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__coordinator__subcmd__help)
            opts="serve admin-token help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__coordinator__subcmd__help__subcmd__admin__subcmd__token)
            opts="new"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__coordinator__subcmd__help__subcmd__admin__subcmd__token__subcmd__new)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__coordinator__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__coordinator__subcmd__help__subcmd__serve)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__coordinator__subcmd__serve)
            opts="-v -h -V --listen --store --redis --postgres --redis-ca-file --redis-min-replicas --audit-queue-max-rows --audit-queue-max-bytes --namespace --admin-token-file --tls-cert --tls-key --freshness-seconds --sweep-interval-seconds --time-scale --open-registration --audit-retention-days --inbox-retention-days --inbox-max-events --retention-interval-seconds --log-format --max-connections --header-timeout-seconds --max-connections-per-source --body-timeout-seconds --probe-listen --memory-budget --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --redis)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --postgres)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --redis-ca-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --redis-min-replicas)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --audit-queue-max-rows)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --audit-queue-max-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --admin-token-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sweep-interval-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --time-scale)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --audit-retention-days)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --inbox-retention-days)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --inbox-max-events)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retention-interval-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --max-connections)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --header-timeout-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-connections-per-source)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --body-timeout-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --probe-listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --memory-budget)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__doctor)
            opts="-v -h -V --runtime-dir --storage --coordinator --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --runtime-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__focus)
            opts="-v -h -V --json --verbose --help --version start end show help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__focus__subcmd__end)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --seat --request-id --token-file --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --seat)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__focus__subcmd__help)
            opts="start end show help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__focus__subcmd__help__subcmd__end)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__focus__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__focus__subcmd__help__subcmd__show)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__focus__subcmd__help__subcmd__start)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__focus__subcmd__show)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --seat --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --seat)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__focus__subcmd__start)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --seat --request-id --minutes --token-file --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --seat)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --minutes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help)
            opts="acquire release seal takeover run completions man __generate __exec-writer verify recover status session master operator identity inbox audit channel claim focus steward coordinator history doctor pause resume help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd____exec__subcmd__writer)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd____generate)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__acquire)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__audit)
            opts="prune export"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__audit__subcmd__export)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__audit__subcmd__prune)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__channel)
            opts="create show"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__channel__subcmd__create)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__channel__subcmd__show)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__claim)
            opts="take touch release show history list sweep"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__claim__subcmd__history)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__claim__subcmd__list)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__claim__subcmd__release)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__claim__subcmd__show)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__claim__subcmd__sweep)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__claim__subcmd__take)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__claim__subcmd__touch)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__completions)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__coordinator)
            opts="serve admin-token"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__coordinator__subcmd__admin__subcmd__token)
            opts="new"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__coordinator__subcmd__admin__subcmd__token__subcmd__new)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__coordinator__subcmd__serve)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__doctor)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__focus)
            opts="start end show"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__focus__subcmd__end)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__focus__subcmd__show)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__focus__subcmd__start)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__history)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__identity)
            opts="add list rotate remove"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__identity__subcmd__add)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__identity__subcmd__list)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__identity__subcmd__remove)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__identity__subcmd__rotate)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__inbox)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__man)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__master)
            opts="status handoff claim history"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__master__subcmd__claim)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__master__subcmd__handoff)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__master__subcmd__history)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__master__subcmd__status)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__operator)
            opts="add"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__operator__subcmd__add)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__pause)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__recover)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__release)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__resume)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__run)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__seal)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__session)
            opts="register heartbeat deregister"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__session__subcmd__deregister)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__session__subcmd__heartbeat)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__session__subcmd__register)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__status)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__steward)
            opts="report"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__steward__subcmd__report)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__takeover)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__help__subcmd__verify)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__history)
            opts="-v -h -V --runtime-dir --session --lock --transcript-key --project-root --statefulset-identity --since --limit --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --runtime-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --session)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --lock)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --transcript-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project-root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --since)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__identity)
            opts="-v -h -V --json --verbose --help --version add list rotate remove help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__identity__subcmd__add)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --request-id --key-file --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__identity__subcmd__help)
            opts="add list rotate remove help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__identity__subcmd__help__subcmd__add)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__identity__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__identity__subcmd__help__subcmd__list)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__identity__subcmd__help__subcmd__remove)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__identity__subcmd__help__subcmd__rotate)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__identity__subcmd__list)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__identity__subcmd__remove)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --request-id --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__identity__subcmd__rotate)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --request-id --key-file --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__inbox)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --identity --after --follow --timeout --limit --token-file --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --identity)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --after)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__man)
            opts="-v -h -V --roff --out-dir --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --out-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__master)
            opts="-v -h -V --json --verbose --help --version status handoff claim history help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__master__subcmd__claim)
            opts="-y -v -h -V --coordinator --freshness-seconds --allow-insecure-http --request-id --project --to --to-session --expect-epoch --yes --reason --dry-run --operator --password-file --password-stdin --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --to)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --to-session)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --expect-epoch)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --reason)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --operator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --password-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__master__subcmd__handoff)
            opts="-y -v -h -V --coordinator --freshness-seconds --allow-insecure-http --request-id --project --to --to-session --expect-epoch --yes --reason --dry-run --session --token-file --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --to)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --to-session)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --expect-epoch)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --reason)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --session)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__master__subcmd__help)
            opts="status handoff claim history help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__master__subcmd__help__subcmd__claim)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__master__subcmd__help__subcmd__handoff)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__master__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__master__subcmd__help__subcmd__history)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__master__subcmd__help__subcmd__status)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__master__subcmd__history)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --limit --token-file --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__master__subcmd__status)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --watch --interval --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__operator)
            opts="-v -h -V --json --verbose --help --version add help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__operator__subcmd__add)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --request-id --password-file --password-stdin --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --password-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__operator__subcmd__help)
            opts="add help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__operator__subcmd__help__subcmd__add)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__operator__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__pause)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --request-id --project --reason --until --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --reason)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --until)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__recover)
            opts="-v -h -V --runtime-dir --session --lock --transcript-key --project-root --statefulset-identity --writers-fenced --yes --reason --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --runtime-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --session)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --lock)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --transcript-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project-root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --reason)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__release)
            opts="-v -h -V --runtime-dir --lock --transcript-key --project-root --statefulset-identity --token-file --reason --dry-run --session --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --runtime-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --lock)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --transcript-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project-root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --reason)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --session)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__resume)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --request-id --project --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__run)
            opts="-v -h -V --runtime-dir --lock --transcript-key --project-root --statefulset-identity --grace --wait --check-interval --max-unverified --control-socket --pid-namespace --process-kind --reason --session --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --runtime-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --lock)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --transcript-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project-root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --grace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --wait)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --check-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-unverified)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --control-socket)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pid-namespace)
                    COMPREPLY=($(compgen -W "auto require off" -- "${cur}"))
                    return 0
                    ;;
                --process-kind)
                    COMPREPLY=($(compgen -W "interactive acp daemon unknown" -- "${cur}"))
                    return 0
                    ;;
                --reason)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --session)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__seal)
            opts="-v -h -V --runtime-dir --lock --transcript-key --project-root --statefulset-identity --token-file --control-socket --timeout --reason --session --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --runtime-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --lock)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --transcript-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project-root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --control-socket)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --reason)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --session)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__session)
            opts="-v -h -V --json --verbose --help --version register heartbeat deregister help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__session__subcmd__deregister)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --request-id --project --session --token-file --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --session)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__session__subcmd__heartbeat)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --request-id --project --session --token-file --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --session)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__session__subcmd__help)
            opts="register heartbeat deregister help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__session__subcmd__help__subcmd__deregister)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__session__subcmd__help__subcmd__heartbeat)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__session__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__session__subcmd__help__subcmd__register)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__session__subcmd__register)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --request-id --project --identity --surface --machine --token-file --previous-token-file --identity-key-file --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --identity)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --surface)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --machine)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --previous-token-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --identity-key-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__status)
            opts="-v -h -V --runtime-dir --session --lock --transcript-key --project-root --statefulset-identity --format --output --watch --interval --poll --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --runtime-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --session)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --lock)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --transcript-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project-root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "text prometheus" -- "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__steward)
            opts="-v -h -V --json --verbose --help --version report help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__steward__subcmd__help)
            opts="report help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__steward__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__steward__subcmd__help__subcmd__report)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__steward__subcmd__report)
            opts="-v -h -V --coordinator --freshness-seconds --allow-insecure-http --project --channel --as-of --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --coordinator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --freshness-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --channel)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --as-of)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__takeover)
            opts="-v -h -V --runtime-dir --lock --transcript-key --project-root --statefulset-identity --pid --process-kind --token-file --wait --reason --dry-run --session --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --runtime-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --lock)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --transcript-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project-root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pid)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --process-kind)
                    COMPREPLY=($(compgen -W "interactive acp daemon unknown" -- "${cur}"))
                    return 0
                    ;;
                --token-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --wait)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --reason)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --session)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        writerctl__subcmd__verify)
            opts="-v -h -V --runtime-dir --lock --transcript-key --project-root --statefulset-identity --session --json --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --runtime-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --lock)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --transcript-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --project-root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --session)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _writerctl -o nosort -o bashdefault -o default writerctl
else
    complete -F _writerctl -o bashdefault -o default writerctl
fi
