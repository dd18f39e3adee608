#pragma once
// The node operations by name: the one table of what a request's "op" may say. The server's
// registry (lib/node/server/server.cpp), the client facade (lib/node/client/ops.hpp) and the test
// fakes all read it, so an operation's wire name is written here and nowhere else.
//
// Usage:
//   request.op = std::string(name(Op::tree));
//   if (auto op = parse_op(request.op)) ... else UNKNOWN_OPERATION

#include <array>
#include <optional>
#include <string_view>

namespace archctl::node {

// Every operation a node answers, in one list: X(name), the name as it travels on the wire.
// open_roots is answered by the server itself (server.hpp "Roots"); every other one by its
// handler (lib/node/server/operation.hpp).
#define ARCHCTL_NODE_OPS(X) \
    X(open_roots)           \
    X(info)                 \
    X(space)                \
    X(tree)                 \
    X(write_check)          \
    X(stage)                \
    X(receive_check)        \
    X(merge)                \
    X(merge_record)         \
    X(unmerge)              \
    X(adopt_incomplete)     \
    X(chmod_readable)       \
    X(cleanup)              \
    X(unlink_owned)         \
    X(nonce_write)          \
    X(nonce_observe)        \
    X(partfile_read)        \
    X(partfile_copy)        \
    X(partfile_build)       \
    X(verify_pieces)        \
    X(metainfo_read)

enum class Op {
#define ARCHCTL_NODE_OP_ENUM_(op) op,
    ARCHCTL_NODE_OPS(ARCHCTL_NODE_OP_ENUM_)
#undef ARCHCTL_NODE_OP_ENUM_
};

// Every operation, in the table's order.
inline constexpr std::array k_all_ops = {
#define ARCHCTL_NODE_OP_LIST_(op) Op::op,
    ARCHCTL_NODE_OPS(ARCHCTL_NODE_OP_LIST_)
#undef ARCHCTL_NODE_OP_LIST_
};

// "tree" for Op::tree: the name a request carries.
[[nodiscard]] std::string_view name(Op op);
// The operation a request's name stands for; nullopt for a name this build does not know.
[[nodiscard]] std::optional<Op> parse_op(std::string_view name);

}  // namespace archctl::node
