// archctl completion bash|zsh|fish: the shell completion scripts, generated from the command
// table by walking the CLI11 tree (every command, subcommand, option and positional), so a
// command or option exists in one place. --nodes, --jobs and --policies print the names the
// scripts complete (node names and tier policies from the config, job ids from the state
// directory) without contacting any node; a config that does not load (an unreadable secret
// file) still names them from its tables, and a missing one prints nothing.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "cli/command_table.hpp"
#include "cli/commands.hpp"
#include "lib/config/config.hpp"
#include "lib/state/job_store.hpp"
#include "lib/state/state_dir.hpp"

namespace archctl::cli {
namespace {

// What the value of an option or a positional is completed with: "nodes", "jobs", "policies"
// (names printed by this command), "files", "dirs", "choices:A B C", "plan-res" (policies after
// 'plan tier', nothing otherwise) or "text" (nothing to offer).
struct Opt {
    std::vector<std::string> names;  // "--from", "-q"
    bool takes_value = false;
    std::string kind;
    std::string help;
};

struct Command {
    std::string path;  // "" for archctl itself, "job show"
    std::vector<std::pair<std::string, std::string>> subs;  // name, summary
    std::vector<Opt> opts;                                 // own options, then the global ones
    std::vector<std::string> positionals;                  // kinds, in order
    bool last_repeats = false;                             // the last positional takes many
};

std::string choices_of(const CLI::Option& o) {
    std::string type = o.get_type_name();
    auto open = type.find('{');
    auto close = type.find('}', open == std::string::npos ? 0 : open);
    if (open == std::string::npos || close == std::string::npos) return "";
    std::string inner = type.substr(open + 1, close - open - 1);
    for (char& c : inner)
        if (c == ',') c = ' ';
    return "choices:" + inner;
}

std::string kind_of(const std::string& path, const CLI::Option& o) {
    std::string name = o.get_name();
    if (name == "--from" || name == "--to" || name == "NODE" || name == "NODES") return "nodes";
    if (name == "JOB") return "jobs";
    if (path == "tier" && name == "NAME") return "policies";
    if (path == "plan" && name == "RES") return "plan-res";
    if (std::string c = choices_of(o); !c.empty()) return c;
    std::string type = o.get_type_name();
    if (type.starts_with("FILE") || type.starts_with("PATH") || name == "--output" || name == "--config") return "files";
    if (type.starts_with("DIR") || name == "--root") return "dirs";
    return "text";
}

Opt option_of(const std::string& path, const CLI::Option& o) {
    Opt out;
    for (const auto& s : o.get_snames()) out.names.push_back("-" + s);
    for (const auto& l : o.get_lnames()) out.names.push_back("--" + l);
    out.takes_value = o.get_expected_max() > 0;  // a flag expects 0 values
    out.kind = out.takes_value ? kind_of(path, o) : "";
    out.help = o.get_description();
    return out;
}

void walk(CLI::App& app, const std::string& path, const std::vector<Opt>& globals, std::vector<Command>& out) {
    Command c;
    c.path = path;
    for (CLI::App* sub : app.get_subcommands({})) c.subs.emplace_back(sub->get_name(), sub->get_description());
    for (const CLI::Option* o : app.get_options({})) {
        if (o->get_group().empty()) continue;  // hidden
        if (o->get_positional() && o->get_lnames().empty() && o->get_snames().empty()) {
            c.positionals.push_back(kind_of(path, *o));
            c.last_repeats = o->get_items_expected_max() > 1;
        } else if (path.empty() || o->get_name() != "--help") {
            c.opts.push_back(option_of(path, *o));
        }
    }
    if (!path.empty()) {
        if (const CLI::Option* help = app.get_help_ptr()) c.opts.push_back(option_of(path, *help));
        c.opts.insert(c.opts.end(), globals.begin(), globals.end());
    }
    out.push_back(c);
    for (CLI::App* sub : app.get_subcommands({}))
        walk(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), globals, out);
}

std::vector<Command> model(CLI::App& root) {
    std::vector<Opt> globals;
    for (const CLI::Option* o : root.get_options({}))
        if (!o->get_group().empty() && !o->get_lnames().empty() && o->get_name() != "--help" && o->get_name() != "--version")
            globals.push_back(option_of("", *o));
    std::vector<Command> out;
    walk(root, "", globals, out);
    return out;
}

std::string names_of(const std::vector<Opt>& opts) {
    std::string out;
    for (const Opt& o : opts)
        for (const auto& n : o.names) out += (out.empty() ? "" : " ") + n;
    return out;
}

std::string sub_names(const Command& c) {
    std::string out;
    for (const auto& [name, summary] : c.subs) out += (out.empty() ? "" : " ") + name;
    return out;
}

std::string single_quoted(const std::string& text) {
    std::string out = "'";
    for (char ch : text) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return out + "'";
}

// The data functions bash and zsh share: subcommands, options, option values, positionals.
std::string sh_data(const std::vector<Command>& cmds) {
    std::string subs = "# Subcommands of a command path.\n_archctl_subs() {\n    case \"$1\" in\n";
    std::string descs = "# Subcommands with their summaries, NAME:SUMMARY a line.\n_archctl_descs() {\n    case \"$1\" in\n";
    std::string opts = "# Options a command path takes (its own and the global ones).\n_archctl_opts() {\n    case \"$1\" in\n";
    std::string kinds =
        "# What the value of option $2 of command path $1 completes to; nothing for a flag.\n_archctl_kind() {\n    case \"$1|$2\" in\n";
    std::string pos = "# What positional argument $2 (from 1) of command path $1 completes to.\n_archctl_pos() {\n    case \"$1|$2\" in\n";
    for (const Command& c : cmds) {
        std::string key = "\"" + c.path + "\"";
        if (!c.subs.empty()) {
            if (c.path.empty())
                subs += fmt::format("        \"\") local commands=\"{}\"; echo \"$commands\" ;;\n", sub_names(c));
            else
                subs += fmt::format("        {}) echo \"{}\" ;;\n", key, sub_names(c));
            descs += fmt::format("        {}) printf '%s\\n'", key);
            for (const auto& [name, summary] : c.subs) descs += " \\\n            " + single_quoted(name + ":" + summary);
            descs += " ;;\n";
        }
        opts += fmt::format("        {}) echo \"{}\" ;;\n", key, names_of(c.opts));
        std::map<std::string, std::vector<std::string>> by_kind;
        for (const Opt& o : c.opts)
            if (o.takes_value)
                for (const auto& n : o.names) by_kind[o.kind].push_back("\"" + c.path + "|" + n + "\"");
        for (const auto& [kind, keys] : by_kind) {
            std::string alts;
            for (const auto& k : keys) alts += (alts.empty() ? "" : "|") + k;
            kinds += fmt::format("        {}) echo \"{}\" ;;\n", alts, kind);
        }
        for (size_t i = 0; i < c.positionals.size(); ++i) {
            bool repeats = c.last_repeats && i + 1 == c.positionals.size();
            pos += fmt::format("        \"{}|{}\"{}) echo \"{}\" ;;\n", c.path, i + 1, repeats ? "|\"" + c.path + "|\"*" : "",
                               c.positionals[i]);
        }
    }
    std::string end = "    esac\n}\n\n";
    return subs + end + descs + end + opts + end + kinds + end + pos + end;
}

// Walks the words before the cursor (bash: 1..cword-1, zsh: 2..CURRENT-1): the command path,
// how many positionals were given, the first one, and the kind of the option value being typed.
std::string sh_walk(const char* first, const char* last, const char* var) {
    return fmt::format(R"SH(    local cmdpath="" valkind="" first="" kind w i npos=0
    for ((i = {0}; i < {1}; i++)); do
        w="${{{2}[i]}}"
        case "$w" in
            --|-*=*) ;;
            -*)
                kind=$(_archctl_kind "$cmdpath" "$w")
                if [ -n "$kind" ]; then
                    ((i + 1 == {1})) && valkind=$kind
                    ((i++))
                fi
                ;;
            *)
                if ((npos == 0)) && [[ " $(_archctl_subs "$cmdpath") " == *" $w "* ]]; then
                    cmdpath="${{cmdpath:+$cmdpath }}$w"
                else
                    ((npos++))
                    ((npos == 1)) && first=$w
                fi
                ;;
        esac
    done
    kind=$valkind
    if [ -z "$kind" ] && [[ "$cur" != -* ]]; then
        if ((npos == 0)) && [ -n "$(_archctl_subs "$cmdpath")" ]; then
            kind=subs
        else
            kind=$(_archctl_pos "$cmdpath" $((npos + 1)))
        fi
    fi
    [ "$kind" = plan-res ] && {{ [ "$first" = tier ] && kind=policies || kind=text; }}
)SH",
                       first, last, var);
}

