#pragma once
// Space: the free and total bytes of the filesystem that holds a directory on a node, as the node
// measures it (statvfs of the directory, reported by its `space` operation, or by `info` on a node
// of an older archctl). NodeSession::space is the one place archctl asks for it; what a node
// cannot measure is an error, never 0 free.
//
// Usage:
//   ARCHCTL_TRY_ASSIGN(session::Space space, nas->space(nas->config().qb_root));
//   if (space.free < need) ...

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/node/wire/ops.hpp"

namespace archctl::session {

struct Space {
    std::uint64_t free = 0;               // bytes an unprivileged writer may still use
    std::optional<std::uint64_t> total;   // the filesystem's size; a node reports it with `free`
};

// The space at directory `dir` in one `info` answer (a node without the `space` operation) that was asked to probe it: the probe of
// `dir`; an answer without that probe (a node that does not probe) is read at the longest root
// that contains `dir`. nullopt when the entry read carries no free bytes, or no root contains
// `dir`.
[[nodiscard]] std::optional<Space> space_in(const node::InfoResult& info, const std::string& dir);

// True when `path` lies strictly below one of `roots` (component-wise: "/srv/a" holds "/srv/a/x"
// but not "/srv/ab" and not "/srv/a" itself).
[[nodiscard]] bool below_a_root(const std::vector<std::string>& roots, const std::string& path);

}  // namespace archctl::session
