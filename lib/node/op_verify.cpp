// verify_pieces: lib/torrent's piece verifier on the node's own disk (v1, v2, hybrid).
//
// The save path is confined like every node path and handed to the verifier as the already
// opened directory (/proc/self/fd/N), so nothing between the root and the save path is followed;
// below it the verifier opens every file with O_NOFOLLOW on each component.

#include <fmt/format.h>

#include "lib/node/file_ops.hpp"
#include "lib/node/operation.hpp"
#include "lib/torrent/metainfo.hpp"
#include "lib/torrent/verifier.hpp"

namespace archctl::node {

using nlohmann::json;

Result<json> op_verify_pieces(OpContext& ctx, const json& args) {
    std::string save_path = args.at("save_path").get<std::string>();
    std::string bytes;
    std::string label = "request";
    if (args.contains("torrent_b64")) {
        ARCHCTL_TRY_ASSIGN(bytes, base64_decode(args.at("torrent_b64").get<std::string>()));
    } else {
        std::string path = args.at("torrent_path").get<std::string>();
        ARCHCTL_TRY_ASSIGN(RootSet::Parent parent, ctx.roots().open_parent(path));
        ARCHCTL_TRY_ASSIGN(bytes, read_small_in(parent.dir.get(), parent.name, path, 128u << 20));
        label = path;
    }
    ARCHCTL_TRY_ASSIGN(torrent::Metainfo meta, torrent::parse_metainfo(bytes, label));
    ARCHCTL_TRY_ASSIGN(UniqueFd dir, ctx.roots().open_dir(save_path));
    torrent::VerifyOptions options;
    if (args.contains("files")) {
        ARCHCTL_TRY_ASSIGN(options.files, torrent::Selection::parse(args.at("files").get<std::string>()));
    }
    ARCHCTL_TRY_ASSIGN(torrent::VerifyReport report, torrent::verify(meta, fd_path(dir.get(), ""), options));
    json out = report.to_json();
    out["save_path"] = save_path;
    return out;
}

}  // namespace archctl::node
