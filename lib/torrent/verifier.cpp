#include "lib/torrent/verifier.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <unordered_map>

#include <fmt/format.h>

#include "lib/torrent/piece_engine.hpp"
#include "lib/torrent/safe_open.hpp"

namespace archctl::torrent {

std::string_view verdict_name(FileVerdict v) {
    switch (v) {
    case FileVerdict::complete: return "complete";
    case FileVerdict::missing: return "missing";
    case FileVerdict::short_file: return "short";
    case FileVerdict::oversized: return "oversized";
    case FileVerdict::corrupt: return "corrupt";
    case FileVerdict::incomplete: return "incomplete";
    case FileVerdict::needs_skipped: return "needs_skipped";
    case FileVerdict::unsafe: return "unsafe";
    case FileVerdict::unreadable: return "unreadable";
    }
    return "complete";
}

std::string_view verdict_name(PieceVerdict v) {
    switch (v) {
    case PieceVerdict::ok: return "ok";
    case PieceVerdict::corrupt: return "corrupt";
    case PieceVerdict::missing: return "missing";
    case PieceVerdict::needs_skipped: return "needs_skipped";
    case PieceVerdict::unreadable: return "unreadable";
    case PieceVerdict::not_checked: return "not_checked";
    }
    return "not_checked";
}

std::string piece_ranges(const std::vector<std::int64_t>& pieces) {
    std::vector<std::uint32_t> idx;
    idx.reserve(pieces.size());
    for (auto p : pieces) idx.push_back(static_cast<std::uint32_t>(p));
    return Selection::of(std::move(idx)).to_string();
}

bool VerifyReport::all_verified() const { return failed_files() == 0; }

std::size_t VerifyReport::failed_files() const {
    std::size_t n = 0;
    for (const auto& f : files)
        if (f.verdict != FileVerdict::complete) ++n;
    return n;
}

nlohmann::json VerifyReport::summary_json(std::size_t file_count, std::size_t failed) const {
    return {{"files", file_count},          {"failed_files", failed},
            {"pieces_checked", pieces_checked}, {"pieces_ok", pieces_ok},
            {"pieces_corrupt", pieces_corrupt}, {"bytes_read", bytes_read},
            {"seconds", seconds}};
}

nlohmann::json VerifyReport::file_json(const FileReport& f) {
    return {{"index", f.index},
            {"path", f.path},
            {"size", f.expected_size},
            {"actual_size", f.actual_size ? nlohmann::json(*f.actual_size) : nlohmann::json(nullptr)},
            {"verdict", verdict_name(f.verdict)},
            {"corrupt_pieces", piece_ranges(f.corrupt_pieces)},
            {"needs_skipped_pieces", piece_ranges(f.skipped_pieces)},
            {"blocked_pieces", piece_ranges(f.blocked_pieces)},
            {"detail", f.detail}};
}

nlohmann::json VerifyReport::pieces_json() const {
    std::vector<std::vector<std::int64_t>> by(6);
    for (std::size_t p = 0; p < pieces.size(); ++p) by[static_cast<std::size_t>(pieces[p])].push_back(static_cast<std::int64_t>(p));
    nlohmann::json pj = nlohmann::json::object();
    for (std::size_t v = 0; v < by.size(); ++v) pj[std::string(verdict_name(static_cast<PieceVerdict>(v)))] = piece_ranges(by[v]);
    return pj;
}

nlohmann::json VerifyReport::to_json() const {
    nlohmann::json j;
    j["verified"] = all_verified();
    j["selection"] = selection.to_json();
    j["summary"] = summary_json(files.size(), failed_files());
    nlohmann::json list = nlohmann::json::array();
    for (const auto& f : files) list.push_back(file_json(f));
    j["files"] = std::move(list);
    if (!pieces.empty()) j["pieces"] = pieces_json();
    return j;
}

namespace {

// "dir/file" → {"dir", "file"} (empty elements dropped).
std::vector<std::string> split_path(const std::string& path) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= path.size()) {
        std::size_t slash = path.find('/', start);
        std::string element = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
        if (!element.empty()) out.push_back(std::move(element));
        if (slash == std::string::npos) break;
        start = slash + 1;
    }
    return out;
}

// Reads through a per-thread file descriptor, reopened (safely) whenever the file changes.
class SavePathReader final : public PayloadReader {
public:
    // `disk_path(native)`: a native file's path elements below the save path on disk.
    SavePathReader(int root_fd, const Metainfo& meta, std::function<std::vector<std::string>(std::size_t)> disk_path)
        : m_root(root_fd), m_meta(meta), m_disk_path(std::move(disk_path)) {}

