#pragma once
// A libtorrent part file opened for reading and checked against what the caller expects
// (lib/node/server/op_partfile.cpp says which rules apply): partfile_read and partfile_copy read
// one, partfile_build reads the source's own part file for the bytes it holds.

#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/fs.hpp"
#include "lib/base/result.hpp"
#include "lib/node/server/root_set.hpp"
#include "lib/node/wire/ops_pieces.hpp"
#include "lib/torrent/partfile.hpp"

namespace archctl::node {

struct OpenedPartfile {
    UniqueFd fd;
    std::uint64_t size = 0;
    torrent::PartfileHeader header;
    std::vector<std::uint32_t> short_slots;  // pieces whose slot runs past the end of the file
};

// The part file at `path` (a node path below a root), its header parsed and its slots checked
// against `check`; PARTFILE_INVALID when it breaks a rule.
[[nodiscard]] Result<OpenedPartfile> open_partfile(const RootSet& roots, const PartfileCheck& check, const std::string& path);

// What partfile_read answers about `p`.
[[nodiscard]] PartfileReadResult header_of(const OpenedPartfile& p);

}  // namespace archctl::node
