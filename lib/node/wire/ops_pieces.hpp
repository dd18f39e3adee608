#pragma once
// The messages of the operations on pieces: qBittorrent part files (partfile_read, partfile_copy,
// partfile_build) and the piece check of a payload on disk (verify_pieces). Part of
// lib/node/wire/ops.hpp, which says how the structs map to the wire.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace archctl::node {

// ---- part files ----------------------------------------------------------------------------

// How a part file must look to be used. Keys: expect_pieces, expect_piece_size (absent: not
// checked), allow_short_last_slot.
struct PartfileCheck {
    std::optional<std::uint32_t> expect_pieces;
    std::optional<std::uint32_t> expect_piece_size;
    bool allow_short_last_slot = false;
};

// How archctl checks a qBittorrent part file: libtorrent ends it at its last written byte, so the
// last slot may be short; with the torrent's piece count and piece size, those are checked too.
[[nodiscard]] PartfileCheck qb_partfile_check();
[[nodiscard]] PartfileCheck qb_partfile_check(std::int64_t piece_count, std::int64_t piece_size);

// Keys: path and the PartfileCheck keys.
struct PartfileReadRequest {
    std::string path;
    PartfileCheck check;
};

// Keys: piece, slot.
struct PartfileSlot {
    std::uint32_t piece = 0;
    std::uint32_t slot = 0;
};

// Keys: piece_count, piece_size, header_size, used_slots, slots, file_size, short_slots.
struct PartfileReadResult {
    std::uint32_t piece_count = 0, piece_size = 0;
    std::uint64_t header_size = 0;
    std::uint32_t used_slots = 0;
    std::vector<PartfileSlot> slots;
    std::uint64_t file_size = 0;
    std::vector<std::uint32_t> short_slots;
};

// Keys: from, to, create_parents, replace, the PartfileCheck keys and min_free (absent or 0: no
// floor).
struct PartfileCopyRequest {
    std::string from;
    std::string to;
    bool create_parents = false;
    bool replace = false;
    PartfileCheck check;
    // The free-space floor of the destination's filesystem: a copy that would take it below the
    // floor is refused with DISK_INSUFFICIENT before a byte is written.
    std::uint64_t min_free = 0;
};

// Keys: the PartfileReadResult keys, to, xxh3, already, bytes (absent when already).
struct PartfileCopyResult {
    PartfileReadResult header;
    std::string to;
    std::string xxh3;
    bool already = false;
    std::optional<std::uint64_t> bytes;
};

// The largest part file a partfile_build request may describe: more pieces than any torrent
// lib/torrent reads has (its 128 MiB metainfo limit holds at most 6,710,886 v1 piece hashes) or
// libtorrent loads by default (2,097,152), and libtorrent's largest piece size (1 GiB). Such a
// part file's header is 32 MiB.
inline constexpr std::uint32_t k_max_partfile_pieces = std::uint32_t{1} << 23;
inline constexpr std::uint32_t k_max_partfile_piece_size = std::uint32_t{1} << 30;

// partfile_build: a libtorrent part file written from bytes the node holds (docs/torrent-format.md
// "Part files"): one slot per listed piece that has a kept range, in request order. Each range is `length`
// bytes at piece-relative offset `at`, read from the regular file `path` at `offset`, or (with
// `from_partfile`) from the piece's slot of `source_partfile` at `at`. Kept ranges (the files
// outside the target's selection) are written into the slot; the others (the selected files)
// are only read so that the whole piece can be checked against `sha1`; bytes no range covers
// (pad files) count as zeros. Keys of a range: at, length, path | from_partfile, offset, keep.
struct PartfileBuildRange {
    std::uint64_t at = 0;
    std::uint64_t length = 0;
    std::string path;
    std::uint64_t offset = 0;
    bool from_partfile = false;
    bool keep = false;
};

// Keys: piece, length (the piece's length: the last piece may be short), sha1 (hex, absent: not
// checked), ranges.
struct PartfileBuildPiece {
    std::uint32_t piece = 0;
    std::uint64_t length = 0;
    std::optional<std::string> sha1;
    std::vector<PartfileBuildRange> ranges;
};

