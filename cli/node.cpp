// archctl node: plumbing for node operations.
//
//   archctl node serve [--root DIR ...]              the exec transport's far end: node protocol
//                                                     lines on stdin/stdout until EOF; without
//                                                     --root the caller's open_roots names them
//   archctl node info --root DIR [--root DIR ...]    roots, free space and proven capabilities
//   archctl node check NODE                          one configured node proven end to end

#include <unistd.h>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/services.hpp"
#include "lib/base/signals.hpp"
#include "lib/base/units.hpp"
#include "lib/node/client/ops.hpp"
#include "lib/node/client/transport.hpp"
#include "lib/node/server/server.hpp"
#include "lib/session/node_probe.hpp"
#include "lib/session/node_session.hpp"

namespace archctl::cli {

struct NodeOptions {
    std::vector<std::string> serve_roots;
    std::vector<std::string> info_roots;
    std::string check_node;
};

namespace {

Outcome run_node_serve(Context&, const NodeOptions& options) {
    std::optional<node::Server> server;
    if (options.serve_roots.empty()) {
        server.emplace(node::Server::CallerRoots{});
    } else {
        auto roots = node::RootSet::open(options.serve_roots);
        if (!roots.ok()) return Outcome::failed(roots.take_error());
        server.emplace(std::move(roots).value());
    }
    // The first interrupt stops the running operation at its next chunk (state stays resumable).
    install_interrupt_handlers();
    auto served = server->serve(STDIN_FILENO, STDOUT_FILENO);
    if (!served.ok()) return Outcome::failed(served.take_error());
    return Outcome::done();
}

// A root as `node info` shows it: path, filesystem, free space and proven capabilities.
std::string describe_root(const node::DirectoryInfo& d) {
    const node::Capabilities& c = d.root.capabilities;
    auto yes_no = [](bool v) { return v ? "yes" : "no"; };
    std::string text = fmt::format("{}\n  filesystem  {} (id {})\n  free        {} of {}\n  hardlink {}  reflink {}  copy_file_range {}  sparse {}\n",
                                   d.root.path, d.root.fs_type, d.root.fs_id, format_size(d.free_bytes.value_or(0)),
                                   format_size(d.total_bytes.value_or(0)), yes_no(c.hardlink), yes_no(c.reflink),
                                   yes_no(c.copy_file_range), yes_no(c.sparse));
    if (!c.probe_error.empty()) text += fmt::format("  probe failed: {}\n", c.probe_error);
    return text;
}

Outcome run_node_info(Context& ctx, const NodeOptions& options) {
    auto transport = node::connect_local("local", options.info_roots);
    if (!transport.ok()) return Outcome::failed(transport.take_error());
    auto info = node::Ops(**transport).info();
    if (!info.ok()) return Outcome::failed(info.take_error());
    std::string text;
    for (const auto& r : info->roots) text += describe_root(r);
    if (!text.empty()) text.pop_back();
    ctx.out().result(text);
    return Outcome::done(nlohmann::json(info.value()));
}

Outcome run_node_check(Context& ctx, const NodeOptions& options) {
    auto config = ctx.config();
    if (!config.ok()) return Outcome::failed(config.take_error());
    // A check tries the credentials even when an earlier command's login was refused: the user
    // asked. A refusal now is remembered again.
    clients::Tuning tuning = session::probe_tuning();
    if (auto state = ctx.state(); state.ok()) {
        Output& out = ctx.out();
        tuning.logins = login_records(*state.value(), [&out](const std::string& line) { out.warn(line); });
        tuning.logins->forget(options.check_node);
    }
    session::NodeSessions sessions(*config.value(), tuning);
    auto node = sessions.get(options.check_node);
    if (!node.ok()) return Outcome::failed(node.take_error());
    const session::NodeCheck check = session::check_node(*node.value());
    std::size_t width = 0;
    for (const auto& c : check.checks) width = std::max(width, c.check.size());
    std::string text;
    std::size_t failures = 0;
    for (const auto& c : check.checks) {
        std::string cause = c.ok ? c.detail : (c.error ? session::one_line_cause(*c.error) : "failed");
        text += fmt::format("{:<4}  {:<{}}  {}\n", c.ok ? "ok" : "FAIL", c.check, width, cause);
        // A hint that is only the far end's one line is already in the cause.
        const bool said_only = c.error && c.error->hint.find('\n') == std::string::npos &&
                               c.error->hint.rfind("node '", 0) == 0 && c.error->hint.find(" said: ") != std::string::npos;
        if (!c.ok && c.error && !c.error->hint.empty() && !said_only) {
            std::string hint = c.error->hint;
            const std::string pad(6 + width + 2 + 6, ' ');  // under the hint's first line
            for (std::size_t at = 0; (at = hint.find('\n', at)) != std::string::npos; at += 1) hint.insert(at + 1, pad);
            text += fmt::format("      {:<{}}  hint: {}\n", "", width, hint);
        }
        if (!c.ok) ++failures;
    }
    if (!text.empty()) text.pop_back();
    ctx.out().result(text);
    nlohmann::json result = session::to_json(check);
    if (check.ok()) return Outcome::done(result);
    return Outcome::failed(Error(ErrorCode::NODES_UNREACHABLE,
                                 fmt::format("node '{}' failed {} of {} checks", check.name, failures, check.checks.size()),
                                 "fix the causes shown above, then run 'archctl node check " + check.name + "' again"),
                           result);
}

}  // namespace

Runner register_node(CLI::App& app) {
    auto options = std::make_shared<NodeOptions>();
    app.require_subcommand(1);
    CLI::App* serve = app.add_subcommand("serve", "speak the node protocol on stdin/stdout (the exec transport's far end)");
    serve->add_option("--root", options->serve_roots,
                      "a directory this node serves; every request path must lie below one (default: the roots the caller names)")
        ->type_name("DIR");
    CLI::App* info = app.add_subcommand("info", "show roots, free space and proven link/reflink capabilities");
    info->add_option("--root", options->info_roots, "a directory to describe")->type_name("DIR")->required();
    CLI::App* check = app.add_subcommand("check", "prove a configured node end to end: transport, version, roots writable, qBittorrent, Syncthing");
    check->add_option("NODE", options->check_node, "a configured node")->required();
    check->footer("Exit status: 0 when every check passed, 1 otherwise.");
    return [options, serve, info, check](Context& ctx) {
        if (serve->parsed()) return run_node_serve(ctx, *options);
        if (info->parsed()) return run_node_info(ctx, *options);
        if (check->parsed()) return run_node_check(ctx, *options);
        return Outcome::usage(Error(ErrorCode::USAGE, "missing node subcommand", "see 'archctl node --help'"));
    };
}

}  // namespace archctl::cli
