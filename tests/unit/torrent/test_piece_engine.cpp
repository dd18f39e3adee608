// Piece engine: digests against independently computed references (v1, v2, hybrid; pads, pieces
// larger and smaller than the read window, files smaller than a piece, short files, read
// errors), and the read pattern: every byte read once, in windows of at most k_read_window,
// with prefetch hints inside the file and not one per window.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "lib/torrent/merkle.hpp"
#include "lib/torrent/piece_engine.hpp"
#include "tests/unit/torrent/torrent_builder.hpp"

using namespace archctl::torrent;

namespace {

struct Payload {
    FileTable files;  // pads after every file but the last
    std::vector<std::string> data; // by native index; pads empty
    std::int64_t piece_length = 0;
    std::int64_t total = 0;
    std::int64_t pieces() const { return (total + piece_length - 1) / piece_length; }
};

Payload make_payload(const std::vector<std::size_t>& sizes, std::int64_t piece_length) {
    Payload p;
    p.piece_length = piece_length;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        FileFacts f;
        f.size = static_cast<std::int64_t>(sizes[i]);
        f.offset = p.total;
        p.files.add({"f" + std::to_string(i)}, f);
        p.data.push_back(test::random_bytes(sizes[i], static_cast<std::uint32_t>(i + 1)));
        p.total += f.size;
        std::int64_t rem = p.total % piece_length;
        if (i + 1 < sizes.size() && rem != 0) {
            FileFacts pad;
            pad.size = piece_length - rem;
            pad.offset = p.total;
            pad.pad = true;
            p.files.add({".pad", std::to_string(piece_length - rem)}, pad);
            p.data.emplace_back();
            p.total += pad.size;
        }
    }
    return p;
}

struct ReadLog {
    std::atomic<int> calls{0};
    std::atomic<std::size_t> largest{0};
    std::atomic<int> prefetches{0};
    std::atomic<int> bad_prefetches{0};  // outside the file, or empty
};

class MemReader final : public PayloadReader {
public:
    MemReader(const Payload& p, ReadLog& log, std::size_t fail_native, std::size_t cut_native, std::size_t cut_size)
        : m_p(p), m_log(log), m_fail(fail_native), m_cut(cut_native), m_cut_size(cut_size) {}

    archctl::Result<std::size_t> read(std::size_t native, std::int64_t offset, std::uint8_t* buffer, std::size_t size) override {
        ++m_log.calls;
        std::size_t seen = m_log.largest.load();
        while (size > seen && !m_log.largest.compare_exchange_weak(seen, size)) {}
        if (native == m_fail) return archctl::Error{"IO", "injected read error"};
        const std::string& d = m_p.data[native];
        std::size_t have = native == m_cut ? std::min(m_cut_size, d.size()) : d.size();
        auto off = static_cast<std::size_t>(offset);
        if (off >= have) return std::size_t{0};
        std::size_t n = std::min(size, have - off);
        std::memcpy(buffer, d.data() + off, n);
        return n;
    }

    void prefetch(std::size_t native, std::int64_t offset, std::int64_t size) override {
        ++m_log.prefetches;
        if (size <= 0 || offset < 0 || offset + size > m_p.files[native].size || m_p.files[native].pad) ++m_log.bad_prefetches;
    }

private:
    const Payload& m_p;
    ReadLog& m_log;
    std::size_t m_fail;
    std::size_t m_cut;
    std::size_t m_cut_size;
};