std::string bash_script(const std::vector<Command>& cmds) {
    std::string out =
        "# bash completion for archctl. Generated by 'archctl completion bash' from the command table:\n"
        "# do not edit; rebuild and copy build/completions/archctl.bash here.\n\n" +
        sh_data(cmds);
    out += R"SH(# Names printed by 'archctl completion --nodes|--jobs|--policies', reading the config and state
# this command line names (--config, --state).
_archctl_names() {
    local args=() i
    for ((i = 1; i < cword; i++)); do
        case "${words[i]}" in
            --config|--state) args+=("${words[i]}" "${words[i+1]}") ;;
            --config=*|--state=*) args+=("${words[i]}") ;;
        esac
    done
    "${words[0]}" "${args[@]}" completion "--$1" 2>/dev/null
}

_archctl() {
    local cur words cword
    cur="${COMP_WORDS[COMP_CWORD]}"
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
)SH" + sh_walk("1", "cword", "words") +
           R"SH(    case "$kind" in
        "") COMPREPLY=($(compgen -W "$(_archctl_opts "$cmdpath")" -- "$cur")) ;;
        subs) COMPREPLY=($(compgen -W "$(_archctl_subs "$cmdpath")" -- "$cur")) ;;
        nodes|jobs|policies) COMPREPLY=($(compgen -W "$(_archctl_names "$kind")" -- "$cur")) ;;
        files) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")) ;;
        dirs) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur")) ;;
        choices:*) COMPREPLY=($(compgen -W "${kind#choices:}" -- "$cur")) ;;
        *) COMPREPLY=() ;;
    esac
}

