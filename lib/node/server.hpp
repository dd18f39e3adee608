#pragma once
// Server: the node end of the protocol (protocol.hpp) over a set of confined roots.
//
// handle() runs one request to completion; serve() speaks JSON lines on a pair of descriptors
// (`archctl node serve` uses stdin/stdout): it writes the hello line, then reads requests and
// cancel lines on one thread while a worker runs the requests in order, until the input ends
// and every queued request is answered. Nothing but protocol lines is ever written to the output.
// A caller that disappears (write fails) cancels the running operation at its next chunk.

#include <atomic>
#include <memory>
#include <optional>

#include "lib/base/result.hpp"
#include "lib/node/operation.hpp"
#include "lib/node/protocol.hpp"
#include "lib/node/root_set.hpp"

namespace archctl::node {

class Server {
public:
    explicit Server(RootSet roots);

    // The hello record (roots probed on first use).
    const Hello& hello();
    // Runs one request. Progress goes to `emit`; `cancel` is polled at chunk boundaries.
    [[nodiscard]] Response handle(const Request& request, const ProgressFn& emit, const std::atomic<bool>& cancel);
    // Serves JSON lines until `in_fd` reaches EOF. Errors only when the output cannot be written.
    [[nodiscard]] Status serve(int in_fd, int out_fd);

    const RootSet& roots() const { return m_roots; }

private:
    RootSet m_roots;
    NodeState m_state;
    std::optional<Hello> m_hello;
};

}  // namespace archctl::node
