// archctl: build the app from the command table, dispatch, map the outcome to an exit code.
// This is the one place that turns outcomes into exit codes (0 done, 10 clean partial stop,
// 1 error, 2 usage) and prints the single --json document.

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/command_table.hpp"
#include "lib/base/json_member.hpp"
#include "lib/base/signals.hpp"
#include "lib/base/text.hpp"
#include "lib/base/units.hpp"
#include "lib/base/version.hpp"

namespace archctl::cli {
namespace {

constexpr int k_exit_done = 0;
constexpr int k_exit_error = 1;
constexpr int k_exit_usage = 2;
constexpr int k_exit_partial = 10;

int exit_code(ExitKind kind) {
    switch (kind) {
        case ExitKind::done: return k_exit_done;
        case ExitKind::partial: return k_exit_partial;
        case ExitKind::error: return k_exit_error;
        case ExitKind::usage: return k_exit_usage;
    }
    return k_exit_error;
}

void add_global_options(CLI::App& app, GlobalOptions& g) {
    app.add_option("--config", g.config_file, "use FILE instead of the user config file")->type_name("FILE");
    app.add_option("--state", g.state_dir, "state directory (default $XDG_STATE_HOME/archctl)")->type_name("DIR");
    app.add_flag("--json", g.json, "print one JSON document on stdout (human text goes to stderr)");
    app.add_flag("-q,--quiet", g.quiet, "print only results and errors");
    app.add_flag("-v,--verbose", g.verbose, "more detail (repeatable)");
}

void allow_global_options_everywhere(CLI::App& app) {
    for (CLI::App* sub : app.get_subcommands({})) {
        if (sub->get_prefix_command()) continue;  // an unavailable command keeps every argument
        sub->fallthrough();
        allow_global_options_everywhere(*sub);
    }
}

// What the command table says the command needs, set up before it runs. A command's
// --min-free is the flag layer of the configuration, so it is read first.
Outcome set_up(Context& ctx, CLI::App& command, Needs needs) {
    if (const CLI::Option* floor = command.get_option_no_throw("--min-free"); floor && floor->count() > 0) {
        auto bytes = parse_size(floor->as<std::string>());
        if (!bytes.ok()) return Outcome::failed(bytes.take_error());
        ctx.set_flag_min_free(bytes.value());
    }
    Status ready = ctx.prepare(needs);
    if (!ready.ok()) return Outcome::failed(ready.take_error());
    return Outcome::done();
}

void print_human(const Outcome& o) {
    if (o.kind == ExitKind::partial) {
        std::fprintf(stderr, "archctl: stopped: %s\n", terminal_text(o.stop_reason).c_str());
        if (!o.resume_hint.empty()) std::fprintf(stderr, "hint: %s\n", terminal_text(o.resume_hint).c_str());
    } else if (o.error) {
        std::fprintf(stderr, "archctl: error: %s\n", terminal_text(o.error->message).c_str());
        if (!o.error->hint.empty()) std::fprintf(stderr, "hint: %s\n", terminal_text(o.error->hint).c_str());
    }
}

// An error of the --json document: one line in "message"; the lines a multi-line message
// continues with (a table of missing files, notes) as an array in "details".
nlohmann::json error_json(const Error& error) {
    std::size_t nl = error.message.find('\n');
    nlohmann::json e = {{"code", error.code}, {"message", error.message.substr(0, nl)}};
    if (nl != std::string::npos) {
        nlohmann::json details = nlohmann::json::array();
        std::size_t at = nl + 1;
        while (at <= error.message.size()) {
            std::size_t end = error.message.find('\n', at);
            std::string line = error.message.substr(at, end == std::string::npos ? std::string::npos : end - at);
            while (!line.empty() && line.back() == ' ') line.pop_back();
            std::size_t first = line.find_first_not_of(' ');
            if (first != std::string::npos) details.push_back(line.substr(first));
            if (end == std::string::npos) break;
            at = end + 1;
        }
        e["details"] = details;
    }
    if (!error.hint.empty()) e["hint"] = error.hint;
    return e;
}

// NOT_COVERED: the files no archive copy proves, from the document's coverage (evict's or
// plan evict's): [{index, path, size, refused: [why each archive copy does not count]}].
nlohmann::json missing_files(const nlohmann::json& result) {
    const nlohmann::json* coverage = nullptr;
    if (result.contains("evict") && result["evict"].is_object() && result["evict"].contains("coverage")) coverage = &result["evict"]["coverage"];
    else if (result.contains("coverage")) coverage = &result["coverage"];
    nlohmann::json out = nlohmann::json::array();
    if (coverage == nullptr || !coverage->is_object()) return out;
    for (const auto& f : member_or_empty(*coverage, "files"))
        if (f.value("nodes", nlohmann::json::array()).empty())
            out.push_back({{"index", f.value("index", 0)}, {"path", f.value("path", "")}, {"size", f.value("size", 0)},
                           {"refused", f.value("refused", nlohmann::json::array())}});
    return out;
}

// The document as doc.dump(2) would print it with the streamed members in their key order.
void print_streamed(const nlohmann::json& doc, const std::map<std::string, std::function<void(std::FILE*)>>& streamed) {
    std::map<std::string, std::function<void(std::FILE*)>> members = streamed;
    for (const auto& [key, value] : doc.items()) {
        if (members.count(key) != 0) continue;
        members[key] = [&value](std::FILE* out) {
            std::string text = dump_json(value, 2);
            for (char c : text) {
                std::fputc(c, out);
                if (c == '\n') std::fputs("  ", out);
            }
        };
    }
    std::fputs("{", stdout);
    const char* separator = "\n";
    for (const auto& [key, write] : members) {
        std::fprintf(stdout, "%s  %s: ", separator, dump_json(nlohmann::json(key)).c_str());
        write(stdout);
        separator = ",\n";
    }
    std::fputs("\n}\n", stdout);
    std::fflush(stdout);
}

void print_json(const Outcome& o, const std::string& command) {
    nlohmann::json doc = {{"schema", 1}, {"ok", !o.error.has_value()}, {"exit_code", exit_code(o.kind)}};
    if (!command.empty()) doc["command"] = command;
    if (o.result.is_object())
        for (auto& [k, v] : o.result.items())
            if (!doc.contains(k)) doc[k] = v;
    if (o.kind == ExitKind::partial) doc["stopped"] = {{"reason", o.stop_reason}, {"hint", o.resume_hint}};
    if (o.error) {
        nlohmann::json e = error_json(*o.error);
        if (o.error->code == "NOT_COVERED") e["missing"] = missing_files(o.result);
        doc["error"] = e;
    }
    if (!o.streamed.empty()) return print_streamed(doc, o.streamed);
    std::string text = dump_json(doc, 2);
    std::fprintf(stdout, "%s\n", text.c_str());
    std::fflush(stdout);
}

int finish(const Outcome& o, bool json, const std::string& command) {
    print_human(o);
    if (json) print_json(o, command);
    return exit_code(o.kind);
}

bool argv_has(int argc, char** argv, const char* flag) {
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], flag) == 0) return true;
    return false;
}