// The reference digests: SHA-1 over piece space (pads as zeros) and BEP 52 values per piece.
std::vector<PieceDigest> reference(const Payload& p) {
    std::string space;
    for (std::size_t i = 0; i < p.files.size(); ++i)
        space += p.files[i].pad ? std::string(static_cast<std::size_t>(p.files[i].size), '\0') : p.data[i];
    std::vector<PieceDigest> out(static_cast<std::size_t>(p.pieces()));
    for (std::int64_t j = 0; j < p.pieces(); ++j) {
        auto start = static_cast<std::size_t>(j * p.piece_length);
        out[static_cast<std::size_t>(j)].outcome = PieceOutcome::hashed;
        out[static_cast<std::size_t>(j)].v1 = sha1(std::string_view(space).substr(start, static_cast<std::size_t>(p.piece_length)));
    }
    const auto k = static_cast<std::size_t>(p.piece_length / merkle::k_block_size);
    for (std::size_t i = 0; i < p.files.size(); ++i) {
        const FileEntry f = p.files[i];
        if (f.pad || f.size == 0) continue;
        merkle::LeafHasher h;
        h.feed(reinterpret_cast<const std::uint8_t*>(p.data[i].data()), p.data[i].size());
        h.flush();
        std::vector<Sha256Digest> leaves = h.take_leaves();
        auto first = static_cast<std::size_t>(f.offset / p.piece_length);
        if (f.size <= p.piece_length) {
            out[first].has_v2 = true;
            out[first].v2 = merkle::small_file_root(leaves);
            continue;
        }
        for (std::size_t j = 0; j * k < leaves.size(); ++j) {
            std::vector<Sha256Digest> part(leaves.begin() + static_cast<std::ptrdiff_t>(j * k),
                                           leaves.begin() + static_cast<std::ptrdiff_t>(std::min(leaves.size(), (j + 1) * k)));
            out[first + j].has_v2 = true;
            out[first + j].v2 = merkle::piece_hash(part, p.piece_length);
        }
    }
    return out;
}

struct Run {
    std::vector<PieceDigest> digests;
    HashStats stats;
};

Run hash(const Payload& p, ReadLog& log, bool v1, bool v2, unsigned threads, std::int64_t chunk_bytes,
         std::size_t fail_native = static_cast<std::size_t>(-1), std::size_t cut_native = static_cast<std::size_t>(-1),
         std::size_t cut_size = 0) {
    HashJob job;
    job.files = &p.files;
    job.piece_length = p.piece_length;
    job.total_size = p.total;
    job.piece_count = p.pieces();
    job.want_v1 = v1;
    job.want_v2 = v2;
    job.threads = threads;
    job.chunk_bytes = chunk_bytes;
    job.make_reader = [&] { return std::make_unique<MemReader>(p, log, fail_native, cut_native, cut_size); };
    Run r;
    r.digests = hash_pieces(job, &r.stats);
    return r;
}

std::uint64_t payload_bytes(const Payload& p) {
    std::uint64_t n = 0;
    for (const auto& f : p.files)
        if (!f.pad) n += static_cast<std::uint64_t>(f.size);
    return n;
}

}  // namespace

TEST_CASE("piece engine: digests match the reference for v1, v2 and hybrid at any piece size and split") {
    // Files larger than the read window and smaller than a piece, odd sizes, pads between files.
    const std::vector<std::size_t> sizes = {300001, 700000, 5000, 16384, 1, 600000};
    for (std::int64_t pl : {std::int64_t{16384}, std::int64_t{65536}, std::int64_t{1} << 20}) {
        Payload p = make_payload(sizes, pl);
        std::vector<PieceDigest> want = reference(p);
        for (int kind = 0; kind < 3; ++kind) {
            bool v1 = kind != 1, v2 = kind != 0;
            for (unsigned threads : {1u, 2u}) {
                for (std::int64_t chunk : {std::int64_t{0}, pl, 3 * pl}) {
                    CAPTURE(pl);
                    CAPTURE(kind);
                    CAPTURE(threads);
                    CAPTURE(chunk);
                    ReadLog log;
                    Run r = hash(p, log, v1, v2, threads, chunk);
                    REQUIRE(r.digests.size() == want.size());
                    for (std::size_t j = 0; j < want.size(); ++j) {
                        CAPTURE(j);
                        REQUIRE(r.digests[j].outcome == PieceOutcome::hashed);
                        if (v1) CHECK(r.digests[j].v1 == want[j].v1);
                        CHECK(r.digests[j].has_v2 == (v2 && want[j].has_v2));
                        if (v2 && want[j].has_v2) CHECK(r.digests[j].v2 == want[j].v2);
                    }
                    CHECK(r.stats.pieces_hashed == p.pieces());
                    // Every payload byte is read exactly once; pads never.
                    CHECK(r.stats.bytes_read == payload_bytes(p));
                    CHECK(log.largest.load() <= k_read_window);
                    CHECK(log.bad_prefetches.load() == 0);
                }
            }
        }
    }
}

