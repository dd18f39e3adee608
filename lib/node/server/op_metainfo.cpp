// metainfo_read: a torrent's .torrent as qBittorrent keeps it, `<id>.torrent` in its BT_backup
// directory. archctl reads it there through the node because qBittorrent's torrents/export blocks
// its web interface for a minute and more on a large v2 or hybrid torrent; the caller checks the
// bytes are the torrent's, and asks qBittorrent when the file is not there.
//
// Only names ending in ".torrent" are read, so no other file below a root is served this way. The
// leaf is opened without following a symlink and must be a regular file no larger than the
// request's max_bytes, nor than one protocol line carries (ops_inspect.hpp
// k_metainfo_read_line_bytes). A missing file or parent directory is found: false, not an error.
// Nothing is written.

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
    const std::uint64_t limit = std::min(request.max_bytes, k_metainfo_read_line_bytes);
    auto bytes = read_small_in(parent.value().dir.get(), parent.value().name, path, static_cast<std::size_t>(limit));
    if (!bytes.ok()) {
        if (bytes.error().is(ErrorCode::NOT_FOUND)) return absent;
        Error e = bytes.take_error();
        if (e.is(ErrorCode::TOO_LARGE) && limit < request.max_bytes)
            e.hint = fmt::format("a node answers on one protocol line of at most {}, which holds a .torrent of at most {}",
                                 format_size(k_max_line_bytes), format_size(k_metainfo_read_line_bytes));
        return e;
    }
    // The bytes go once encoded, and the text moves into the answer: two copies at most at once
    // (a torrent of 100,000 files is ~20 MB).
    json out = {{"found", true}};
    {
        std::string data = std::move(bytes).value();
        out["data_b64"] = base64_encode(data);
    }
    return out;
}

}  // namespace archctl::node
