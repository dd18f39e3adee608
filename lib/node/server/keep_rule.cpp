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

const char* to_string(KeepReason reason) {
    switch (reason) {
        case KeepReason::none: return "none";
        case KeepReason::referenced: return "referenced";
        case KeepReason::not_regular: return "not_regular";
        case KeepReason::size_changed: return "size_changed";
        case KeepReason::replaced: return "replaced";
        case KeepReason::other_links: return "other_links";
    }
    return "none";
}

KeptEntry kept_entry(const std::string& path, const KeepVerdict& verdict) { return KeptEntry{path, verdict.text, to_string(verdict.reason)}; }

}  // namespace archctl::node