complete -F _archctl archctl
)SH";
    return out;
}

std::string zsh_script(const std::vector<Command>& cmds) {
    std::string out =
        "#compdef archctl\n"
        "# zsh completion for archctl. Generated by 'archctl completion zsh' from the command table:\n"
        "# do not edit; rebuild and copy build/completions/_archctl here.\n\n" +
        sh_data(cmds);
    out += R"SH(# Names printed by 'archctl completion --nodes|--jobs|--policies', reading the config and state
# this command line names (--config, --state).
_archctl_names() {
    local -a args
    local i
    for ((i = 2; i < CURRENT; i++)); do
        case "${words[i]}" in
            --config|--state) args+=("${words[i]}" "${words[i+1]}") ;;
            --config=*|--state=*) args+=("${words[i]}") ;;
        esac
    done
    "${words[1]}" "${args[@]}" completion "--$1" 2>/dev/null
}

_archctl() {
    local cur="${words[CURRENT]}"
)SH" + sh_walk("2", "CURRENT", "words") +
           R"SH(    local -a list pairs shown
    case "$kind" in
        "") list=(${=$(_archctl_opts "$cmdpath")}); compadd -- $list ;;
        subs)
            pairs=(${(f)"$(_archctl_descs "$cmdpath")"})
            list=(${pairs%%:*})
            shown=(${pairs/:/  -- })
            compadd -l -d shown -- $list
            ;;
        nodes|jobs|policies) list=(${(f)"$(_archctl_names "$kind")"}); compadd -- $list ;;
        files) _files ;;
        dirs) _files -/ ;;
        choices:*) list=(${=kind#choices:}); compadd -- $list ;;
    esac
}

_archctl "$@"
)SH";
    return out;
}

