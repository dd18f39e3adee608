// nonce_write / nonce_observe: the small files a route check exchanges (DESIGN.md §6).
//
// Crash points: nonce.written (plus lib/base's atomic.* points of the write).

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/node/file_ops.hpp"
#include "lib/node/operation.hpp"
#include "lib/node/ops.hpp"

namespace archctl::node {
namespace {
constexpr std::size_t k_max_nonce_bytes = 64u << 10;
}

using nlohmann::json;

Result<json> op_nonce_write(OpContext& ctx, const json& args) {
    auto request = args.get<NonceWriteRequest>();
    const std::string& path = request.path;
    if (request.content.size() > k_max_nonce_bytes)
        return Error(ErrorCode::BAD_REQUEST, fmt::format("cannot write nonce '{}': content is larger than 64 KiB", path));
    CreateDirs create = request.create_parents ? CreateDirs::yes : CreateDirs::no;
    ARCHCTL_TRY_ASSIGN(RootSet::Parent parent, ctx.roots().open_parent(path, create));
    ARCHCTL_TRY_STATUS(write_atomic_in(parent.dir.get(), parent.name, request.content, path));
    crash_point("nonce.written");
    return json(NonceWriteResult{path, request.content.size()});
}

Result<json> op_nonce_observe(OpContext& ctx, const json& args) {
    auto request = args.get<NonceObserveRequest>();
    const std::string& path = request.path;
    const json absent = NonceObserveResult{path, false, ""};
    auto parent = ctx.roots().open_parent(path);
    if (!parent.ok()) {
        if (parent.error().is(ErrorCode::NOT_FOUND)) return absent;
        return parent.take_error();
    }
    ARCHCTL_TRY_ASSIGN(auto st, stat_in(parent.value().dir.get(), parent.value().name, path));
    if (!st) return absent;
    ARCHCTL_TRY_ASSIGN(std::string content, read_small_in(parent.value().dir.get(), parent.value().name, path, k_max_nonce_bytes));
    return json(NonceObserveResult{path, true, content});
}

}  // namespace archctl::node
