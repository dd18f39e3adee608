// metainfo_read: a torrent's .torrent as qBittorrent keeps it, `<id>.torrent` in its BT_backup
// directory. archctl reads it there through the node because qBittorrent's torrents/export blocks
// its web interface for a minute and more on a large v2 or hybrid torrent; the caller checks the
// bytes are the torrent's, and asks qBittorrent when the file is not there.
//
// Only names ending in ".torrent" are read, so no other file below a root is served this way. The
// leaf is opened without following a symlink and must be a regular file no larger than the
// request's max_bytes. A request for a part (offset, length) is answered with that part, at most
// one protocol line (ops_inspect.hpp k_metainfo_read_line_bytes); one for the whole file reads a
// file of at most that. Every answer says the file's size and stamp (inode, mtime) so the
// caller can tell the parts of one file from a file replaced between them. A missing file or
// parent directory is found: false, not an error. Nothing is written.

#include <sys/stat.h>

#include <algorithm>

#include <fmt/format.h>

#include "lib/base/base64.hpp"
#include "lib/base/units.hpp"
#include "lib/node/server/file_ops.hpp"
#include "lib/node/server/operation.hpp"
#include "lib/node/server/root_set.hpp"
#include "lib/node/wire/ops_inspect.hpp"

namespace archctl::node {

using nlohmann::json;

Result<json> op_metainfo_read(OpContext& ctx, json args) {
    auto request = args.get<MetainfoReadRequest>();
    const std::string& path = request.path;
    if (request.max_bytes == 0 || request.max_bytes > k_metainfo_read_max_bytes)
        return Error(ErrorCode::BAD_REQUEST, fmt::format("invalid metainfo_read request for '{}': max_bytes {} is not between 1 and {}",
                                                         path, request.max_bytes, k_metainfo_read_max_bytes));
    // The name is checked before anything below the root is opened.
    ARCHCTL_TRY_ASSIGN(LocatedPath located, ctx.roots().locate(path));
    if (located.components.empty() || !located.components.back().ends_with(".torrent"))
        return Error(ErrorCode::BAD_REQUEST, fmt::format("refusing path '{}': metainfo_read reads .torrent files only", path));
    const json absent = MetainfoReadResult{};
    auto parent = ctx.roots().open_parent(path);
    if (!parent.ok()) {
        if (parent.error().is(ErrorCode::NOT_FOUND)) return absent;
        return parent.take_error();
    }
    if (request.length > k_metainfo_read_line_bytes)
        return Error(ErrorCode::BAD_REQUEST, fmt::format("invalid metainfo_read request for '{}': length {} is over the {} one protocol line carries",
                                                         path, request.length, k_metainfo_read_line_bytes));
    struct stat st {};
    auto fd = open_regular(parent.value().dir.get(), parent.value().name, path, &st);
    if (!fd.ok()) {
        if (fd.error().is(ErrorCode::NOT_FOUND)) return absent;
        return fd.take_error();
    }
    const auto size = static_cast<std::uint64_t>(st.st_size);
    // A whole file travels on one line; parts of it, up to max_bytes.
    const std::uint64_t limit = request.length ? request.max_bytes : std::min(request.max_bytes, k_metainfo_read_line_bytes);
    if (size > limit) {
        Error e(ErrorCode::TOO_LARGE, fmt::format("cannot read '{}': it is {} bytes, larger than {} bytes", path, size, limit));
        if (limit < request.max_bytes)
            e.hint = fmt::format("a node answers on one protocol line of at most {}, which holds a .torrent of at most {}",
                                 format_size(k_max_line_bytes), format_size(k_metainfo_read_line_bytes));
        return e;
    }
    if (request.offset > size)
        return Error(ErrorCode::BAD_REQUEST, fmt::format("invalid metainfo_read request for '{}': offset {} is past its {} bytes", path,
                                                         request.offset, size));
    const std::uint64_t want = request.length ? std::min(request.length, size - request.offset) : size;
    // The bytes go once encoded, and the text moves into the answer: two copies at most at once.
    json out = {{"found", true}, {"size", size}, {"stamp", fmt::format("{}:{}", static_cast<std::uint64_t>(st.st_ino), mtime_ns(st))}};
    {
        std::string data(static_cast<std::size_t>(want), '\0');
        ARCHCTL_TRY_ASSIGN(std::size_t n, pread_full(fd.value().get(), data.data(), data.size(), request.offset, path));
        if (n != data.size())
            return Error(ErrorCode::IO, fmt::format("cannot read '{}': it became shorter while it was read", path));
        out["data_b64"] = base64_encode(data);
    }
    return out;
}

}  // namespace archctl::node
