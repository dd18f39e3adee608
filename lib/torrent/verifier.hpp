#pragma once
// Verifier: checks a save path against a torrent's hashes, all files or a selection.
//
// verify() opens every selected file below the save path with O_NOFOLLOW on each component
// (safe_open.hpp), checks its size (a zero-length file must exist and be empty; an oversized
// file is a failure, as libtorrent only flags it), then hashes every piece that touches a
// selected file in one parallel pass (piece_engine.hpp): v1 SHA-1 across file boundaries with
// pad files as zeros, v2 merkle per file against the piece layers / pieces root, and for a
// hybrid both (a piece passes only when both do). Files outside the selection are never read: a
// piece that needs their bytes is reported as "needs skipped file", not as corrupt. A pad file
// is never opened, whatever lies on disk at its path (BEP 47: its bytes are zeros).
//
// Per-file verdicts, in order of precedence: unsafe (symlink or not a regular file), missing,
// unreadable, short, oversized, corrupt, incomplete (its own bytes are all there, but some of its
// pieces also need bytes of another selected file that is missing or short), needs_skipped (every
// piece it could prove passed, but some of its pieces need a skipped file's bytes), complete.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/torrent/file_model.hpp"
#include "lib/torrent/metainfo.hpp"
#include "lib/torrent/selection.hpp"

namespace archctl::torrent {

enum class FileVerdict { complete, missing, short_file, oversized, corrupt, incomplete, needs_skipped, unsafe, unreadable };
enum class PieceVerdict : std::uint8_t { ok, corrupt, missing, needs_skipped, unreadable, not_checked };

// "complete", "missing", "short", "oversized", "corrupt", "incomplete", "needs_skipped", "unsafe",
// "unreadable".
[[nodiscard]] std::string_view verdict_name(FileVerdict v);
// "ok", "corrupt", "missing", "needs_skipped", "unreadable", "not_checked".
[[nodiscard]] std::string_view verdict_name(PieceVerdict v);

struct FileReport {
    std::uint32_t index = 0;  // qB index
    std::string path;
    std::int64_t expected_size = 0;
    std::optional<std::int64_t> actual_size;  // when the file could be opened
    FileVerdict verdict = FileVerdict::complete;
    std::vector<std::int64_t> corrupt_pieces;  // pieces of this file whose hash failed
    std::vector<std::int64_t> skipped_pieces;  // pieces of this file that need a skipped file's bytes
    std::vector<std::int64_t> blocked_pieces;  // pieces of this file that need another file's missing bytes
    std::string detail;                        // human cause for unsafe/missing/unreadable/short/oversized
};

enum class PieceDetail { none, all };

struct VerifyOptions {
    std::optional<Selection> files;           // default: every file
    PieceDetail pieces = PieceDetail::none;   // all: fill VerifyReport::pieces
    unsigned threads = 0;                     // 0 = hardware_concurrency
    std::int64_t chunk_bytes = 0;             // work unit per thread; 0 = 16 MiB (tests use less)
    // By file index: the file's path below the save path on disk, when its placement's content
    // layout puts it elsewhere than the metainfo path (torrent/layout.hpp); "" or absent: there.
    std::vector<std::string> disk_paths = {};
    // Files outside `files` whose bytes a boundary piece of a checked file may read (v1 pieces
    // span files): they are opened and read where such a piece needs them, never checked or
    // reported themselves. Default: none (such a piece is "needs skipped file").
    std::optional<Selection> readable = std::nullopt;
    // false: VerifyReport::files lists only the selected files that did not verify (the others
    // are complete), so a report on a million files holds only its failures.
    bool keep_complete = true;
};

struct VerifyReport {
    Selection selection;
    std::vector<FileReport> files;     // selected files, by index
    std::vector<PieceVerdict> pieces;  // every piece, when PieceDetail::all
    std::int64_t pieces_checked = 0;   // pieces hashed
    std::int64_t pieces_ok = 0;
    std::int64_t pieces_corrupt = 0;
    std::uint64_t bytes_read = 0;
    double seconds = 0;

    // True when every selected file is complete.
    [[nodiscard]] bool all_verified() const;
    [[nodiscard]] std::size_t failed_files() const;
    // Stable JSON; piece lists are range strings ("3,7-9"), see selection.hpp:
    // {"verified", "selection", "summary": {...}, "files": [{"index","path","size","actual_size",
    //  "verdict","corrupt_pieces","needs_skipped_pieces","blocked_pieces","detail"}],
    //  "pieces": {"ok": "...", ...}}
    [[nodiscard]] nlohmann::json to_json() const;
    // Parts of to_json(), for writing the document piece by piece: "summary" for `file_count`
    // selected files of which `failed` did not verify, one entry of "files", and "pieces".
    [[nodiscard]] nlohmann::json summary_json(std::size_t file_count, std::size_t failed) const;
    [[nodiscard]] static nlohmann::json file_json(const FileReport& f);
    [[nodiscard]] nlohmann::json pieces_json() const;
};

// Verifies `save_path` (the directory holding the torrent's root folder or single file) against
// `meta`. Errors (no report): the save path cannot be opened (NOT_FOUND / IO), or the selection
// names a file the torrent does not have (SELECTION_OUT_OF_RANGE). Hash failures are a report.
[[nodiscard]] Result<VerifyReport> verify(const Metainfo& meta, const std::filesystem::path& save_path,
                                          const VerifyOptions& options = {});

// Piece numbers as a compact range string ("0-3,7").
[[nodiscard]] std::string piece_ranges(const std::vector<std::int64_t>& pieces);

}  // namespace archctl::torrent
