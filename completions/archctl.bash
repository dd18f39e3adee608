# bash completion for archctl

# The names of the [TABLE.NAME] tables of the config file this command line reads
# (--config FILE, else $ARCHCTL_CONFIG, else the user file): tier policies, nodes.
_archctl_config_names() {
    local table="$1" file="" i
    for ((i = 1; i < ${#words[@]}; i++)); do
        case "${words[i]}" in
            --config) file="${words[i+1]}" ;;
            --config=*) file="${words[i]#--config=}" ;;
        esac
    done
    [ -n "$file" ] || file="${ARCHCTL_CONFIG:-${XDG_CONFIG_HOME:-$HOME/.config}/archctl/config.toml}"
    [ -r "$file" ] || return 0
    sed -n "s/^[[:space:]]*\[[[:space:]]*$table\.\([A-Za-z0-9_-]*\)[[:space:]]*\].*/\1/p" "$file" 2>/dev/null | sort -u
}

_archctl() {
    local cur prev words cword
    _init_completion 2>/dev/null || {
        cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"
        words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
    }
    local commands="plan archive unarchive evict tier resume status route job config node torrent"
    local globals="--config --state --json --quiet --verbose --help --version"
    local filters="--all --category --tag --name --completed-before --inactive-for --min-ratio --min-seeding-time --larger-than --exclude-category --exclude-tag"
    local budgets="--max-gb --max-bytes --max-minutes --min-free --no-wait"
    local single="--file --dir --files"
    case "$prev" in
        --config|--state|-o|--output) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --file|--dir) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --from|--to) COMPREPLY=($(compgen -W "$(_archctl_config_names nodes)" -- "$cur")); return ;;
        --category|--tag|--name|--completed-before|--inactive-for|--min-ratio|--min-seeding-time|--larger-than|--exclude-category|--exclude-tag) return ;;
        --files|--confirm|--max-gb|--max-bytes|--max-minutes|--min-free|--kind|--piece-length|--root) return ;;
    esac
    local cmd="" sub="" i
    for ((i = 1; i < cword; i++)); do
        case "${words[i]}" in
            --config|--state|--from|--to|--file|--dir|--files|--confirm|--category|--tag|--name|--completed-before|--inactive-for|--min-ratio|--min-seeding-time|--larger-than|--exclude-category|--exclude-tag|--max-gb|--max-bytes|--max-minutes|--min-free) ((i++)) ;;
            -*) ;;
            *) if [ -z "$cmd" ]; then cmd="${words[i]}"; elif [ -z "$sub" ]; then sub="${words[i]}"; fi ;;
        esac
    done
    if [ -z "$cmd" ]; then
        COMPREPLY=($(compgen -W "$commands $globals" -- "$cur")); return
    fi
    local subs=""
    case "$cmd" in
        plan) subs="archive unarchive evict tier" ;;
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
        plan)
            case "$sub" in
                evict) opts="$opts --from --verify-archive $filters" ;;
                tier) opts="$opts" ;;
                *) opts="$opts --from --to $single --verify-transit $filters" ;;
            esac ;;
        archive|unarchive) opts="$opts --from --to $single --yes --confirm $budgets --verify-transit $filters" ;;
        evict) opts="$opts --from --yes --confirm --verify-archive $filters" ;;
        tier) opts="$opts $budgets --yes" ;;
        resume) opts="$opts $budgets" ;;
        torrent) opts="$opts --files --pieces --kind --piece-length --name -o" ;;
        node) opts="$opts --root" ;;
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    elif [ "$cmd" = tier ] || { [ "$cmd" = plan ] && [ "$sub" = tier ]; }; then
        # one policy NAME, from the config's [tier.NAME] tables
        if [ "$cmd" = plan ] || [ -z "$sub" ]; then
            COMPREPLY=($(compgen -W "$(_archctl_config_names tier)" -- "$cur"))
        fi
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -F _archctl archctl