    Result<std::size_t> read(std::size_t native, std::int64_t offset, std::uint8_t* buffer, std::size_t size) override {
        if (native != m_current) {
            OpenedFile f = open_below(m_root, m_disk_path(native));
            if (f.failure != OpenFailure::none)
                return Error{"IO", fmt::format("cannot read '{}': {}", printable(m_meta.files()[native].path_string()), f.detail)};
            m_fd = std::move(f.fd);
            m_current = native;
        }
        while (true) {
            ssize_t n = ::pread(m_fd.get(), buffer, size, offset);
            if (n >= 0) return static_cast<std::size_t>(n);
            if (errno == EINTR) continue;
            return Error{"IO", fmt::format("cannot read '{}': {}", printable(m_meta.files()[native].path_string()),
                                           std::strerror(errno))};
        }
    }

    void prefetch(std::size_t native, std::int64_t offset, std::int64_t size) override {
        if (native == m_current) (void)::posix_fadvise(m_fd.get(), offset, size, POSIX_FADV_WILLNEED);
    }

private:
    int m_root;
    const Metainfo& m_meta;
    std::function<std::vector<std::string>(std::size_t)> m_disk_path;
    std::size_t m_current = static_cast<std::size_t>(-1);
    UniqueFd m_fd;
};

// What is known about one payload file before hashing (its open failure's text, rare, is kept
// apart so that a million complete files cost a few bytes each).
struct FileState {
    std::int64_t actual = 0;
    OpenFailure failure = OpenFailure::none;
    bool selected = false;
    bool readable = false;  // selected, or its bytes may be read for another file's pieces
};

constexpr std::uint8_t k_pending = 0xFF;

// The payload files (pads left out) of a native list, by qB index.
struct PayloadIndex {
    std::vector<std::uint32_t> native_of;  // qB index → native index
    std::vector<std::uint32_t> index_of;   // native index → qB index (pads: unused)

    explicit PayloadIndex(const FileTable& files) {
        index_of.assign(files.size(), 0);
        for (std::size_t i = 0; i < files.size(); ++i) {
            if (files.pad(i)) continue;
            index_of[i] = static_cast<std::uint32_t>(native_of.size());
            native_of.push_back(static_cast<std::uint32_t>(i));
        }
    }
};

class VerifyRun {
public:
    VerifyRun(const Metainfo& meta, const VerifyOptions& options, Selection selection, PayloadIndex payload)
        : m_meta(meta), m_files(meta.files()), m_options(options), m_selection(std::move(selection)),
          m_payload(std::move(payload)) {}

    Result<VerifyReport> run(const std::filesystem::path& save_path) {
        auto start = std::chrono::steady_clock::now();
        ARCHCTL_TRY_ASSIGN(UniqueFd root, open_root_dir(save_path));
        stat_files(root.get());
        classify_pieces();
        hash(root.get());
        VerifyReport report = build_report();
        report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return report;
    }

private:
    std::int64_t first_piece(std::size_t native) const { return m_files.offset_of(native) / m_meta.piece_length(); }
    std::int64_t end_piece(std::size_t native) const {
        std::int64_t size = m_files.size_of(native);
        if (size == 0) return first_piece(native);
        return (m_files.offset_of(native) + size - 1) / m_meta.piece_length() + 1;
    }

    // Where native file `native` is below the save path.
    std::vector<std::string> disk_path(std::size_t native) const {
        if (!m_files.pad(native)) {
            std::uint32_t index = m_payload.index_of[native];
            if (index < m_options.disk_paths.size() && !m_options.disk_paths[index].empty())
                return split_path(m_options.disk_paths[index]);
        }
        return m_files.path_elements(native);
    }

    void stat_files(int root) {
        m_state.resize(m_payload.native_of.size());
        for (std::uint32_t index = 0; index < m_state.size(); ++index) {
            FileState& s = m_state[index];
            s.selected = m_selection.contains(index);
            s.readable = s.selected || (m_options.readable && m_options.readable->contains(index));
            if (!s.readable) continue;
            OpenedFile opened = open_below(root, disk_path(m_payload.native_of[index]));
            s.failure = opened.failure;
            s.actual = opened.size;
            if (!opened.detail.empty()) m_detail.emplace(index, std::move(opened.detail));
        }
    }