std::string fish_script(const std::vector<Command>& cmds) {
    std::string out =
        "# fish completion for archctl. Generated by 'archctl completion fish' from the command table:\n"
        "# do not edit; rebuild and copy build/completions/archctl.fish here.\n\n";
    std::string subs = "function __archctl_subs\n    switch \"$argv[1]\"\n";
    std::string valued = "function __archctl_valued\n    switch \"$argv[1]\"\n";
    for (const Command& c : cmds) {
        std::string key = single_quoted(c.path);
        if (!c.subs.empty()) subs += fmt::format("        case {}\n            printf '%s\\n' {}\n", key, sub_names(c));
        std::string v;
        for (const Opt& o : c.opts)
            if (o.takes_value)
                for (const auto& n : o.names) v += " " + n;
        if (!v.empty()) valued += fmt::format("        case {}\n            printf '%s\\n'{}\n", key, v);
    }
    out += subs + "    end\nend\n\n" + valued + "    end\nend\n\n";
    out += R"SH(# The command path, how many positionals were given and the first one, one a line (kept for
# the command line it was computed for: every condition below asks).
function __archctl_state
    set -l line (commandline -pc)
    if set -q __archctl_state_cache; and test "$__archctl_state_line" = "$line"
        printf '%s\n' $__archctl_state_cache
        return
    end
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l cmdpath ''
    set -l npos 0
    set -l first ''
    set -l skip 0
    for w in $tokens
        if test $skip = 1
            set skip 0
            continue
        end
        switch $w
            case -- '--' '-*=*'
            case -- '-*'
                if contains -- $w (__archctl_valued "$cmdpath")
                    set skip 1
                end
            case '*'
                if test $npos = 0; and contains -- $w (__archctl_subs "$cmdpath")
                    set cmdpath (string trim -- "$cmdpath $w")
                else
                    set npos (math $npos + 1)
                    test $npos = 1; and set first $w
                end
        end
    end
    set -g __archctl_state_line $line
    set -g __archctl_state_cache "@$cmdpath" $npos "@$first"
    printf '%s\n' $__archctl_state_cache
end

# True when the command path is $argv[1] and, with $argv[2] = N, the next positional is the N-th
# (with +N: the N-th or a later one).
function __archctl_at
    set -l st (__archctl_state)
    test "$st[1]" = "@$argv[1]"; or return 1
    set -q argv[2]; or return 0
    set -l next (math $st[2] + 1)
    if string match -q -- '+*' $argv[2]
        test $next -ge (string sub -s 2 -- $argv[2])
    else
        test $next = $argv[2]
    end
end

function __archctl_first_is
    set -l st (__archctl_state)
    test "$st[3]" = "@$argv[1]"
end

# Names printed by 'archctl completion --nodes|--jobs|--policies' for this command line's
# --config and --state.
function __archctl_names
    set -l tokens (commandline -opc)
    set -l args
    for i in (seq 2 (count $tokens))
        switch $tokens[$i]
            case --config --state
                set -a args $tokens[$i] $tokens[(math $i + 1)]
            case '--config=*' '--state=*'
                set -a args $tokens[$i]
        end
    end
    $tokens[1] $args completion --$argv[1] 2>/dev/null
end

complete -c archctl -f
)SH";
    auto values = [](const std::string& kind) -> std::string {
        if (kind == "nodes" || kind == "jobs" || kind == "policies") return fmt::format(" -f -a '(__archctl_names {})'", kind);
        if (kind == "files" || kind == "dirs") return " -F";
        if (kind.starts_with("choices:")) return " -f -a " + single_quoted(kind.substr(8));
        return " -f";
    };
    for (const Command& c : cmds) {
        std::string cond = fmt::format("__archctl_at \"{}\"", c.path);
        for (const auto& [name, summary] : c.subs)
            out += fmt::format("complete -c archctl -n {} -a {} -d {}\n", single_quoted(cond + " 1"), name, single_quoted(summary));
        for (const Opt& o : c.opts) {
            out += fmt::format("complete -c archctl -n {}", single_quoted(cond));
            for (const auto& n : o.names) out += (n.starts_with("--") ? " -l " + n.substr(2) : " -s " + n.substr(1));
            if (o.takes_value) out += " -r" + values(o.kind);
            out += " -d " + single_quoted(o.help) + "\n";
        }
        for (size_t i = 0; i < c.positionals.size(); ++i) {
            const std::string& kind = c.positionals[i];
            bool repeats = c.last_repeats && i + 1 == c.positionals.size();
            std::string n = (repeats ? "+" : "") + std::to_string(i + 1);
            if (kind == "plan-res") {
                out += fmt::format("complete -c archctl -n {} -f -a '(__archctl_names policies)'\n",
                                   single_quoted(cond + " 2; and __archctl_first_is tier"));
                continue;
            }
            if (kind == "text") continue;
            out += fmt::format("complete -c archctl -n {}{}\n", single_quoted(cond + " " + n), values(kind));
        }
    }
    return out;
}

const char* env_of(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? v : nullptr;
}

// The config file's own tables, read without the layers' checks: a config that does not load
// (usually a secret file only the service's user can read) still names its nodes and policies.
std::optional<toml::table> raw_config(const GlobalOptions& g) {
    std::string path = g.config_file;
    if (path.empty() && env_of("ARCHCTL_CONFIG")) path = env_of("ARCHCTL_CONFIG");
    if (path.empty() && env_of("XDG_CONFIG_HOME")) path = std::string(env_of("XDG_CONFIG_HOME")) + "/archctl/config.toml";
    if (path.empty() && env_of("HOME")) path = std::string(env_of("HOME")) + "/.config/archctl/config.toml";
    if (path.empty()) return std::nullopt;
    try {
        return toml::parse_file(path);
    } catch (const std::exception&) {
        return std::nullopt;  // unreadable or malformed: nothing to complete
    }
}