bool argv_has_json(int argc, char** argv) { return argv_has(argc, argv, "--json"); }

std::string command_path(CLI::App& app) {
    std::string path;
    CLI::App* cur = &app;
    for (;;) {
        auto subs = cur->get_subcommands();
        if (subs.empty()) break;
        cur = subs.front();
        path += (path.empty() ? "" : " ") + cur->get_name();
    }
    return path;
}

// The deepest subcommand the parser chose (the app itself when none).
CLI::App* chosen_command(CLI::App& app) {
    CLI::App* cur = &app;
    while (!cur->get_subcommands().empty()) cur = cur->get_subcommands().front();
    return cur;
}

// The first argument the parser could not place, on the chosen command or any command above it.
std::optional<std::string> first_unexpected(CLI::App& app) {
    for (CLI::App* cur = &app;; cur = cur->get_subcommands().front()) {
        auto left = cur->remaining();
        for (const auto& arg : left)
            if (arg != "--") return arg;
        if (cur->get_subcommands().empty()) return std::nullopt;
    }
}

// CLI11 begins its messages with a capital ("The following arguments…") or with an option's
// name ("RES is required", "OPERATION: …"): lower-case only the first, never a name.
std::string lower_first_word(std::string message) {
    std::size_t end = message.find_first_of(" :");
    std::string_view word = std::string_view(message).substr(0, end);
    bool capitalised = !word.empty() && std::isupper(static_cast<unsigned char>(word[0])) &&
                       std::none_of(word.begin() + 1, word.end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)); });
    if (capitalised) message[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(message[0])));
    return message;
}