    // Decides for every piece whether it can be hashed, and why not otherwise.
    void classify_pieces() {
        m_pre.assign(static_cast<std::size_t>(m_meta.piece_count()), static_cast<std::uint8_t>(PieceVerdict::not_checked));
        if (m_meta.has_v2()) m_owner.assign(m_pre.size(), 0);
        for (std::uint32_t index = 0; index < m_state.size(); ++index) {
            if (!m_state[index].selected) continue;
            std::size_t native = m_payload.native_of[index];
            for (std::int64_t p = first_piece(native); p < end_piece(native); ++p) m_pre[static_cast<std::size_t>(p)] = k_pending;
        }
        std::size_t cursor = 0;
        for (std::int64_t p = 0; p < m_meta.piece_count(); ++p) {
            std::int64_t start = p * m_meta.piece_length();
            std::int64_t end = start + m_meta.piece_size(p);
            while (cursor < m_files.size() && m_files.end_of(cursor) <= start) ++cursor;
            if (m_pre[static_cast<std::size_t>(p)] != k_pending) continue;
            m_pre[static_cast<std::size_t>(p)] = static_cast<std::uint8_t>(classify(p, start, end, cursor));
        }
    }

    // A piece holding bytes of a selected file: k_pending when it can be hashed.
    std::uint8_t classify(std::int64_t p, std::int64_t start, std::int64_t end, std::size_t cursor) {
        bool skipped = false, missing = false, unreadable = false;
        for (std::size_t i = cursor; i < m_files.size() && m_files.offset_of(i) < end; ++i) {
            if (m_files.pad(i) || m_files.size_of(i) == 0) continue;
            if (!m_owner.empty()) m_owner[static_cast<std::size_t>(p)] = static_cast<std::uint32_t>(i);
            const FileState& s = m_state[m_payload.index_of[i]];
            if (!s.readable) {
                skipped = true;
                continue;
            }
            std::int64_t needed = std::min(end, m_files.end_of(i)) - m_files.offset_of(i);
            if (s.failure == OpenFailure::io) unreadable = true;
            else if (s.failure != OpenFailure::none || needed > s.actual) missing = true;
        }
        (void)start;
        PieceVerdict v = missing ? PieceVerdict::missing
                         : unreadable ? PieceVerdict::unreadable
                         : skipped ? PieceVerdict::needs_skipped
                                   : PieceVerdict::ok;
        return v == PieceVerdict::ok ? k_pending : static_cast<std::uint8_t>(v);
    }

    void hash(int root) {
        HashJob job;
        job.files = &m_meta.files();
        job.piece_length = m_meta.piece_length();
        job.total_size = m_meta.total_size();
        job.piece_count = m_meta.piece_count();
        job.want_v1 = m_meta.has_v1();
        job.want_v2 = m_meta.has_v2();
        job.threads = m_options.threads;
        job.chunk_bytes = m_options.chunk_bytes;
        job.skip = [this](std::int64_t p) { return m_pre[static_cast<std::size_t>(p)] != k_pending; };
        job.make_reader = [this, root] {
            return std::make_unique<SavePathReader>(root, m_meta, [this](std::size_t native) { return disk_path(native); });
        };
        HashStats stats;
        m_digests = hash_pieces(job, &stats);
        m_bytes_read = stats.bytes_read;
    }

    PieceVerdict judge(std::int64_t p) const {
        auto pi = static_cast<std::size_t>(p);
        if (m_pre[pi] != k_pending) return static_cast<PieceVerdict>(m_pre[pi]);
        const PieceDigest& d = m_digests[pi];
        if (d.outcome == PieceOutcome::short_data) return PieceVerdict::missing;
        if (d.outcome != PieceOutcome::hashed) return PieceVerdict::unreadable;
        if (m_meta.has_v1() && d.v1 != m_meta.v1_pieces()[pi]) return PieceVerdict::corrupt;
        if (m_meta.has_v2() && d.has_v2) {
            const FileEntry owner = m_files[m_owner[pi]];
            Sha256Digest expected{};
            if (owner.size <= m_meta.piece_length()) {
                expected = *owner.pieces_root;
            } else {
                const auto* layer = m_meta.piece_layer(*owner.pieces_root);
                if (!layer) return PieceVerdict::ok;  // layers left out of a hybrid: its SHA-1 matched above
                expected = (*layer)[static_cast<std::size_t>(p - owner.offset / m_meta.piece_length())];
            }
            if (d.v2 != expected) return PieceVerdict::corrupt;
        }
        return PieceVerdict::ok;
    }

    std::string detail_of(std::uint32_t index) const {
        auto it = m_detail.find(index);
        return it == m_detail.end() ? std::string() : it->second;
    }

