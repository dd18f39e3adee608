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
// Memory: the builder keeps the sorted file list and one digest per piece (only the hashes the
// kind needs); the metainfo is handed out in chunks as it is written (ByteSink), its info hashes
// computed on the way, so a caller that streams it to a file never holds the torrent. It is not
// parsed back into a Metainfo (which would cost as much again as the torrent): build_torrent
// without a sink checks its bytes with the bencode view, which builds nothing, and the unit tests
// parse what the creator writes.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "lib/base/result.hpp"
#include "lib/torrent/bencode.hpp"
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
    // Larger is refused (TORRENT_CREATE) as soon as it is passed: what load_metainfo reads.
    std::size_t max_bytes = bencode::Limits{}.max_input;
};

// libtorrent's automatic piece length for `payload_bytes` of payload (pads not counted): the
// smallest power of two p >= 16 KiB with p*p >= 100*payload_bytes - 50 (i.e. payload_bytes <=
// round(p*p/100)), at most 16 MiB. 7 MiB → 32 KiB, 1 GiB → 512 KiB.
[[nodiscard]] std::int64_t auto_piece_length(std::int64_t payload_bytes);

// A created .torrent and what Metainfo would report about it, known without parsing it back.
struct CreatedTorrent : Facts {
    std::string bytes;              // the .torrent
    std::size_t file_count = 0;     // payload files, pads left out
    Kind kind() const { return identity.kind(); }
};

// Takes the .torrent's bytes in order as they are written (chunks of about 1 MiB); an error
// stops the creation and is returned by it.
using ByteSink = std::function<Status(std::string_view chunk)>;

// Builds the metainfo of `source`. Errors: TORRENT_CREATE (bad option, empty payload, symlink,
// special file, file changed while hashing, a torrent larger than options.max_bytes),
// TORRENT_UNSAFE_PATH, IO.
[[nodiscard]] Result<CreatedTorrent> build_torrent(const std::filesystem::path& source, const CreateOptions& options = {});
// The same, its bytes handed to `sink` only after the source has been scanned and hashed (a sink
// that creates the output file on its first chunk never sees it in the source), not kept:
// CreatedTorrent::bytes is empty, and they are not parsed back.
[[nodiscard]] Result<CreatedTorrent> build_torrent(const std::filesystem::path& source, const CreateOptions& options,
                                                   const ByteSink& sink);
// build_torrent(), the bytes alone.
[[nodiscard]] Result<std::string> create_torrent(const std::filesystem::path& source, const CreateOptions& options = {});

}  // namespace archctl::torrent