// CLI11's message, in the project's style, naming the command whose help to read. An argument
// the command does not know is reported before a missing one: `archive --bogus` is about
// --bogus, not about RES.
Error usage_error(CLI::App& app, const CLI::ParseError& e) {
    std::string command = command_path(app);
    std::string hint = fmt::format("see 'archctl {}--help'", command.empty() ? "" : command + " ");
    std::string full = command.empty() ? std::string("archctl") : command;
    if (command.empty() && dynamic_cast<const CLI::ExtrasError*>(&e) && !app.remaining().empty()) {
        std::string first = app.remaining().front();
        bool option = first.size() > 1 && first[0] == '-';
        return Error(ErrorCode::USAGE, fmt::format("unknown {} '{}'", option ? "option" : "command", first),
                     "see 'archctl --help'");
    }
    if (auto extra = first_unexpected(app)) {
        bool option = extra->size() > 1 && (*extra)[0] == '-';
        return Error(ErrorCode::USAGE,
                     fmt::format("{}: {} '{}'", full, option ? "unknown option" : "unexpected argument", *extra), hint);
    }
    if (dynamic_cast<const CLI::RequiredError*>(&e)) {
        std::string what = e.what();
        constexpr std::string_view k_suffix = " is required";
        if (what.size() > k_suffix.size() && what.ends_with(k_suffix)) {
            std::string name = what.substr(0, what.size() - k_suffix.size());
            const CLI::Option* opt = chosen_command(app)->get_option_no_throw(name);
            if (opt != nullptr) {
                std::string about = opt->get_description();
                return Error(ErrorCode::USAGE,
                             about.empty() ? fmt::format("{}: missing {}", full, name)
                                           : fmt::format("{}: missing {} ({})", full, name, about),
                             hint);
            }
        }
    }
    return Error(ErrorCode::USAGE, fmt::format("{}: {}", full, lower_first_word(e.what())), hint);
}

int run(int argc, char** argv) {
    CLI::App app{"archctl moves BitTorrent payloads between qBittorrent nodes over Syncthing routes.\n"
                 "Every command is idempotent: rerun it and it continues from what is durably true.",
                 "archctl"};
    app.set_version_flag("--version", fmt::format("archctl {}", k_version));
    app.require_subcommand(0, 1);
    GlobalOptions global;
    add_global_options(app, global);

    std::map<CLI::App*, std::pair<Runner, Needs>> runners;
    for (const CommandSpec& spec : command_table()) {
        CLI::App* sub = app.add_subcommand(spec.name, spec.summary);
        sub->group(spec.group == Group::porcelain ? "Porcelain commands" : "Plumbing commands");
        runners[sub] = {spec.register_fn(*sub), spec.needs};
    }
    allow_global_options_everywhere(app);

    // `archctl help [COMMAND...]` is `archctl [COMMAND...] --help`, as in git.
    std::vector<char*> args(argv, argv + argc);
    static char help_flag[] = "--help";
    if (args.size() >= 2 && std::strcmp(args[1], "help") == 0) {
        args.erase(args.begin() + 1);
        // An unknown command stays one: the parse below names it.
        bool known = args.size() == 1;
        for (const CommandSpec& spec : command_table()) known = known || std::string_view(spec.name) == args[1];
        if (known) args.push_back(help_flag);
    }
    if (argv_has(argc, argv, "--version") && argv_has_json(argc, argv)) {
        std::fprintf(stdout, "%s\n", nlohmann::json({{"schema", 1}, {"ok", true}, {"version", k_version}}).dump(2).c_str());
        return 0;
    }
    try {
        app.parse(static_cast<int>(args.size()), args.data());
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
        return finish(Outcome::usage(usage_error(app, e)), argv_has_json(argc, argv), "");
    }

    if (app.get_subcommands().empty()) {
        std::fputs(app.help().c_str(), stderr);
        return k_exit_usage;
    }
    CLI::App* chosen = app.get_subcommands().front();
    if (chosen->get_prefix_command()) global.json = global.json || argv_has_json(argc, argv);
    // A command with nested subcommands (route, job, node, torrent) registers one runner for all.
    Output out(global.json, global.quiet, global.verbose);
    Context ctx(global, out);
    install_interrupt_handlers();
    const auto& [runner, needs] = runners.at(chosen);
    Outcome outcome = set_up(ctx, *chosen, needs);
    if (!outcome.error) outcome = runner(ctx);
    return finish(outcome, global.json, command_path(app));
}

}  // namespace
}  // namespace archctl::cli

int main(int argc, char** argv) {
    try {
        return archctl::cli::run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "archctl: error: internal error: %s\n", e.what());
        return 1;
    }
}
