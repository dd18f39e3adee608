#include "lib/node/wire/op_names.hpp"

namespace archctl::node {

std::string_view name(Op op) {
    switch (op) {
#define ARCHCTL_NODE_OP_NAME_(op) \
    case Op::op: return #op;
        ARCHCTL_NODE_OPS(ARCHCTL_NODE_OP_NAME_)
#undef ARCHCTL_NODE_OP_NAME_
    }
    return "unknown";
}

std::optional<Op> parse_op(std::string_view text) {
    for (Op op : k_all_ops)
        if (name(op) == text) return op;
    return std::nullopt;
}

}  // namespace archctl::node