// Keys: to, create_parents, piece_count, piece_size, source_partfile (absent: none; read with
// the qBittorrent check for piece_count and piece_size), pieces, min_free, dry_run. With
// dry_run nothing is written: every piece is read and checked, and the result says which verify.
// The node checks the request against itself before acting: piece_count and piece_size within
// the limits above, each piece listed once and in range, no longer than piece_size, each range
// inside its piece and its file offset within a file's reach; a part file that would not fit in
// the free space above min_free (0: the free space itself) is refused with DISK_INSUFFICIENT.
struct PartfileBuildRequest {
    std::string to;
    bool create_parents = false;
    std::uint32_t piece_count = 0, piece_size = 0;
    std::optional<std::string> source_partfile;
    std::vector<PartfileBuildPiece> pieces;
    std::uint64_t min_free = 0;
    bool dry_run = false;
};

// Keys: the PartfileReadResult keys (of the file written), to, xxh3, bytes, failed (pieces whose
// SHA-1 did not match: only with dry_run; otherwise such a piece fails the operation with
// PARTFILE_INVALID and nothing is written).
struct PartfileBuildResult {
    PartfileReadResult header;
    std::string to;
    std::string xxh3;
    std::uint64_t bytes = 0;
    std::vector<std::uint32_t> failed;
};

// ---- verify_pieces -------------------------------------------------------------------------

// Keys: save_path, torrent_b64 (the .torrent bytes) | torrent_path, files (a selection).
struct VerifyPiecesRequest {
    std::string save_path;
    std::optional<std::string> torrent_b64;   // the .torrent, base64
    std::optional<std::string> torrent_path;  // a node path, read by the node
    std::optional<std::string> files;
    // File index → its path below save_path on disk, for files a content layout puts elsewhere
    // than their metainfo path (torrent/layout.hpp).
    std::map<std::uint32_t, std::string> paths = {};
    // Files outside `files` whose bytes boundary pieces may read (torrent::VerifyOptions::readable).
    std::optional<std::string> readable = std::nullopt;
};

// lib/torrent's VerifyReport JSON plus save_path.
struct VerifyPiecesResult {
    nlohmann::json report = nlohmann::json::object();
    std::string save_path;
};

// ---- JSON ----------------------------------------------------------------------------------

// nlohmann/json conversions (`nlohmann::json j = request;`, `j.get<TreeResult>()`): see
// lib/node/wire/ops.hpp for what a from_json does with missing keys.
void to_json(nlohmann::json& j, const PartfileReadRequest& v);
void from_json(const nlohmann::json& j, PartfileReadRequest& v);
void to_json(nlohmann::json& j, const PartfileSlot& v);
void from_json(const nlohmann::json& j, PartfileSlot& v);
void to_json(nlohmann::json& j, const PartfileReadResult& v);
void from_json(const nlohmann::json& j, PartfileReadResult& v);
void to_json(nlohmann::json& j, const PartfileCopyRequest& v);
void from_json(const nlohmann::json& j, PartfileCopyRequest& v);
void to_json(nlohmann::json& j, const PartfileCopyResult& v);
void from_json(const nlohmann::json& j, PartfileCopyResult& v);
void to_json(nlohmann::json& j, const PartfileBuildRange& v);
void from_json(const nlohmann::json& j, PartfileBuildRange& v);
void to_json(nlohmann::json& j, const PartfileBuildPiece& v);
void from_json(const nlohmann::json& j, PartfileBuildPiece& v);
void to_json(nlohmann::json& j, const PartfileBuildRequest& v);
void from_json(const nlohmann::json& j, PartfileBuildRequest& v);
void to_json(nlohmann::json& j, const PartfileBuildResult& v);
void from_json(const nlohmann::json& j, PartfileBuildResult& v);
void to_json(nlohmann::json& j, const VerifyPiecesRequest& v);
void from_json(const nlohmann::json& j, VerifyPiecesRequest& v);
void to_json(nlohmann::json& j, const VerifyPiecesResult& v);
void from_json(const nlohmann::json& j, VerifyPiecesResult& v);

}  // namespace archctl::node
