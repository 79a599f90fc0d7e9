_yurtctl() {
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
                cmd="yurtctl"
                ;;
            yurtctl,completion)
                cmd="yurtctl__subcmd__completion"
                ;;
            yurtctl,convert)
                cmd="yurtctl__subcmd__convert"
                ;;
            yurtctl,diagnose)
                cmd="yurtctl__subcmd__diagnose"
                ;;
            yurtctl,help)
                cmd="yurtctl__subcmd__help"
                ;;
            yurtctl,images)
                cmd="yurtctl__subcmd__images"
                ;;
            yurtctl,man)
                cmd="yurtctl__subcmd__man"
                ;;
            yurtctl,playground)
                cmd="yurtctl__subcmd__playground"
                ;;
            yurtctl,revert)
                cmd="yurtctl__subcmd__revert"
                ;;
            yurtctl,staticpod)
                cmd="yurtctl__subcmd__staticpod"
                ;;
            yurtctl,status)
                cmd="yurtctl__subcmd__status"
                ;;
            yurtctl,upgrade)
                cmd="yurtctl__subcmd__upgrade"
                ;;
            yurtctl__subcmd__help,completion)
                cmd="yurtctl__subcmd__help__subcmd__completion"
                ;;
            yurtctl__subcmd__help,convert)
                cmd="yurtctl__subcmd__help__subcmd__convert"
                ;;
            yurtctl__subcmd__help,diagnose)
                cmd="yurtctl__subcmd__help__subcmd__diagnose"
                ;;
            yurtctl__subcmd__help,help)
                cmd="yurtctl__subcmd__help__subcmd__help"
                ;;
            yurtctl__subcmd__help,images)
                cmd="yurtctl__subcmd__help__subcmd__images"
                ;;
            yurtctl__subcmd__help,man)
                cmd="yurtctl__subcmd__help__subcmd__man"
                ;;
            yurtctl__subcmd__help,playground)
                cmd="yurtctl__subcmd__help__subcmd__playground"
                ;;
            yurtctl__subcmd__help,revert)
                cmd="yurtctl__subcmd__help__subcmd__revert"
                ;;
            yurtctl__subcmd__help,staticpod)
                cmd="yurtctl__subcmd__help__subcmd__staticpod"
                ;;
            yurtctl__subcmd__help,status)
                cmd="yurtctl__subcmd__help__subcmd__status"
                ;;
            yurtctl__subcmd__help,upgrade)
                cmd="yurtctl__subcmd__help__subcmd__upgrade"
                ;;
            yurtctl__subcmd__help__subcmd__images,list)
                cmd="yurtctl__subcmd__help__subcmd__images__subcmd__list"
                ;;
            yurtctl__subcmd__help__subcmd__images,pull)
                cmd="yurtctl__subcmd__help__subcmd__images__subcmd__pull"
                ;;
            yurtctl__subcmd__help__subcmd__staticpod,adopt)
                cmd="yurtctl__subcmd__help__subcmd__staticpod__subcmd__adopt"
                ;;
            yurtctl__subcmd__help__subcmd__staticpod,ota)
                cmd="yurtctl__subcmd__help__subcmd__staticpod__subcmd__ota"
                ;;
            yurtctl__subcmd__help__subcmd__staticpod,rollback)
                cmd="yurtctl__subcmd__help__subcmd__staticpod__subcmd__rollback"
                ;;
            yurtctl__subcmd__help__subcmd__staticpod,status)
                cmd="yurtctl__subcmd__help__subcmd__staticpod__subcmd__status"
                ;;
            yurtctl__subcmd__help__subcmd__staticpod,upgrade)
                cmd="yurtctl__subcmd__help__subcmd__staticpod__subcmd__upgrade"
                ;;
            yurtctl__subcmd__help__subcmd__staticpod__subcmd__ota,apply)
                cmd="yurtctl__subcmd__help__subcmd__staticpod__subcmd__ota__subcmd__apply"
                ;;
            yurtctl__subcmd__images,help)
                cmd="yurtctl__subcmd__images__subcmd__help"
                ;;
            yurtctl__subcmd__images,list)
                cmd="yurtctl__subcmd__images__subcmd__list"
                ;;
            yurtctl__subcmd__images,pull)
                cmd="yurtctl__subcmd__images__subcmd__pull"
                ;;
            yurtctl__subcmd__images__subcmd__help,help)
                cmd="yurtctl__subcmd__images__subcmd__help__subcmd__help"
                ;;
            yurtctl__subcmd__images__subcmd__help,list)
                cmd="yurtctl__subcmd__images__subcmd__help__subcmd__list"
                ;;
            yurtctl__subcmd__images__subcmd__help,pull)
                cmd="yurtctl__subcmd__images__subcmd__help__subcmd__pull"
                ;;
            yurtctl__subcmd__staticpod,adopt)
                cmd="yurtctl__subcmd__staticpod__subcmd__adopt"
                ;;
            yurtctl__subcmd__staticpod,help)
                cmd="yurtctl__subcmd__staticpod__subcmd__help"
                ;;
            yurtctl__subcmd__staticpod,ota)
                cmd="yurtctl__subcmd__staticpod__subcmd__ota"
                ;;
            yurtctl__subcmd__staticpod,rollback)
                cmd="yurtctl__subcmd__staticpod__subcmd__rollback"
                ;;
            yurtctl__subcmd__staticpod,status)
                cmd="yurtctl__subcmd__staticpod__subcmd__status"
                ;;
            yurtctl__subcmd__staticpod,upgrade)
                cmd="yurtctl__subcmd__staticpod__subcmd__upgrade"
                ;;
            yurtctl__subcmd__staticpod__subcmd__help,adopt)
                cmd="yurtctl__subcmd__staticpod__subcmd__help__subcmd__adopt"
                ;;
            yurtctl__subcmd__staticpod__subcmd__help,help)
                cmd="yurtctl__subcmd__staticpod__subcmd__help__subcmd__help"
                ;;
            yurtctl__subcmd__staticpod__subcmd__help,ota)
                cmd="yurtctl__subcmd__staticpod__subcmd__help__subcmd__ota"
                ;;
            yurtctl__subcmd__staticpod__subcmd__help,rollback)
                cmd="yurtctl__subcmd__staticpod__subcmd__help__subcmd__rollback"
                ;;
            yurtctl__subcmd__staticpod__subcmd__help,status)
                cmd="yurtctl__subcmd__staticpod__subcmd__help__subcmd__status"
                ;;
            yurtctl__subcmd__staticpod__subcmd__help,upgrade)
                cmd="yurtctl__subcmd__staticpod__subcmd__help__subcmd__upgrade"
                ;;
            yurtctl__subcmd__staticpod__subcmd__help__subcmd__ota,apply)
                cmd="yurtctl__subcmd__staticpod__subcmd__help__subcmd__ota__subcmd__apply"
                ;;
            yurtctl__subcmd__staticpod__subcmd__ota,apply)
                cmd="yurtctl__subcmd__staticpod__subcmd__ota__subcmd__apply"
                ;;
            yurtctl__subcmd__staticpod__subcmd__ota,help)
                cmd="yurtctl__subcmd__staticpod__subcmd__ota__subcmd__help"
                ;;
            yurtctl__subcmd__staticpod__subcmd__ota__subcmd__help,apply)
                cmd="yurtctl__subcmd__staticpod__subcmd__ota__subcmd__help__subcmd__apply"
                ;;
            yurtctl__subcmd__staticpod__subcmd__ota__subcmd__help,help)
                cmd="yurtctl__subcmd__staticpod__subcmd__ota__subcmd__help__subcmd__help"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        yurtctl)
            opts="-v -q -o -n -y -h -V --verbose --quiet --output --dry-run --kubeconfig --context --namespace --yes --qps --burst --progress --no-color --help --version convert revert upgrade status diagnose staticpod images completion man playground help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --output)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                --dry-run)
                    COMPREPLY=($(compgen -W "none client server" -- "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --qps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --progress)
                    COMPREPLY=($(compgen -W "auto bars plain none" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        yurtctl__subcmd__completion)
            opts="-v -q -o -n -y -h --verbose --quiet --output --dry-run --kubeconfig --context --namespace --yes --qps --burst --progress --no-color --help bash elvish fish powershell zsh"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --output)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                --dry-run)
                    COMPREPLY=($(compgen -W "none client server" -- "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --qps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --progress)
                    COMPREPLY=($(compgen -W "auto bars plain none" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        yurtctl__subcmd__convert)
            opts="-v -q -o -n -y -h --cloud-nodes --edge-nodes --all-edge --profile --servant-image --openyurt-version --image-repository --image --image-pull-secret --pull-images --concurrency --job-timeout --force-unlock --skip-workload-restart --skip-phases --autonomous-nodes --provider --disable-nodelifecycle --require-all-ready --ignore-preflight-errors --nodepool --nodepools-from-label --cloud-nodepool --deploy-yurttunnel --enable-app-manager --token-ttl --force-conflicts --verbose --quiet --output --dry-run --kubeconfig --context --namespace --yes --qps --burst --progress --no-color --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --cloud-nodes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --edge-nodes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --profile)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --servant-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openyurt-version)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --image-repository)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --image-pull-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --concurrency)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --job-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --skip-phases)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --autonomous-nodes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --provider)
                    COMPREPLY=($(compgen -W "auto kubeadm kind minikube" -- "${cur}"))
                    return 0
                    ;;
                --disable-nodelifecycle)
                    COMPREPLY=($(compgen -W "auto true false" -- "${cur}"))
                    return 0
                    ;;
                --ignore-preflight-errors)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nodepool)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nodepools-from-label)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cloud-nodepool)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token-ttl)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                --dry-run)
                    COMPREPLY=($(compgen -W "none client server" -- "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --qps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --progress)
                    COMPREPLY=($(compgen -W "auto bars plain none" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        yurtctl__subcmd__diagnose)
            opts="-v -q -o -n -y -h --servant-image --job-timeout --collect --verbose --quiet --output --dry-run --kubeconfig --context --namespace --yes --qps --burst --progress --no-color --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --servant-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --job-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --collect)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                --dry-run)
                    COMPREPLY=($(compgen -W "none client server" -- "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --qps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --progress)
                    COMPREPLY=($(compgen -W "auto bars plain none" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        yurtctl__subcmd__help)
            opts="convert revert upgrade status diagnose staticpod images completion man playground help"
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
        yurtctl__subcmd__help__subcmd__completion)
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
        yurtctl__subcmd__help__subcmd__convert)
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
        yurtctl__subcmd__help__subcmd__diagnose)
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
        yurtctl__subcmd__help__subcmd__help)
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
        yurtctl__subcmd__help__subcmd__images)
            opts="list pull"
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
        yurtctl__subcmd__help__subcmd__images__subcmd__list)
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
        yurtctl__subcmd__help__subcmd__images__subcmd__pull)
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
        yurtctl__subcmd__help__subcmd__man)
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
        yurtctl__subcmd__help__subcmd__playground)
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
        yurtctl__subcmd__help__subcmd__revert)
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
        yurtctl__subcmd__help__subcmd__staticpod)
            opts="upgrade status rollback ota adopt"
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
        yurtctl__subcmd__help__subcmd__staticpod__subcmd__adopt)
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
        yurtctl__subcmd__help__subcmd__staticpod__subcmd__ota)
            opts="apply"
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
        yurtctl__subcmd__help__subcmd__staticpod__subcmd__ota__subcmd__apply)
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
        yurtctl__subcmd__help__subcmd__staticpod__subcmd__rollback)
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
        yurtctl__subcmd__help__subcmd__staticpod__subcmd__status)
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
        yurtctl__subcmd__help__subcmd__staticpod__subcmd__upgrade)
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
        yurtctl__subcmd__help__subcmd__status)
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
        yurtctl__subcmd__help__subcmd__upgrade)
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
        yurtctl__subcmd__images)
            opts="-v -q -o -n -y -h --verbose --quiet --output --dry-run --kubeconfig --context --namespace --yes --qps --burst --progress --no-color --help list pull help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --output)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                --dry-run)
                    COMPREPLY=($(compgen -W "none client server" -- "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --qps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --progress)
                    COMPREPLY=($(compgen -W "auto bars plain none" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        yurtctl__subcmd__images__subcmd__help)
            opts="list pull help"
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
        yurtctl__subcmd__images__subcmd__help__subcmd__help)
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
        yurtctl__subcmd__images__subcmd__help__subcmd__list)
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
        yurtctl__subcmd__images__subcmd__help__subcmd__pull)
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
        yurtctl__subcmd__images__subcmd__list)
            opts="-v -q -o -n -y -h --profile --servant-image --openyurt-version --image-repository --image --verbose --quiet --output --dry-run --kubeconfig --context --namespace --yes --qps --burst --progress --no-color --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --profile)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --servant-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openyurt-version)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --image-repository)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                --dry-run)
                    COMPREPLY=($(compgen -W "none client server" -- "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --qps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --progress)
                    COMPREPLY=($(compgen -W "auto bars plain none" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        yurtctl__subcmd__images__subcmd__pull)
            opts="-v -q -o -n -y -h --profile --servant-image --openyurt-version --image-repository --image --image-pull-secret --job-timeout --verbose --quiet --output --dry-run --kubeconfig --context --namespace --yes --qps --burst --progress --no-color --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --profile)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --servant-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openyurt-version)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --image-repository)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --image-pull-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --job-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                --dry-run)
                    COMPREPLY=($(compgen -W "none client server" -- "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --qps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --progress)
                    COMPREPLY=($(compgen -W "auto bars plain none" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        yurtctl__subcmd__man)
            opts="-v -q -o -n -y -h --dir --verbose --quiet --output --dry-run --kubeconfig --context --namespace --yes --qps --burst --progress --no-color --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                --dry-run)
                    COMPREPLY=($(compgen -W "none client server" -- "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --qps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --progress)
                    COMPREPLY=($(compgen -W "auto bars plain none" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        yurtctl__subcmd__playground)
            opts="-v -q -o -n -y -h --nodes --layout --profile --apiserver --state-dir --keep --no-keep --verbose --quiet --output --dry-run --kubeconfig --context --namespace --yes --qps --burst --progress --no-color --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --nodes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --layout)
                    COMPREPLY=($(compgen -W "kubeadm kubeadm-usr kind minikube" -- "${cur}"))
                    return 0
                    ;;
                --profile)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --apiserver)
                    COMPREPLY=($(compgen -W "sim real" -- "${cur}"))
                    return 0
                    ;;
                --state-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                --dry-run)
                    COMPREPLY=($(compgen -W "none client server" -- "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --qps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --progress)
                    COMPREPLY=($(compgen -W "auto bars plain none" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        yurtctl__subcmd__revert)
            opts="-v -q -o -n -y -h --nodes --concurrency --job-timeout --force-unlock --skip-workload-restart --skip-phases --verbose --quiet --output --dry-run --kubeconfig --context --namespace --yes --qps --burst --progress --no-color --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --nodes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --concurrency)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --job-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --skip-phases)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                --dry-run)
                    COMPREPLY=($(compgen -W "none client server" -- "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --qps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --progress)
                    COMPREPLY=($(compgen -W "auto bars plain none" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        yurtctl__subcmd__staticpod)
            opts="-v -q -o -n -y -h --verbose --quiet --output --dry-run --kubeconfig --context --namespace --yes --qps --burst --progress --no-color --help upgrade status rollback ota adopt help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --output)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                --dry-run)
                    COMPREPLY=($(compgen -W "none client server" -- "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --qps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --progress)
                    COMPREPLY=($(compgen -W "auto bars plain none" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        yurtctl__subcmd__staticpod__subcmd__adopt)
            opts="-v -q -o -n -y -h --manifest --strategy --max-unavailable --verbose --quiet --output --dry-run --kubeconfig --context --namespace --yes --qps --burst --progress --no-color --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --manifest)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --strategy)
                    COMPREPLY=($(compgen -W "advanced-rolling-update ota" -- "${cur}"))
                    return 0
                    ;;
                --max-unavailable)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                --dry-run)
                    COMPREPLY=($(compgen -W "none client server" -- "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --qps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --progress)
                    COMPREPLY=($(compgen -W "auto bars plain none" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        yurtctl__subcmd__staticpod__subcmd__help)
            opts="upgrade status rollback ota adopt help"
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
        yurtctl__subcmd__staticpod__subcmd__help__subcmd__adopt)
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
        yurtctl__subcmd__staticpod__subcmd__help__subcmd__help)
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
        yurtctl__subcmd__staticpod__subcmd__help__subcmd__ota)
            opts="apply"
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
        yurtctl__subcmd__staticpod__subcmd__help__subcmd__ota__subcmd__apply)
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
        yurtctl__subcmd__staticpod__subcmd__help__subcmd__rollback)
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
        yurtctl__subcmd__staticpod__subcmd__help__subcmd__status)
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
        yurtctl__subcmd__staticpod__subcmd__help__subcmd__upgrade)
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
        yurtctl__subcmd__staticpod__subcmd__ota)
            opts="-v -q -o -n -y -h --verbose --quiet --output --dry-run --kubeconfig --context --namespace --yes --qps --burst --progress --no-color --help apply help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --output)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                --dry-run)
                    COMPREPLY=($(compgen -W "none client server" -- "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --qps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --progress)
                    COMPREPLY=($(compgen -W "auto bars plain none" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        yurtctl__subcmd__staticpod__subcmd__ota__subcmd__apply)
            opts="-v -q -o -n -y -h --node --node-timeout --servant-image --image-pull-secret --force-unlock --verbose --quiet --output --dry-run --kubeconfig --context --namespace --yes --qps --burst --progress --no-color --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --node)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --node-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --servant-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --image-pull-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                --dry-run)
                    COMPREPLY=($(compgen -W "none client server" -- "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --qps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --progress)
                    COMPREPLY=($(compgen -W "auto bars plain none" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        yurtctl__subcmd__staticpod__subcmd__ota__subcmd__help)
            opts="apply help"
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
        yurtctl__subcmd__staticpod__subcmd__ota__subcmd__help__subcmd__apply)
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
        yurtctl__subcmd__staticpod__subcmd__ota__subcmd__help__subcmd__help)
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
        yurtctl__subcmd__staticpod__subcmd__rollback)
            opts="-l -v -q -o -n -y -h --to-revision --strategy --selector --max-unavailable --min-ready-seconds --node-timeout --max-failures --partition --priority --canary --pause --servant-image --image-pull-secret --force-unlock --verbose --quiet --output --dry-run --kubeconfig --context --namespace --yes --qps --burst --progress --no-color --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --to-revision)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --strategy)
                    COMPREPLY=($(compgen -W "advanced-rolling-update ota" -- "${cur}"))
                    return 0
                    ;;
                --selector)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -l)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-unavailable)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --min-ready-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --node-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-failures)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --partition)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --priority)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --canary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --servant-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --image-pull-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                --dry-run)
                    COMPREPLY=($(compgen -W "none client server" -- "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --qps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --progress)
                    COMPREPLY=($(compgen -W "auto bars plain none" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        yurtctl__subcmd__staticpod__subcmd__status)
            opts="-w -v -q -o -n -y -h --watch --verbose --quiet --output --dry-run --kubeconfig --context --namespace --yes --qps --burst --progress --no-color --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --output)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                --dry-run)
                    COMPREPLY=($(compgen -W "none client server" -- "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --qps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --progress)
                    COMPREPLY=($(compgen -W "auto bars plain none" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        yurtctl__subcmd__staticpod__subcmd__upgrade)
            opts="-f -l -v -q -o -n -y -h --image --filename --manifest --strategy --selector --max-unavailable --min-ready-seconds --node-timeout --max-failures --partition --priority --canary --pause --servant-image --image-pull-secret --force-unlock --verbose --quiet --output --dry-run --kubeconfig --context --namespace --yes --qps --burst --progress --no-color --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --filename)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -f)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --manifest)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --strategy)
                    COMPREPLY=($(compgen -W "advanced-rolling-update ota" -- "${cur}"))
                    return 0
                    ;;
                --selector)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -l)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-unavailable)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --min-ready-seconds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --node-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-failures)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --partition)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --priority)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --canary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --servant-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --image-pull-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                --dry-run)
                    COMPREPLY=($(compgen -W "none client server" -- "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --qps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --progress)
                    COMPREPLY=($(compgen -W "auto bars plain none" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        yurtctl__subcmd__status)
            opts="-v -q -o -n -y -h --verbose --quiet --output --dry-run --kubeconfig --context --namespace --yes --qps --burst --progress --no-color --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --output)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                --dry-run)
                    COMPREPLY=($(compgen -W "none client server" -- "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --qps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --progress)
                    COMPREPLY=($(compgen -W "auto bars plain none" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        yurtctl__subcmd__upgrade)
            opts="-l -v -q -o -n -y -h --profile --servant-image --openyurt-version --image-repository --image --image-pull-secret --max-unavailable --partition --priority --canary --max-failures --pause --job-timeout --force-unlock --skip-phases --ignore-preflight-errors --force-conflicts --selector --rollback --verbose --quiet --output --dry-run --kubeconfig --context --namespace --yes --qps --burst --progress --no-color --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --profile)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --servant-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openyurt-version)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --image-repository)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --image-pull-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-unavailable)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --partition)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --priority)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --canary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-failures)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --job-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --skip-phases)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ignore-preflight-errors)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --selector)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -l)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "json yaml wide name" -- "${cur}"))
                    return 0
                    ;;
                --dry-run)
                    COMPREPLY=($(compgen -W "none client server" -- "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --qps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --progress)
                    COMPREPLY=($(compgen -W "auto bars plain none" -- "${cur}"))
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
    complete -F _yurtctl -o nosort -o bashdefault -o default yurtctl
else
    complete -F _yurtctl -o bashdefault -o default yurtctl
fi
