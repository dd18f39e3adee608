#include "lib/jobs/evidence/metainfo.hpp"

#include <fmt/format.h>

#include "lib/node/client/ops.hpp"
#include "lib/torrent/metainfo.hpp"

namespace archctl::jobs::evidence {

namespace {

// The BT_backup copy of `qb_id` with today's trackers and web seeds, parsed; nullopt (after a
// warning, or silently when the caller needs layers the copy lacks) when it cannot stand in for
// the export.
Result<std::optional<torrent::Metainfo>> backup_copy(NodeHandle& node, const std::string& qb_id, const torrent::Identity& identity,
                                                     std::string_view name, const std::function<void(const std::string&)>& warn,
                                                     MetainfoUse use) {
    const std::string path = node.config().qbittorrent.bt_backup + "/" + qb_id + ".torrent";
    auto set_aside = [&](const std::string& why) -> Result<std::optional<torrent::Metainfo>> {
        if (warn) warn(fmt::format("archctl: warning: '{}' on '{}' {}; exporting the torrent instead", path, node.name(), why));
        return std::optional<torrent::Metainfo>();
    };
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, node.ops());
    auto read = node::Ops(*transport).metainfo_read({.path = path, .max_bytes = node::k_metainfo_read_line_bytes});
    if (!read.ok()) {
        if (read.error().is(ErrorCode::NODE_UNREACHABLE)) return read.take_error();
        return set_aside(fmt::format("cannot be read ({})", read.error().message));
    }
    if (!read->found)
        return set_aside("does not exist (qBittorrent keeps its torrents elsewhere, e.g. in SQLite, or bt_backup names another directory)");
    ARCHCTL_TRY_ASSIGN(auto announce, node.qb().announce(qb_id));
    auto copy = torrent::with_announce(read->data, announce.tiers, announce.web_seeds);
    std::string().swap(read->data);  // one copy at a time
    if (!copy.ok()) return set_aside(fmt::format("is not a usable torrent ({})", copy.error().message));
    auto meta = torrent::take_metainfo(std::move(copy).value(), name, torrent::k_layers_optional);
    if (!meta.ok()) return set_aside(fmt::format("is not a usable torrent ({})", meta.error().message));
    if (!meta->identity().same_resource(identity)) return set_aside(fmt::format("is another torrent, not '{}'", identity.short_id()));
    if (use == MetainfoUse::verify_pieces && meta->layers_missing() && !meta->has_v1())
        return std::optional<torrent::Metainfo>();  // a v2-only copy proves no piece without its layers: the export does
    return std::optional<torrent::Metainfo>(std::move(meta).value());
}

}  // namespace

Result<SourcedMetainfo> read_metainfo(NodeHandle& node, const std::string& qb_id, const torrent::Identity& identity,
                                      std::string_view name, const std::function<void(const std::string&)>& warn,
                                      MetainfoUse use) {
    if (!node.config().qbittorrent.bt_backup.empty()) {
        ARCHCTL_TRY_ASSIGN(auto copy, backup_copy(node, qb_id, identity, name, warn, use));
        if (copy) return SourcedMetainfo{std::move(copy).value(), true};
    }
    ARCHCTL_TRY_ASSIGN(std::string exported, node.qb().export_torrent(qb_id));
    ARCHCTL_TRY_ASSIGN(auto meta, torrent::take_metainfo(std::move(exported), name, torrent::k_layers_optional));
    return SourcedMetainfo{std::move(meta), false};
}

}  // namespace archctl::jobs::evidence
