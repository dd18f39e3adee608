// archctl node: plumbing for node operations.
//
//   archctl node serve --root DIR [--root DIR ...]   the exec transport's far end: node protocol
//                                                     lines on stdin/stdout until EOF
//   archctl node info --root DIR [--root DIR ...]    roots, free space and proven capabilities

#include <unistd.h>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "lib/base/signals.hpp"
#include "lib/base/units.hpp"
#include "lib/node/server.hpp"
#include "lib/node/transport.hpp"

namespace archctl::cli {

struct NodeOptions {
    std::vector<std::string> serve_roots;
    std::vector<std::string> info_roots;
};

namespace {

Outcome run_node_serve(Context&, const NodeOptions& options) {
    auto roots = node::RootSet::open(options.serve_roots);
    if (!roots.ok()) return Outcome::failed(roots.take_error());
    // The first interrupt stops the running operation at its next chunk (state stays resumable).
    install_interrupt_handlers();
    node::Server server(std::move(roots).value());
    auto served = server.serve(STDIN_FILENO, STDOUT_FILENO);
    if (!served.ok()) return Outcome::failed(served.take_error());
    return Outcome::done();
}

Outcome run_node_info(Context& ctx, const NodeOptions& options) {
    auto transport = node::connect_local("local", options.info_roots);
    if (!transport.ok()) return Outcome::failed(transport.take_error());
    auto info = node::call_operation(**transport, "info");
    if (!info.ok()) return Outcome::failed(info.take_error());
    nlohmann::json result = std::move(info).value();
    result.erase("io");
    std::string text;
    for (const auto& r : result["roots"]) {
        const auto& c = r["capabilities"];
        auto yes_no = [&](const char* key) { return c.value(key, false) ? "yes" : "no"; };
        text += fmt::format("{}\n  filesystem  {} (id {})\n  free        {} of {}\n  hardlink {}  reflink {}  copy_file_range {}  sparse {}\n",
                            r.value("path", ""), r.value("fs_type", ""), r.value("fs_id", ""),
                            format_size(r.value("free_bytes", std::uint64_t{0})),
                            format_size(r.value("total_bytes", std::uint64_t{0})), yes_no("hardlink"),
                            yes_no("reflink"), yes_no("copy_file_range"), yes_no("sparse"));
        if (c.contains("probe_error")) text += fmt::format("  probe failed: {}\n", c.value("probe_error", ""));
    }
    if (!text.empty()) text.pop_back();
    ctx.out().result(text);
    return Outcome::done(result);
}

}  // namespace

Runner register_node(CLI::App& app) {
    auto options = std::make_shared<NodeOptions>();
    app.require_subcommand(1);
    CLI::App* serve = app.add_subcommand("serve", "speak the node protocol on stdin/stdout (the exec transport's far end)");
    serve->add_option("--root", options->serve_roots, "a directory this node serves; every request path must lie below one")
        ->type_name("DIR")
        ->required();
    CLI::App* info = app.add_subcommand("info", "show roots, free space and proven link/reflink capabilities");
    info->add_option("--root", options->info_roots, "a directory to describe")->type_name("DIR")->required();
    return [options, serve, info](Context& ctx) {
        if (serve->parsed()) return run_node_serve(ctx, *options);
        if (info->parsed()) return run_node_info(ctx, *options);
        return Outcome::usage(Error(ErrorCode::USAGE, "missing node subcommand", "see 'archctl node --help'"));
    };
}

}  // namespace archctl::cli
