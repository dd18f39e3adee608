#pragma once
// Transports: how the control side reaches a node (docs/design.md "Where things run"). One interface, two kinds:
//
//   local  the node's operations run in this process, through the same JSON request, progress
//          and response lines as the wire (each message is encoded and decoded), so behaviour is
//          identical to exec;
//   exec   a configured argv (e.g. ["ssh","nas","archctl","node","serve"]) is spawned without a
//          shell and spoken to over its stdin/stdout; after its hello the node's roots (qb_root,
//          sync_root) are sent in an `open_roots` request, which the far end enforces as it does
//          `--root`; its stderr is captured and its tail quoted when the far end dies.
//
// Usage (callers normally go through the typed facade, lib/node/client/ops.hpp):
//   auto t = connect_exec({.node_name = "nas", .argv = {...}});
//   auto r = call_operation(**t, Op::tree, {{"base", "/srv/a/x"}, {"paths", {"f"}}});
//   auto typed = Ops(**t).tree({.base = "/srv/a/x", .paths = {"f"}});
//
// A transport runs one call at a time. cancel() may be called from any thread, including from
// a ProgressSink callback (the usual way to enforce a byte budget while an operation runs).

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/process.hpp"
#include "lib/base/result.hpp"
#include "lib/node/wire/op_names.hpp"
#include "lib/node/wire/protocol.hpp"

namespace archctl::node {

class ProgressSink {
public:
    virtual ~ProgressSink() = default;
    virtual void on_progress(const Progress& progress) = 0;
};

class Transport {
public:
    virtual ~Transport() = default;

    virtual const std::string& node_name() const = 0;
    virtual const Hello& hello() const = 0;
    // Sends `request` (id 0 = assign the next one) and waits for its response. Errors are
    // transport failures (NODE_UNREACHABLE, PROTOCOL); an operation's own failure is a Response
    // with ok == false. The request is taken: its arguments (a 100,000-file stage request is tens
    // of megabytes as a document) are let go once encoded, not held while the node works.
    [[nodiscard]] virtual Result<Response> call(Request request, ProgressSink* sink = nullptr) = 0;
    // Asks the running call to stop at its next chunk boundary; no effect when idle.
    virtual void cancel() = 0;
    // True once the transport cannot carry another call (its far end died, or went silent past
    // the timeout and was killed): every later call fails at once, and a new connection is
    // needed. A local transport never breaks.
    [[nodiscard]] virtual bool broken() const { return false; }
};

// call() and flatten: the result object of an ok response (with the node's read counters under
// "io"), the response's error otherwise.
[[nodiscard]] Result<nlohmann::json> call_operation(Transport& transport, Op op, nlohmann::json args = nlohmann::json::object(),
                                                    ProgressSink* sink = nullptr);
// The same by the operation's wire name, which need not be one this build knows (the far end
// answers UNKNOWN_OPERATION).
[[nodiscard]] Result<nlohmann::json> call_operation(Transport& transport, const std::string& op,
                                                    nlohmann::json args = nlohmann::json::object(),
                                                    ProgressSink* sink = nullptr);

// In-process node over `roots` (for a local node: its configured qb_root and sync_root).
[[nodiscard]] Result<std::unique_ptr<Transport>> connect_local(std::string node_name, const std::vector<std::string>& roots);

struct ExecOptions {
    std::string node_name;
    std::vector<std::string> argv;        // program and arguments; no shell
    std::vector<std::string> extra_env;   // "NAME=value" added to the child's environment
    // The roots to open on the far end after its hello (none: the far end's own --root set).
    // A far end from before open_roots keeps its --root set.
    std::vector<std::string> roots;
    // The longest the far end may stay silent: before its hello, and during a call between two
    // of its lines (`node serve` sends a keepalive every second while an operation runs). Past
    // it the child's process group is killed and the call fails. The node's `timeout` setting.
    std::chrono::seconds timeout{20};
};

// Spawns the far end and reads its hello. Errors: NODE_UNREACHABLE (could not start, died, or
// sent no hello in time; also from a call whose far end dies or goes silent past the timeout),
// PROTOCOL_MISMATCH (another protocol version); the far end's refusal of `roots` (e.g.
// PATH_OUTSIDE_ROOT, NOT_FOUND) with the node named.
[[nodiscard]] Result<std::unique_ptr<Transport>> connect_exec(const ExecOptions& options);

// The last lines of a far end's stderr as a hint: at most `max_lines` lines and `max_bytes`
// bytes, blank lines dropped, each line indented below "node 'NAME' said:". Empty when it said
// nothing.
[[nodiscard]] std::string stderr_tail_hint(const std::string& node_name, std::string_view said,
                                           std::size_t max_lines = 20, std::size_t max_bytes = 4096);

}  // namespace archctl::node
