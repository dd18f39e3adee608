#pragma once
// The one rule that decides whether a file archctl is about to unlink on a node must stay
// (docs/design.md "Failure before commit", "Evict"): unmerge (compensation takes back what merge
// placed), cleanup (staging in a route folder) and unlink_owned (evict) ask it for every path
// right before they unlink it, with a fresh lstat and the paths other torrents reference now.
//
// The checks, in this order, each a reason to keep the path:
//   referenced   another torrent in the node's qBittorrent lists the path (the caller's snapshot)
//   not_regular  the entry is not a regular file (a directory, symlink, …)
//   size_changed the recorded size differs from the size now
//   replaced     the recorded inode differs from the inode now
//   other_links  the file has other hard links — only where the caller says that matters
//                (OtherLinks::keep_file: a file merge moved into place has exactly one link,
//                so another one means someone linked it elsewhere; a cache file (evict) or a
//                staged link (cleanup) legitimately shares its inode)
// A record without a size or inode skips that check.

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "lib/node/wire/ops_cleanup.hpp"

namespace archctl::node {

// A path archctl owns and may unlink (a node path, as the referenced set spells it), with the
// size and inode it recorded.
using OwnedPath = OwnedFile;

// What another hard link to the file means to the caller.
enum class OtherLinks {
    allowed,    // unlinking one name leaves the data to the others (evict, staging)
    keep_file,  // another link means the file is used elsewhere (unmerge)
};

// Why the rule keeps a path: one of none, referenced, not_regular, size_changed, replaced and
// other_links of the wire's kept codes (lib/node/wire/ops_transfer.hpp).
using KeepReason = KeptCode;

struct KeepVerdict {
    KeepReason reason = KeepReason::none;
    std::string text;  // empty when the file may go; else the reason in the user's words
    [[nodiscard]] bool keep() const { return reason != KeepReason::none; }
};

// Must `owned` stay, given `now` (an lstat taken right before the unlink) and the paths other
// torrents reference now?
[[nodiscard]] KeepVerdict keep_verdict(const OwnedPath& owned, const struct stat& now, const std::set<std::string>& referenced,
                                       OtherLinks links);

// How every operation reports a kept file: path, the reason in words, the reason's code.
[[nodiscard]] KeptEntry kept_entry(const std::string& path, const KeepVerdict& verdict);

}  // namespace archctl::node
