#pragma once
// PieceEngine: hashes the pieces of a piece space in parallel, one sequential pass per file.
//
// Shared by the verifier (compares) and the creator (records). The piece space is a native file
// list (pads included, as in Metainfo::files()). The range of pieces is cut into chunks of about
// 16 MiB; worker threads (hardware_concurrency by default) take chunks in order and read each
// file region sequentially in 256 KiB windows (cache-resident: the copy out of the page cache
// and both hashes touch the same L2 lines) through a per-thread PayloadReader, which is asked
// to prefetch up to 4 MiB ahead so that a cold cache still sees large reads. For a hybrid,
// SHA-1 and the SHA-256 leaf hash take each 16 KiB block in turn, so the data is read from
// memory once. Every payload byte is read once; pad files are hashed as zeros and never read.
// Pieces the caller marks as skipped are not read.
//
// Per piece the engine yields the SHA-1 of the piece (v1, across file boundaries) and/or the
// BEP 52 value of the piece (v2): for a file larger than one piece, the piece hash of its layer;
// for a file of at most one piece, the file's merkle root. v2 requires every non-empty file to
// start on a piece boundary (true for v2 and hybrid torrents).

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "lib/base/result.hpp"
#include "lib/torrent/metainfo.hpp"
#include "lib/torrent/sha.hpp"

namespace archctl::torrent {

// Largest single PayloadReader::read() the engine asks for.
inline constexpr std::size_t k_read_window = 256u << 10;
// Work unit per thread when HashJob::chunk_bytes is 0.
inline constexpr std::int64_t k_default_chunk_bytes = 16 << 20;
// How far ahead of its reads the engine asks the reader to prefetch (PayloadReader::prefetch):
// small windows alone would leave a cold-cache read to the kernel's small readahead.
inline constexpr std::int64_t k_prefetch_bytes = 4 << 20;

// Reads payload bytes for one worker thread. read() returns the number of bytes read, fewer
// than `size` only at end of file; an Error for anything else.
class PayloadReader {
public:
    virtual ~PayloadReader() = default;
    [[nodiscard]] virtual Result<std::size_t> read(std::size_t native_index, std::int64_t offset, std::uint8_t* buffer,
                                                   std::size_t size) = 0;
    // A hint that bytes [offset, offset + size) of a file just read will be read soon (the reader
    // may start reading them from disk); never fails. Default: nothing.
    virtual void prefetch(std::size_t /*native_index*/, std::int64_t /*offset*/, std::int64_t /*size*/) {}
};

enum class PieceOutcome : std::uint8_t {
    hashed,      // digests are valid
    skipped,     // the caller asked not to read it
    short_data,  // a file ended before the piece's bytes did
    read_error,  // the reader failed
};

struct PieceDigest {
    PieceOutcome outcome = PieceOutcome::skipped;
    bool has_v2 = false;  // the piece holds bytes of a non-empty file (v2 value computed)
    Sha1Digest v1{};
    Sha256Digest v2{};
};

struct HashJob {
    const FileTable* files = nullptr;
    std::int64_t piece_length = 0;
    std::int64_t total_size = 0;
    std::int64_t piece_count = 0;
    bool want_v1 = true;
    bool want_v2 = false;
    unsigned threads = 0;                                 // 0 = hardware_concurrency
    std::int64_t chunk_bytes = 0;                         // bytes per work unit; 0 = 16 MiB
    std::function<bool(std::int64_t piece)> skip;         // optional: true = do not read this piece
    std::function<std::unique_ptr<PayloadReader>()> make_reader;  // one per worker thread
    // Optional, called (from worker threads, serialized by the engine) on each read error.
    std::function<void(std::size_t native_index, const Error&)> on_read_error;
    // Optional: each piece's digest is handed here (from worker threads, each piece once, pieces
    // of different chunks at the same time) instead of being kept; hash_pieces then returns an
    // empty list, so a caller keeps only the part of each digest it needs.
    std::function<void(std::int64_t piece, const PieceDigest&)> on_piece;
};

struct HashStats {
    std::uint64_t bytes_read = 0;
    std::int64_t pieces_hashed = 0;
};

// Hashes every piece of the job; result[i] belongs to piece i (empty when job.on_piece is set).
[[nodiscard]] std::vector<PieceDigest> hash_pieces(const HashJob& job, HashStats* stats = nullptr);

}  // namespace archctl::torrent
