#pragma once
// Which torrents a batch command or a tier policy chooses (docs/design.md "Many resources and tier policies"), as plain data.
//
// Conditions combine with AND unless `any` is set (then one condition suffices); exclusions win
// over every condition; a torrent still downloading is never chosen. lib/select evaluates them.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/result.hpp"

namespace archctl::config {

// A point in time written as an age ("14d": now minus 14 days) or a UTC date.
struct TimeBound {
    std::int64_t age_s = -1;  // exactly one of age_s and epoch is >= 0
    std::int64_t epoch = -1;
    std::string text;         // as written
    std::int64_t resolve(std::int64_t now) const { return epoch >= 0 ? epoch : now - age_s; }
    bool set() const { return age_s >= 0 || epoch >= 0; }
};

struct Criteria {
    bool all = false;                                   // --all: every torrent
    std::vector<std::string> categories, tags, names;   // any of each list (names: globs)
    std::optional<TimeBound> completed_before;
    std::optional<std::int64_t> inactive_for_s, min_seeding_time_s;
    std::optional<double> min_ratio;
    std::optional<std::uint64_t> larger_than;
    bool any = false;                                   // true: one condition suffices
    std::vector<std::string> exclude_categories, exclude_tags, exclude_names;

    // No condition and not `all` (exclusions alone do not select anything).
    bool empty() const {
        return !all && categories.empty() && tags.empty() && names.empty() && !completed_before &&
               !inactive_for_s && !min_seeding_time_s && !min_ratio && !larger_than;
    }
};

// AGE ("14d", "12h", "30m", "2w") or DATE ("2026-01-31", "2026-01-31T12:00:00Z", UTC).
Result<TimeBound> parse_time_bound(const std::string& text);

}  // namespace archctl::config
