// nonce_write / nonce_observe: the small files a route check exchanges (DESIGN.md §6).
//
// Crash points: nonce.written (plus lib/base's atomic.* points of the write).

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/node/file_ops.hpp"
#include "lib/node/operation.hpp"

namespace archctl::node {
namespace {
constexpr std::size_t k_max_nonce_bytes = 64u << 10;
}

using nlohmann::json;

Result<json> op_nonce_write(OpContext& ctx, const json& args) {
    std::string path = args.at("path").get<std::string>();
    std::string content = args.at("content").get<std::string>();
    if (content.size() > k_max_nonce_bytes)
        return Error("BAD_REQUEST", fmt::format("cannot write nonce '{}': content is larger than 64 KiB", path));
    CreateDirs create = args.value("create_parents", false) ? CreateDirs::yes : CreateDirs::no;
    ARCHCTL_TRY_ASSIGN(RootSet::Parent parent, ctx.roots().open_parent(path, create));
    ARCHCTL_TRY_STATUS(write_atomic_in(parent.dir.get(), parent.name, content, path));
    crash_point("nonce.written");
    return json{{"path", path}, {"size", content.size()}};
}

Result<json> op_nonce_observe(OpContext& ctx, const json& args) {
    std::string path = args.at("path").get<std::string>();
    auto parent = ctx.roots().open_parent(path);
    if (!parent.ok()) {
        if (parent.error().code == "NOT_FOUND") return json{{"path", path}, {"present", false}};
        return parent.take_error();
    }
    ARCHCTL_TRY_ASSIGN(auto st, stat_in(parent.value().dir.get(), parent.value().name, path));
    if (!st) return json{{"path", path}, {"present", false}};
    ARCHCTL_TRY_ASSIGN(std::string content, read_small_in(parent.value().dir.get(), parent.value().name, path, k_max_nonce_bytes));
    return json{{"path", path}, {"present", true}, {"content", content}};
}

}  // namespace archctl::node
