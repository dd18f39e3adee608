#include "lib/torrent/piece_engine.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "lib/torrent/merkle.hpp"

namespace archctl::torrent {
namespace {

// A read window small enough to stay in L2 between the pread that fills it and the hashes that
// consume it (4 MiB windows spilled to L3 and cost more in copies than the saved syscalls).
constexpr std::size_t k_buffer_size = k_read_window;
// Work units small enough that two threads finish together (a 64 MiB tail could idle a core).
constexpr std::int64_t k_chunk_bytes = k_default_chunk_bytes;
constexpr auto k_block = static_cast<std::size_t>(merkle::k_block_size);

// Sequential read window over one file region of a chunk.
struct Window {
    std::size_t file = static_cast<std::size_t>(-1);
    std::int64_t start = 0;  // file offset of buffer[0]
    std::size_t length = 0;  // valid bytes in buffer
    std::vector<std::uint8_t> buffer = std::vector<std::uint8_t>(k_buffer_size);
};

class ChunkHasher {
public:
    ChunkHasher(const HashJob& job, PayloadReader& reader, std::mutex& error_mutex)
        : m_job(job), m_files(*job.files), m_reader(reader), m_error_mutex(error_mutex) {}

    void run(std::int64_t first, std::int64_t end, std::vector<PieceDigest>& out) {
        m_chunk_end = std::min(end * m_job.piece_length, m_job.total_size);
        for (std::int64_t p = first; p < end; ++p) {
            PieceDigest d;
            if (m_job.skip && m_job.skip(p)) d.outcome = PieceOutcome::skipped;
            else d = hash_piece(p);
            if (m_job.on_piece) m_job.on_piece(p, d);
            else out[static_cast<std::size_t>(p)] = d;
        }
    }

    HashStats stats() const { return m_stats; }

private:
    PieceDigest hash_piece(std::int64_t piece) {
        PieceDigest d;
        const std::int64_t start = piece * m_job.piece_length;
        const std::int64_t end = std::min(start + m_job.piece_length, m_job.total_size);
        std::optional<std::size_t> v2_file;
        merkle::LeafHasher leaves;
        d.outcome = PieceOutcome::hashed;
        for (std::size_t i = first_file_at(start); i < m_files.size() && m_files.offset_of(i) < end; ++i) {
            const std::int64_t f_size = m_files.size_of(i), f_offset = m_files.offset_of(i);
            if (f_size == 0) continue;
            std::int64_t a = std::max(start, f_offset) - f_offset;
            std::int64_t b = std::min(end, f_offset + f_size) - f_offset;
            if (m_files.pad(i)) {
                feed_zeros(b - a);
                continue;
            }
            if (m_job.want_v2) v2_file = i;
            d.outcome = feed_file(i, a, b, v2_file ? &leaves : nullptr);
            if (d.outcome != PieceOutcome::hashed) break;
        }
        if (d.outcome != PieceOutcome::hashed) {
            m_sha1.reset();
            return d;
        }
        ++m_stats.pieces_hashed;
        if (m_job.want_v1) d.v1 = m_sha1.finish();
        if (v2_file) {
            leaves.flush();
            auto l = leaves.take_leaves();
            d.has_v2 = true;
            d.v2 = m_files.size_of(*v2_file) <= m_job.piece_length ? merkle::small_file_root(l)
                                                                  : merkle::piece_hash(l, m_job.piece_length);
        }
        return d;
    }

    std::size_t first_file_at(std::int64_t offset) const {
        // The first file ending after `offset` (ends ascend).
        std::size_t lo = 0, hi = m_files.size();
        while (lo < hi) {
            std::size_t mid = lo + (hi - lo) / 2;
            if (offset < m_files.end_of(mid)) hi = mid;
            else lo = mid + 1;
        }
        return lo;
    }

    void feed_zeros(std::int64_t n) {
        static const std::vector<std::uint8_t> k_zeros(64 * 1024);
        if (!m_job.want_v1) return;
        while (n > 0) {
            auto take = static_cast<std::size_t>(std::min<std::int64_t>(n, static_cast<std::int64_t>(k_zeros.size())));
            m_sha1.update(k_zeros.data(), take);
            n -= static_cast<std::int64_t>(take);
        }
    }

    // Feeds bytes [a, b) of file i; refills the window with large reads bounded by the chunk.
    PieceOutcome feed_file(std::size_t i, std::int64_t a, std::int64_t b, merkle::LeafHasher* leaves) {
        const std::int64_t f_size = m_files.size_of(i), f_offset = m_files.offset_of(i);
        std::int64_t pos = a;
        while (pos < b) {
            if (m_window.file != i || pos < m_window.start ||
                pos >= m_window.start + static_cast<std::int64_t>(m_window.length)) {
                PieceOutcome o = refill(i, pos, std::min(f_size, m_chunk_end - f_offset));
                if (o != PieceOutcome::hashed) return o;
            }
            auto in_window = static_cast<std::size_t>(pos - m_window.start);
            auto take = static_cast<std::size_t>(
                std::min<std::int64_t>(b - pos, static_cast<std::int64_t>(m_window.length - in_window)));
            hash_bytes(m_window.buffer.data() + in_window, take, pos, leaves);
            pos += static_cast<std::int64_t>(take);
        }
        return PieceOutcome::hashed;
    }