    FileReport file_report(std::uint32_t index, const std::vector<PieceVerdict>& verdicts) const {
        const FileState& s = m_state[index];
        std::size_t native = m_payload.native_of[index];
        const std::int64_t size = m_files.size_of(native);
        FileReport r;
        r.index = index;
        r.expected_size = size;
        r.detail = detail_of(index);
        if (s.failure == OpenFailure::symlink || s.failure == OpenFailure::not_regular) {
            r.verdict = FileVerdict::unsafe;
            return r;
        }
        if (s.failure == OpenFailure::missing) {
            r.verdict = FileVerdict::missing;
            return r;
        }
        if (s.failure == OpenFailure::io) {
            r.verdict = FileVerdict::unreadable;
            return r;
        }
        r.actual_size = s.actual;
        bool unreadable = false;
        for (std::int64_t p = first_piece(native); p < end_piece(native); ++p) {
            auto pi = static_cast<std::size_t>(p);
            PieceVerdict v = verdicts[pi];
            if (v == PieceVerdict::corrupt) r.corrupt_pieces.push_back(p);
            if (v == PieceVerdict::needs_skipped) r.skipped_pieces.push_back(p);
            // Classified missing before hashing while this file is whole: another file is short.
            bool pre_missing = m_pre[pi] == static_cast<std::uint8_t>(PieceVerdict::missing);
            if (v == PieceVerdict::missing && pre_missing && s.actual >= size) r.blocked_pieces.push_back(p);
            if (v == PieceVerdict::unreadable || (v == PieceVerdict::missing && !pre_missing)) unreadable = true;
        }
        if (s.actual < size) {
            r.verdict = FileVerdict::short_file;
            r.detail = fmt::format("{} of {} bytes on disk", s.actual, size);
        } else if (s.actual > size) {
            r.verdict = FileVerdict::oversized;
            r.detail = fmt::format("{} bytes on disk, the torrent says {}", s.actual, size);
        } else if (unreadable) {
            r.verdict = FileVerdict::unreadable;
            r.detail = "a read failed or the file changed while it was read";
        } else if (!r.corrupt_pieces.empty()) {
            r.verdict = FileVerdict::corrupt;
        } else if (!r.blocked_pieces.empty()) {
            r.verdict = FileVerdict::incomplete;
            r.detail = "some pieces also need bytes of a missing or short file";
        } else if (!r.skipped_pieces.empty()) {
            r.verdict = FileVerdict::needs_skipped;
            r.detail = "some pieces also hold bytes of files outside the selection";
        }
        return r;
    }

    VerifyReport build_report() {
        VerifyReport report;
        report.selection = m_selection;
        report.bytes_read = m_bytes_read;
        std::vector<PieceVerdict> verdicts(m_pre.size());
        for (std::size_t p = 0; p < verdicts.size(); ++p) {
            verdicts[p] = judge(static_cast<std::int64_t>(p));
            if (m_pre[p] == k_pending && m_digests[p].outcome == PieceOutcome::hashed) ++report.pieces_checked;
            if (verdicts[p] == PieceVerdict::ok) ++report.pieces_ok;
            if (verdicts[p] == PieceVerdict::corrupt) ++report.pieces_corrupt;
        }
        m_digests = {};
        for (std::uint32_t index = 0; index < m_state.size(); ++index) {
            if (!m_state[index].selected) continue;
            FileReport r = file_report(index, verdicts);
            if (r.verdict == FileVerdict::complete && !m_options.keep_complete) continue;
            r.path = m_files.path_string(m_payload.native_of[index]);
            report.files.push_back(std::move(r));
        }
        if (m_options.pieces == PieceDetail::all) report.pieces = std::move(verdicts);
        return report;
    }

    const Metainfo& m_meta;
    const FileTable& m_files;
    const VerifyOptions& m_options;
    Selection m_selection;
    PayloadIndex m_payload;
    std::vector<FileState> m_state;                           // by qB index
    std::unordered_map<std::uint32_t, std::string> m_detail;  // by qB index: why it could not be opened
    std::vector<std::uint8_t> m_pre;     // PieceVerdict, or k_pending when it must be hashed
    std::vector<std::uint32_t> m_owner;  // v2: native index of the file holding each piece
    std::vector<PieceDigest> m_digests;
    std::uint64_t m_bytes_read = 0;
};

}  // namespace

Result<VerifyReport> verify(const Metainfo& meta, const std::filesystem::path& save_path, const VerifyOptions& options) {
    // A hybrid's SHA-1 pieces prove every piece; a v2-only torrent without its layers proves none.
    if (meta.layers_missing() && !meta.has_v1())
        return Error("TORRENT_INVALID", fmt::format("cannot verify '{}': its torrent has no 'piece layers'", meta.name()),
                     "verify with the torrent qBittorrent exports (torrents/export), which carries them");
    PayloadIndex payload(meta.files());
    Selection selection = options.files ? *options.files : Selection::all(payload.native_of.size());
    ARCHCTL_TRY_STATUS(selection.check_within(payload.native_of.size()));
    return VerifyRun(meta, options, std::move(selection), std::move(payload)).run(save_path);
}

}  // namespace archctl::torrent
