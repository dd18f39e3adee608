// nonce_write / nonce_observe: the small files a route check exchanges (docs/routes.md
// "Nonces").
//
// A nonce is written into a route folder that Syncthing is watching, so its temp file must never
// be visible there: a kill between writing and renaming would leave it for Syncthing to copy to
// the partner. When the folder has Syncthing's marker directory `.stfolder` (which Syncthing
// never scans or syncs), the file is written durably inside it (temp + fsync + rename + fsync)
// and then renamed into the folder (+ fsync of the folder). Without a marker Syncthing does not
// run the folder, and the file is written in place the ordinary way.
//
// Each write also removes the temp files older archctl versions left in the folder itself
// ("..archctl-nonce-<node>.tmp.<pid>.<n>", and the copies Syncthing made of them), and temp
// files of its own kind in `.stfolder` that are older than a minute (a killed write).
//
// Crash points: nonce.written, nonce.moved (plus lib/base's atomic.* points of the write).

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/node/server/file_ops.hpp"
#include "lib/node/server/operation.hpp"
#include "lib/node/wire/ops_inspect.hpp"

namespace archctl::node {
namespace {
constexpr std::size_t k_max_nonce_bytes = 64u << 10;
constexpr const char* k_marker = ".stfolder";
constexpr const char* k_temp_prefix = "..archctl-nonce-";  // AtomicFile's ".<name>.tmp.<pid>.<n>"
constexpr auto k_stale_temp_age = std::chrono::seconds(60);

bool nonce_temp_name(const std::string& name) {
    return name.starts_with(k_temp_prefix) && name.find(".tmp.") != std::string::npos;
}

// Remove nonce temp files in `dirfd`: all of them, or only those older than k_stale_temp_age
// (a write in flight is younger). Best effort: a file that cannot be removed now is removed by
// a later check.
void remove_nonce_temps(int dirfd, const std::string& display, bool only_old) {
    auto names = list_dir(dirfd, display);
    if (!names.ok()) return;
    const auto now = std::chrono::system_clock::now();
    for (const auto& name : names.value()) {
        if (!nonce_temp_name(name)) continue;
        struct stat st {};
        if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
        const auto mtime = std::chrono::system_clock::from_time_t(st.st_mtim.tv_sec);
        if (only_old && now - mtime < k_stale_temp_age) continue;
        (void)::unlinkat(dirfd, name.c_str(), 0);
    }
}

// The folder's marker directory, or an invalid fd when it has none.
UniqueFd open_marker(int dirfd) {
    return UniqueFd(::openat(dirfd, k_marker, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

// Write `name` durably inside the marker directory, then rename it into the folder.
Status write_through_marker(int marker, int dirfd, const std::string& name, std::string_view content, const std::string& path) {
    ARCHCTL_TRY_STATUS(write_atomic_in(marker, name, content, path));
    if (::renameat(marker, name.c_str(), dirfd, name.c_str()) != 0) return errno_error("cannot rename into place", path, errno);
    crash_point("nonce.moved");
    ARCHCTL_TRY_STATUS(fsync_fd_dir(dirfd, path));
    return fsync_fd_dir(marker, path);
}

}  // namespace

using nlohmann::json;

Result<json> op_nonce_write(OpContext& ctx, json args) {
    auto request = args.get<NonceWriteRequest>();
    const std::string& path = request.path;
    if (request.content.size() > k_max_nonce_bytes)
        return Error(ErrorCode::BAD_REQUEST, fmt::format("cannot write nonce '{}': content is larger than 64 KiB", path));
    CreateDirs create = request.create_parents ? CreateDirs::yes : CreateDirs::no;
    ARCHCTL_TRY_ASSIGN(RootSet::Parent parent, ctx.roots().open_parent(path, create));
    remove_nonce_temps(parent.dir.get(), path, false);
    if (UniqueFd marker = open_marker(parent.dir.get()); marker.valid()) {
        remove_nonce_temps(marker.get(), path, true);
        ARCHCTL_TRY_STATUS(write_through_marker(marker.get(), parent.dir.get(), parent.name, request.content, path));
    } else {
        ARCHCTL_TRY_STATUS(write_atomic_in(parent.dir.get(), parent.name, request.content, path));
    }
    crash_point("nonce.written");
    return json(NonceWriteResult{path, request.content.size()});
}

Result<json> op_nonce_observe(OpContext& ctx, json args) {
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
