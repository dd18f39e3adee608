#pragma once
// A torrent's metainfo as a job needs it (docs/design.md "The torrent's metainfo"): read from
// qBittorrent's own BT_backup copy through the node when nodes.<name>.qbittorrent.bt_backup is
// set, else exported with torrents/export.
//
// qBittorrent builds an export on its main thread: for a large v2 or hybrid torrent that takes
// a minute and more, and its web interface answers nothing meanwhile. The BT_backup copy costs a
// file read. It differs from an export in two ways, both made good here or downstream: it keeps
// no trackers and no web seeds (they are read from qBittorrent now and written into the copy),
// and a v2 or hybrid copy has no `piece layers` (the target's full recheck rebuilds them from
// the data, each checked against its file's `pieces root`, which the info hash covers). A copy
// that is missing, unreadable or of another torrent is set aside with a warning and the torrent
// is exported.

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "lib/base/result.hpp"
#include "lib/jobs/core/nodes.hpp"
#include "lib/torrent/identity.hpp"
#include "lib/torrent/metainfo.hpp"

namespace archctl::jobs::evidence {

// The torrent parsed (ParseOptions::layers_optional); its bytes (Metainfo::bytes) are the one
// copy held: at 100,000 files a torrent is ~20 MB.
struct SourcedMetainfo {
    torrent::Metainfo meta;
    bool from_backup = false;  // read from BT_backup (else exported)
};

// What the caller does with the metainfo: `plan_and_move` reads its files and pieces and hands
// it to the target's qBittorrent (any copy will do); `verify_pieces` also checks the data
// against it, which a v2-only torrent without its layers cannot serve (such a copy is exported).
enum class MetainfoUse { plan_and_move, verify_pieces };

// The metainfo of torrent `qb_id` on `node`, which must be resource `identity` (its hashes: a
// BT_backup copy of another torrent is set aside; an export is the caller's to check). `name`
// labels it in messages; `warn` receives a line when a BT_backup copy is set aside.
[[nodiscard]] Result<SourcedMetainfo> read_metainfo(NodeHandle& node, const std::string& qb_id, const torrent::Identity& identity,
                                                    std::string_view name, const std::function<void(const std::string&)>& warn,
                                                    MetainfoUse use = MetainfoUse::plan_and_move);

}  // namespace archctl::jobs::evidence