    // Feeds `size` bytes at file offset `pos` to SHA-1 and the merkle leaves. For a hybrid both
    // hashes take one 16 KiB block in turn, so SHA-256 reads the bytes SHA-1 just pulled into L1.
    void hash_bytes(const std::uint8_t* data, std::size_t size, std::int64_t pos, merkle::LeafHasher* leaves) {
        if (!leaves || !m_job.want_v1) {
            if (m_job.want_v1) m_sha1.update(data, size);
            if (leaves) leaves->feed(data, size);
            return;
        }
        while (size > 0) {
            std::size_t to_boundary = k_block - static_cast<std::size_t>(pos % merkle::k_block_size);
            std::size_t n = std::min(size, to_boundary);
            m_sha1.update(data, n);
            leaves->feed(data, n);
            data += n;
            size -= n;
            pos += static_cast<std::int64_t>(n);
        }
    }

    PieceOutcome refill(std::size_t i, std::int64_t pos, std::int64_t limit) {
        auto want = static_cast<std::size_t>(std::min<std::int64_t>(limit - pos, static_cast<std::int64_t>(k_buffer_size)));
        m_window.file = i;
        m_window.start = pos;
        m_window.length = 0;
        while (m_window.length < want) {
            auto got = m_reader.read(i, pos + static_cast<std::int64_t>(m_window.length),
                                     m_window.buffer.data() + m_window.length, want - m_window.length);
            if (!got) {
                m_window.file = static_cast<std::size_t>(-1);
                if (m_job.on_read_error) {
                    std::lock_guard lock(m_error_mutex);
                    m_job.on_read_error(i, got.error());
                }
                return PieceOutcome::read_error;
            }
            if (*got == 0) break;
            m_window.length += *got;
            m_stats.bytes_read += *got;
        }
        if (m_window.length == 0) {
            m_window.file = static_cast<std::size_t>(-1);
            return PieceOutcome::short_data;
        }
        prefetch_ahead(i, pos + static_cast<std::int64_t>(m_window.length), limit);
        return PieceOutcome::hashed;
    }

    // Keeps a prefetch hint of about k_prefetch_bytes ahead of `pos` (within [pos, limit)) for
    // file i: one hint per k_prefetch_bytes / 2 of sequential reading.
    void prefetch_ahead(std::size_t i, std::int64_t pos, std::int64_t limit) {
        if (m_ahead_file != i || pos > m_ahead_end || pos < m_ahead_start) {
            m_ahead_file = i;
            m_ahead_start = pos;
            m_ahead_end = pos;
        }
        if (m_ahead_end >= limit || m_ahead_end - pos >= k_prefetch_bytes / 2) return;
        std::int64_t to = std::min(limit, pos + k_prefetch_bytes);
        m_reader.prefetch(i, m_ahead_end, to - m_ahead_end);
        m_ahead_end = to;
    }

    const HashJob& m_job;
    const FileTable& m_files;
    PayloadReader& m_reader;
    std::mutex& m_error_mutex;
    std::int64_t m_chunk_end = 0;
    Window m_window;
    std::size_t m_ahead_file = static_cast<std::size_t>(-1);  // prefetch hinted: [m_ahead_start, m_ahead_end)
    std::int64_t m_ahead_start = 0;
    std::int64_t m_ahead_end = 0;
    Sha1 m_sha1;
    HashStats m_stats;
};

}  // namespace

std::vector<PieceDigest> hash_pieces(const HashJob& job, HashStats* stats) {
    std::vector<PieceDigest> out(job.on_piece ? 0 : static_cast<std::size_t>(job.piece_count));
    const std::int64_t chunk_bytes = job.chunk_bytes > 0 ? job.chunk_bytes : k_chunk_bytes;
    const std::int64_t chunk_pieces = std::max<std::int64_t>(1, chunk_bytes / job.piece_length);
    const std::int64_t chunks = (job.piece_count + chunk_pieces - 1) / chunk_pieces;
    unsigned threads = job.threads != 0 ? job.threads : std::max(1u, std::thread::hardware_concurrency());
    threads = static_cast<unsigned>(std::min<std::int64_t>(threads, std::max<std::int64_t>(chunks, 1)));

    std::atomic<std::int64_t> next{0};
    std::mutex error_mutex;
    std::mutex stats_mutex;
    HashStats total;
    auto worker = [&] {
        auto reader = job.make_reader();
        ChunkHasher hasher(job, *reader, error_mutex);
        for (std::int64_t c = next++; c < chunks; c = next++) {
            std::int64_t first = c * chunk_pieces;
            hasher.run(first, std::min(first + chunk_pieces, job.piece_count), out);
        }
        std::lock_guard lock(stats_mutex);
        total.bytes_read += hasher.stats().bytes_read;
        total.pieces_hashed += hasher.stats().pieces_hashed;
    };
    if (threads <= 1) {
        worker();
    } else {
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
        for (auto& t : pool) t.join();
    }
    if (stats) *stats = total;
    return out;
}

}  // namespace archctl::torrent