TEST_CASE("piece engine: one thread reads each file in windows of k_read_window") {
    Payload p = make_payload({300001, 700000, 5000}, 65536);
    ReadLog log;
    Run r = hash(p, log, true, true, 1, 0);
    CHECK(r.stats.bytes_read == 300001 + 700000 + 5000);
    // ceil(300001 / 256 KiB) + ceil(700000 / 256 KiB) + 1
    CHECK(log.calls.load() == 2 + 3 + 1);
    CHECK(log.largest.load() == k_read_window);
    // One prefetch hint per file with bytes left after its first window (each is under
    // k_prefetch_bytes): none per window, none for the 5000-byte file read whole at once.
    CHECK(log.prefetches.load() == 2);
    CHECK(log.bad_prefetches.load() == 0);
}

TEST_CASE("piece engine: prefetch hints run ahead of the reads, one per half prefetch span") {
    const std::size_t big = 3 * static_cast<std::size_t>(k_prefetch_bytes) + 12345;
    Payload p = make_payload({big}, 1 << 20);
    ReadLog log;
    Run r = hash(p, log, true, false, 1, std::int64_t{1} << 30);
    CHECK(r.stats.bytes_read == big);
    CHECK(log.bad_prefetches.load() == 0);
    // First hint at the first read, then one each k_prefetch_bytes / 2 until the end is covered.
    const auto expected = 1 + static_cast<int>((static_cast<std::int64_t>(big) - k_prefetch_bytes + k_prefetch_bytes / 2 - 1) /
                                               (k_prefetch_bytes / 2));
    CHECK(log.prefetches.load() <= expected + 1);
    CHECK(log.prefetches.load() >= expected - 1);
}

TEST_CASE("piece engine: a short file and a read error fail only their own pieces") {
    const std::int64_t pl = 65536;
    Payload p = make_payload({200000, 700000, 100000}, pl);
    std::vector<PieceDigest> want = reference(p);
    const std::size_t second = 2;  // native index of f1 (f0, pad, f1, pad, f2)
    REQUIRE(p.files[second].path_elements().front() == "f1");
    const auto first_of_f1 = static_cast<std::size_t>(p.files[second].offset / pl);
    const auto first_of_f2 = static_cast<std::size_t>(p.files[4].offset / pl);
    for (unsigned threads : {1u, 2u}) {
        ReadLog log;
        // f1 holds only its first 300000 bytes: pieces up to byte 262144 pass, the rest are short.
        Run r = hash(p, log, true, true, threads, pl, static_cast<std::size_t>(-1), second, 300000);
        for (std::size_t j = 0; j < want.size(); ++j) {
            CAPTURE(j);
            bool in_f1 = j >= first_of_f1 && j < first_of_f2;
            bool whole = !in_f1 || (static_cast<std::int64_t>(j - first_of_f1) + 1) * pl <= 300000;
            if (whole) {
                REQUIRE(r.digests[j].outcome == PieceOutcome::hashed);
                CHECK(r.digests[j].v1 == want[j].v1);
                CHECK(r.digests[j].v2 == want[j].v2);
            } else {
                CHECK(r.digests[j].outcome == PieceOutcome::short_data);
            }
        }
        ReadLog log2;
        Run e = hash(p, log2, true, true, threads, pl, second);
        for (std::size_t j = 0; j < want.size(); ++j) {
            bool in_f1 = j >= first_of_f1 && j < first_of_f2;
            CHECK(e.digests[j].outcome == (in_f1 ? PieceOutcome::read_error : PieceOutcome::hashed));
            if (!in_f1) CHECK(e.digests[j].v1 == want[j].v1);
        }
    }
}
