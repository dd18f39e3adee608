#pragma once
// Choosing torrents from a node's live torrent list by config::Criteria (docs/design.md "Many resources and tier policies"): the
// batch options of plan/archive/unarchive/evict and a tier policy's archive_when + exclude.
//
// Pure: one torrent as qBittorrent listed it, the criteria and the time; no requests.

#include <cstdint>
#include <string>

#include "lib/clients/qbittorrent/types.hpp"
#include "lib/config/criteria.hpp"

namespace archctl::select {

struct Verdict {
    bool chosen = false;
    // Why chosen, human: "all", "category tv", "tag x", "name 'Show*'", "completed 212 d ago",
    // "ratio 3.10", "seeding 20 d", "inactive 3 d", "size 9.0 GiB"; with several conditions and
    // any=false, the conditions joined by ", ". Also set when the conditions hold but `skipped`
    // blocks the torrent (what would have chosen it).
    std::string rule;
    // Why not, when the conditions hold but an exclusion or the torrent's state blocks it:
    // "category keep", "tag pinned", "name 'x*'", "still downloading" (progress < 1). Empty when
    // the torrent simply does not match.
    std::string skipped;
};

// `now`: epoch seconds. A torrent that is not complete (progress < 1 or amount_left > 0) is never
// chosen; exclusions win over conditions. Empty criteria choose nothing.
Verdict evaluate(const config::Criteria& c, const clients::qbittorrent::TorrentInfo& t, std::int64_t now);

// Glob match (fnmatch without FNM_PATHNAME: '*' crosses '/'), case-sensitive.
bool glob_match(const std::string& pattern, const std::string& text);

// "212 d" for ages of a day or more, then "5 h", "12 min", "40 s" (whole units, rounded down).
std::string format_age(std::int64_t seconds);

}  // namespace archctl::select
