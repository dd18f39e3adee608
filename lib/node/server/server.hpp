#pragma once
// Server: the node end of the protocol (protocol.hpp) over a set of confined roots.
//
// handle() runs one request to completion; serve() speaks JSON lines on a pair of descriptors
// (`archctl node serve` uses stdin/stdout): it writes the hello line, then reads requests and
// cancel lines on one thread while a worker runs the requests in order, until the input ends
// and every queued request is answered. Nothing but protocol lines is ever written to the output.
// A caller that disappears (write fails) cancels the running operation at its next chunk.
//
// Roots: a server built with fixed roots (`node serve --root DIR...`, the local transport) serves
// exactly those. One built with CallerRoots (`node serve` without --root) serves none until
// the caller's `open_roots` request names them (the control side sends its configured qb_root and
// sync_root right after the hello); from then on they are enforced exactly like fixed ones. With
// fixed roots, `open_roots` is accepted only when every root it names lies at or below one of
// them (a request naming any other directory is refused, PATH_OUTSIDE_ROOT).

#include <atomic>
#include <memory>
#include <optional>

#include "lib/base/result.hpp"
#include "lib/node/server/operation.hpp"
#include "lib/node/server/root_set.hpp"
#include "lib/node/wire/ops_inspect.hpp"
#include "lib/node/wire/protocol.hpp"

namespace archctl::node {

class Server {
public:
    // Serves exactly `roots`.
    explicit Server(RootSet roots);
    // Serves the roots the caller names in its `open_roots` request.
    struct CallerRoots {};
    explicit Server(CallerRoots);

    // The hello record (roots probed on first use).
    const Hello& hello();
    // Runs one request. Progress goes to `emit`; `cancel` is polled at chunk boundaries.
    [[nodiscard]] Response handle(Request request, const ProgressFn& emit, const std::atomic<bool>& cancel);
    // Serves JSON lines until `in_fd` reaches EOF. Errors only when the output cannot be written.
    [[nodiscard]] Status serve(int in_fd, int out_fd);

    const RootSet& roots() const { return m_roots; }

private:
    Server(RootSet roots, bool fixed);
    [[nodiscard]] Result<OpenRootsResult> open_roots(const OpenRootsRequest& request);
    // The result of one request: open_roots, the operation it names, or why it cannot run.
    // Hands the request's arguments to the operation, which may let them go once it has read them.
    [[nodiscard]] Result<nlohmann::json> dispatch(Request& request, const ProgressFn& emit, const std::atomic<bool>& cancel);

    RootSet m_roots;
    bool m_fixed = true;   // roots from --root (or the local transport), never replaced
    bool m_opened = true;  // false until a CallerRoots server is told its roots
    NodeState m_state;
    std::optional<Hello> m_hello;
};

}  // namespace archctl::node
