#include "lib/node/server/keep_rule.hpp"

#include <fmt/format.h>

#include "lib/node/server/file_ops.hpp"

namespace archctl::node {

KeepVerdict keep_verdict(const OwnedPath& owned, const struct stat& now, const std::set<std::string>& referenced, OtherLinks links) {
    if (referenced.count(owned.path)) return {KeepReason::referenced, "referenced by another torrent"};
    if (!S_ISREG(now.st_mode)) return {KeepReason::not_regular, fmt::format("a {}, not a regular file", file_type_name(now.st_mode))};
    if (owned.size && *owned.size != static_cast<std::uint64_t>(now.st_size))
        return {KeepReason::size_changed, "its size changed since it was recorded"};
    if (owned.ino && *owned.ino != static_cast<std::uint64_t>(now.st_ino))
        return {KeepReason::replaced, "it was replaced since it was recorded"};
    if (links == OtherLinks::keep_file && now.st_nlink > 1) return {KeepReason::other_links, "the file has other hard links"};
    return {};
}

KeptEntry kept_entry(const std::string& path, const KeepVerdict& verdict) { return KeptEntry{path, verdict.text, verdict.reason}; }

}  // namespace archctl::node