std::vector<std::string> table_names(const std::optional<toml::table>& raw, const char* table) {
    std::vector<std::string> names;
    if (!raw) return names;
    if (const toml::table* t = (*raw)[table].as_table())
        for (const auto& [key, value] : *t)
            if (value.is_table()) names.emplace_back(key.str());
    return names;
}

std::string raw_state_dir(const GlobalOptions& g, const std::optional<toml::table>& raw) {
    if (!g.state_dir.empty()) return g.state_dir;
    if (env_of("ARCHCTL_STATE")) return env_of("ARCHCTL_STATE");
    if (raw)
        if (auto dir = (*raw)["state_dir"].value<std::string>()) return *dir;
    if (env_of("XDG_STATE_HOME")) return std::string(env_of("XDG_STATE_HOME")) + "/archctl";
    return env_of("HOME") ? std::string(env_of("HOME")) + "/.local/state/archctl" : "";
}

std::vector<std::string> job_ids_in(const std::string& state_dir) {
    std::vector<std::string> ids;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(state_dir + "/jobs", ec))
        if (std::filesystem::exists(entry.path() / "definition.json", ec)) ids.push_back(entry.path().filename().string());
    std::sort(ids.begin(), ids.end());
    return ids;
}

void print_names(Context& ctx, const std::string& what) {
    std::vector<std::string> names;
    auto config = ctx.config();
    if (what == "jobs") {
        auto state = config.ok() ? ctx.state() : Result<const state::StateDir*>(Error(ErrorCode::USAGE, ""));
        auto ids = state.ok() ? state::JobStore(*state.value()).list() : Result<std::vector<std::string>>(Error(ErrorCode::USAGE, ""));
        names = ids.ok() ? ids.value() : job_ids_in(raw_state_dir(ctx.global(), raw_config(ctx.global())));
    } else if (config.ok()) {
        if (what == "nodes")
            for (const auto& [name, node] : config.value()->nodes) names.push_back(name);
        else
            for (const auto& [name, policy] : config.value()->tiers) names.push_back(name);
    } else {
        names = table_names(raw_config(ctx.global()), what == "nodes" ? "nodes" : "tier");
    }
    for (const auto& n : names) std::fprintf(stdout, "%s\n", n.c_str());
}

struct CompletionOptions {
    std::string shell;
    bool nodes = false;
    bool jobs = false;
    bool policies = false;
};

}  // namespace

std::string completion_script(CLI::App& root, const std::string& shell) {
    std::vector<Command> cmds = model(root);
    if (shell == "bash") return bash_script(cmds);
    if (shell == "zsh") return zsh_script(cmds);
    return fish_script(cmds);
}

Runner register_completion(CLI::App& app) {
    auto o = std::make_shared<CompletionOptions>();
    CLI::App* root = app.get_parent();
    app.add_option("SHELL", o->shell, "the shell whose script to print: bash, zsh or fish")
        ->check(CLI::IsMember({"bash", "zsh", "fish"}));
    app.add_flag("--nodes", o->nodes, "print the configured node names, one a line (what the scripts complete)");
    app.add_flag("--jobs", o->jobs, "print the job ids in the state directory, one a line");
    app.add_flag("--policies", o->policies, "print the configured tier policy names, one a line");
    return [o, root](Context& ctx) {
        if (o->nodes || o->jobs || o->policies) {
            // A config or state that does not load completes nothing (never an error at a TAB).
            if (o->nodes) print_names(ctx, "nodes");
            if (o->jobs) print_names(ctx, "jobs");
            if (o->policies) print_names(ctx, "policies");
            return Outcome::done();
        }
        if (o->shell.empty())
            return Outcome::usage(Error(ErrorCode::USAGE, "completion: missing SHELL (bash, zsh or fish)",
                                        "e.g. 'archctl completion bash > ~/.local/share/bash-completion/completions/archctl'"));
        std::string script = completion_script(*root, o->shell);
        std::fputs(script.c_str(), stdout);
        return Outcome::done();
    };
}

}  // namespace archctl::cli
