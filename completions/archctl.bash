# bash completion for archctl
_archctl() {
    local cur prev words cword
    _init_completion 2>/dev/null || {
        cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"
        words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
    }
    local commands="plan archive unarchive evict resume status route job config node torrent"
    local globals="--config --state --json --quiet --verbose --help --version"
    case "$prev" in
        --config|--state|-o) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    esac
    local cmd="" sub="" i
    for ((i = 1; i < cword; i++)); do
        case "${words[i]}" in
            -*) ;;
            *) if [ -z "$cmd" ]; then cmd="${words[i]}"; elif [ -z "$sub" ]; then sub="${words[i]}"; fi ;;
        esac
    done
    if [ -z "$cmd" ]; then
        COMPREPLY=($(compgen -W "$commands $globals" -- "$cur")); return
    fi
    local subs=""
    case "$cmd" in
        plan) subs="archive unarchive evict" ;;
        route) subs="list show ensure check mesh" ;;
        job) subs="list show cancel clear rm" ;;
        node) subs="serve info" ;;
        torrent) subs="show verify create" ;;
    esac
    if [ -n "$subs" ] && [ -z "$sub" ] && [[ "$cur" != -* ]]; then
        COMPREPLY=($(compgen -W "$subs" -- "$cur")); return
    fi
    local opts="$globals"
    case "$cmd" in
        plan) if [ "$sub" = evict ]; then opts="$opts --from --verify-archive"; else opts="$opts --from --to --file --dir --files --yes --confirm --max-gb --max-bytes --max-minutes --min-free --no-wait --verify-transit"; fi ;;
        archive|unarchive) opts="$opts --from --to --file --dir --files --yes --confirm --max-gb --max-bytes --max-minutes --min-free --no-wait --verify-transit" ;;
        evict) opts="$opts --from --yes --confirm --verify-archive" ;;
        resume) opts="$opts --max-gb --max-bytes --max-minutes --min-free --no-wait" ;;
        torrent) opts="$opts --files --pieces --kind --piece-length --name -o" ;;
        node) opts="$opts --root" ;;
    esac
    if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "$opts" -- "$cur")); else COMPREPLY=($(compgen -f -- "$cur")); fi
}
complete -F _archctl archctl
