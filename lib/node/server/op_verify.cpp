// verify_pieces: lib/torrent's piece verifier on the node's own disk (v1, v2, hybrid).
//
// The save path is confined like every node path and handed to the verifier as the already
// opened directory (/proc/self/fd/N), so nothing between the root and the save path is followed;
// below it the verifier opens every file with O_NOFOLLOW on each component.

#include <fmt/format.h>

#include "lib/base/base64.hpp"
#include "lib/node/server/file_ops.hpp"
#include "lib/node/server/operation.hpp"
#include "lib/node/server/root_set.hpp"
#include "lib/node/wire/ops_pieces.hpp"
#include "lib/torrent/metainfo.hpp"
#include "lib/torrent/verifier.hpp"

namespace archctl::node {

using nlohmann::json;

Result<json> op_verify_pieces(OpContext& ctx, json args) {
    auto request = args.get<VerifyPiecesRequest>();
    const std::string& save_path = request.save_path;
    std::string bytes;
    std::string label = "request";
    if (request.torrent_b64) {
        auto decoded = base64_decode(*request.torrent_b64);
        if (!decoded.ok()) return Error(ErrorCode::BAD_REQUEST, decoded.error().message);
        bytes = std::move(decoded).value();
    } else {
        const std::string& path = *request.torrent_path;
        ARCHCTL_TRY_ASSIGN(RootSet::Parent parent, ctx.roots().open_parent(path));
        ARCHCTL_TRY_ASSIGN(bytes, read_small_in(parent.dir.get(), parent.name, path, 128u << 20));
        label = path;
    }
    ARCHCTL_TRY_ASSIGN(torrent::Metainfo meta, torrent::parse_metainfo(bytes, label, torrent::k_layers_optional));
    ARCHCTL_TRY_ASSIGN(UniqueFd dir, ctx.roots().open_dir(save_path));
    torrent::VerifyOptions options;
    if (request.files) {
        ARCHCTL_TRY_ASSIGN(options.files, torrent::Selection::parse(*request.files));
    }
    if (request.readable) {
        ARCHCTL_TRY_ASSIGN(options.readable, torrent::Selection::parse(*request.readable));
    }
    for (const auto& [index, path] : request.paths) {
        // A file the torrent has (an index past it would size the table by the request's number).
        if (index >= meta.files().size())
            return Error(ErrorCode::BAD_REQUEST, fmt::format("invalid verify_pieces request: paths names file {}, the torrent has {} files",
                                                             index, meta.files().size()));
        auto elements = split_relative(path);  // relative, no "." or ".." elements
        if (!elements.ok()) return elements.take_error();
        if (index >= options.disk_paths.size()) options.disk_paths.resize(std::size_t{index} + 1);
        options.disk_paths[index] = path;
    }
    ARCHCTL_TRY_ASSIGN(torrent::VerifyReport report, torrent::verify(meta, fd_path(dir.get(), ""), options));
    return json(VerifyPiecesResult{report.to_json(), save_path});
}

}  // namespace archctl::node
