#pragma once
// Creating .torrent files from a file or directory.
//
// build_torrent() walks the source (refusing symlinks, special files and paths that fail
// path_rules.hpp), orders files by raw path bytes (the v2 file tree order, used for every kind
// so the output is deterministic), hashes them in parallel (piece_engine.hpp) and returns the
// bencoded metainfo. Layout follows libtorrent 2.0.8: v2 and hybrid files each start on a piece
// boundary; a hybrid multi-file torrent lists a BEP 47 pad file (attr "p", path .pad/<N>) after
// every non-empty file that does not end on a piece boundary, the last file included ("tail
// padding"); its v1 `files` list is in the v2 order. Executable files get attr "x".
//
// Memory: the builder keeps the sorted file list, one digest per piece (only the hashes the kind
// needs) and the bytes it writes; the tables are freed before the result is returned. The result
// is checked to be canonical bencoding (bencode::parse, which builds nothing) and its identity is
// computed over its `info` bytes; it is not parsed back into a Metainfo (which would cost as much
// again as the torrent: the unit tests parse what the creator writes).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "lib/base/result.hpp"
#include "lib/torrent/identity.hpp"
#include "lib/torrent/metainfo.hpp"

namespace archctl::torrent {

struct CreateOptions {
    Kind kind = Kind::hybrid;
    std::int64_t piece_length = 0;            // 0 = automatic (auto_piece_length)
    std::string name;                         // default: the source's file name
    std::string created_by = "archctl";
    std::optional<std::int64_t> creation_date;  // seconds since the epoch; default: now
    unsigned threads = 0;                     // 0 = hardware_concurrency
};

// libtorrent's automatic piece length for `payload_bytes` of payload (pads not counted): the
// smallest power of two p >= 16 KiB with p*p >= 100*payload_bytes - 50 (i.e. payload_bytes <=
// round(p*p/100)), at most 16 MiB. 7 MiB → 32 KiB, 1 GiB → 512 KiB.
[[nodiscard]] std::int64_t auto_piece_length(std::int64_t payload_bytes);

// A created .torrent and what Metainfo would report about it, known without parsing it back.
struct CreatedTorrent {
    std::string bytes;  // the .torrent
    std::string name;   // Metainfo::name()
    Identity identity;
    bool multi_file = false;
    std::int64_t piece_length = 0;
    std::int64_t piece_count = 0;
    std::int64_t total_size = 0;    // pads (and a v2 single file's internal one) included
    std::int64_t payload_size = 0;
    std::size_t file_count = 0;     // payload files, pads left out
    Kind kind() const { return identity.kind(); }
};

// Builds the metainfo of `source`. Errors: TORRENT_CREATE (bad option, empty payload, symlink,
// special file, file changed while hashing), TORRENT_UNSAFE_PATH, IO.
[[nodiscard]] Result<CreatedTorrent> build_torrent(const std::filesystem::path& source, const CreateOptions& options = {});
// build_torrent(), the bytes alone.
[[nodiscard]] Result<std::string> create_torrent(const std::filesystem::path& source, const CreateOptions& options = {});

}  // namespace archctl::torrent
