#include "lib/torrent/creator.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <system_error>

#include <fmt/format.h>

#include "lib/base/units.hpp"
#include "lib/torrent/bencode.hpp"
#include "lib/torrent/merkle.hpp"
#include "lib/torrent/metainfo.hpp"
#include "lib/torrent/path_rules.hpp"
#include "lib/torrent/piece_engine.hpp"
#include "lib/torrent/safe_open.hpp"

namespace archctl::torrent {

static_assert(sizeof(Sha1Digest) == 20 && sizeof(Sha256Digest) == 32, "digests are written straight from their vectors");

std::int64_t auto_piece_length(std::int64_t payload_bytes) {
    std::int64_t p = 16 * 1024;
    const std::int64_t max = 16 * 1024 * 1024;
    // Past max²/100 (about 2.8 TB) the answer is max; below it 100·payload fits in 64 bits.
    if (payload_bytes > max / 100 * max) return max;
    const std::int64_t need = payload_bytes * 100 - 50;
    while (p < max && p * p < need) p *= 2;
    return p;
}

namespace {

// The files found below the source, their paths (below the source directory; the file name for
// a single file) in one arena, encoded as a FileTable stores them, so the layout's table takes
// the arena over instead of copying every path.
class SourceList {
public:
    struct File {
        std::uint64_t path_at = 0;
        std::uint32_t path_bytes = 0;
        bool executable = false;
        std::int64_t size = 0;
    };

    // `rel` is '/'-joined (a scanned path: no empty elements).
    void add(std::string_view rel, std::int64_t size, bool executable) {
        std::size_t at = m_arena.size();
        std::size_t start = 0;
        while (true) {
            std::size_t slash = rel.find('/', start);
            FileTable::encode_element(m_arena, rel.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
            if (slash == std::string_view::npos) break;
            start = slash + 1;
        }
        m_files.push_back(File{at, static_cast<std::uint32_t>(m_arena.size() - at), executable, size});
    }
    // The encoded path of `f` (FileTable::rel_bytes).
    std::string_view rel(const File& f) const { return {m_arena.data() + f.path_at, f.path_bytes}; }
    const std::vector<File>& files() const { return m_files; }
    // Room for `extra` more arena bytes (added by whoever takes the arena).
    void reserve_more(std::size_t extra) { m_arena.reserve(m_arena.size() + extra); }
    std::string take_arena() { return std::move(m_arena); }

    // Sorts by path elements as raw bytes (the v2 file tree order): element by element, a
    // path before the paths it is a prefix of (as if '/' ranked below every byte).
    void sort() {
        std::sort(m_files.begin(), m_files.end(), [&](const File& a, const File& b) { return before(rel(a), rel(b)); });
    }

private:
    static std::size_t read_length(std::string_view encoded, std::size_t& pos) {
        std::size_t len = 0;
        unsigned shift = 0;
        while (true) {
            auto byte = static_cast<unsigned char>(encoded[pos++]);
            len |= static_cast<std::size_t>(byte & 0x7F) << shift;
            if ((byte & 0x80) == 0) return len;
            shift += 7;
        }
    }
    static bool before(std::string_view x, std::string_view y) {
        std::size_t i = 0, j = 0;
        while (i < x.size() && j < y.size()) {
            std::size_t m = read_length(x, i), n = read_length(y, j);
            int c = x.substr(i, m).compare(y.substr(j, n));
            if (c != 0) return c < 0;
            i += m;
            j += n;
        }
        return i == x.size() && j < y.size();
    }

    std::string m_arena;
    std::vector<File> m_files;
};

Error create_error(const std::filesystem::path& source, std::string_view cause) {
    return Error{"TORRENT_CREATE", fmt::format("cannot create torrent from '{}': {}", printable(source.string()), cause)};
}

Status scan_dir(const std::filesystem::path& source, const std::filesystem::path& dir, std::string& prefix, SourceList& out) {
    std::error_code ec;
    std::filesystem::directory_iterator it(dir, ec);
    if (ec) return create_error(source, fmt::format("cannot list '{}': {}", printable(dir.string()), ec.message()));
    for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
        std::size_t mark = prefix.size();
        if (!prefix.empty()) prefix.push_back('/');
        prefix += it->path().filename().string();
        struct stat st {};
        if (::lstat(it->path().c_str(), &st) != 0)
            return create_error(source, fmt::format("cannot stat '{}': {}", printable(prefix), std::strerror(errno)));
        if (S_ISLNK(st.st_mode)) return create_error(source, fmt::format("'{}' is a symlink", printable(prefix)));
        if (S_ISDIR(st.st_mode)) {
            ARCHCTL_TRY_STATUS(scan_dir(source, it->path(), prefix, out));
        } else if (S_ISREG(st.st_mode)) {
            out.add(prefix, static_cast<std::int64_t>(st.st_size), (st.st_mode & S_IXUSR) != 0);
        } else {
            return create_error(source, fmt::format("'{}' is not a regular file", printable(prefix)));
        }
        prefix.resize(mark);
    }
    if (ec) return create_error(source, fmt::format("cannot list '{}': {}", printable(dir.string()), ec.message()));
    return ok_status();
}

// The piece space being built: native entries (pads included). A multi-file torrent's entries
// have the scanned path below the root folder (the torrent's name), which is also where they
// are on disk below the source; a single file is `name` in the torrent, `disk_name` on disk.
struct Layout {
    FileTable files;
    std::string disk_name;
    std::int64_t total = 0;

    std::vector<std::string> disk_rel(std::size_t native) const {
        if (files.root().empty()) return {disk_name};
        return files.rel_elements(native);
    }
};

// The layout of `sources`, whose arena it takes (a multi-file torrent's paths are the scanned
// ones; pads' paths are added after them).
Layout lay_out(SourceList& sources, const CreateOptions& options, std::int64_t l, bool multi, const std::string& name) {
    Layout out;
    // Single-file torrents have no pads: the v1 form cannot list one, and a v2 piece never
    // reads past its file.
    bool aligned = options.kind != Kind::v1;
    if (multi) out.files.set_root(name);
    // The table's rows and pad paths counted first: a table grown by doubling would briefly
    // hold its old and new copies (three times its size for a million files).
    std::size_t rows = 0, pad_bytes = 0;
    std::int64_t total = 0;
    for (const auto& s : sources.files()) {
        ++rows;
        total += s.size;
        if (multi && aligned && s.size > 0 && total % l != 0) {
            std::int64_t pad = l - total % l;
            ++rows;
            pad_bytes += FileTable::encoded_size(".pad") + FileTable::encoded_size(std::to_string(pad));
            total += pad;
        }
    }
    if (multi) {
        sources.reserve_more(pad_bytes);
        out.files.adopt_arena(sources.take_arena());
        out.files.reserve(rows, 0);
    } else {
        out.files.reserve(rows, FileTable::encoded_size(name));
    }
    for (const auto& s : sources.files()) {
        FileFacts e{.size = s.size, .offset = out.total, .executable = s.executable};
        if (multi) {
            out.files.add_encoded(s.path_at, s.path_bytes, e);
        } else {
            out.files.add({std::string_view(name)}, e);
            for_each_element(sources.rel(s), [&](std::string_view element) { out.disk_name = std::string(element); });
        }
        out.total += s.size;
        if (multi && aligned && s.size > 0 && out.total % l != 0) {
            FileFacts pad{.size = l - out.total % l, .offset = out.total, .pad = true};
            out.files.add({".pad", std::to_string(pad.size)}, pad);
            out.total += pad.size;
        }
    }
    return out;
}

class SourceReader final : public PayloadReader {
public:
    SourceReader(int root_fd, const Layout& layout) : m_root(root_fd), m_layout(layout) {}
    Result<std::size_t> read(std::size_t native, std::int64_t offset, std::uint8_t* buffer, std::size_t size) override {
        if (native != m_current) {
            OpenedFile f = open_below(m_root, m_layout.disk_rel(native));
            if (f.failure != OpenFailure::none) return Error{"IO", f.detail};
            m_fd = std::move(f.fd);
            m_current = native;
        }
        while (true) {
            ssize_t n = ::pread(m_fd.get(), buffer, size, offset);
            if (n >= 0) return static_cast<std::size_t>(n);
            if (errno != EINTR) return Error{"IO", std::strerror(errno)};
        }
    }

    void prefetch(std::size_t native, std::int64_t offset, std::int64_t size) override {
        if (native == m_current) (void)::posix_fadvise(m_fd.get(), offset, size, POSIX_FADV_WILLNEED);
    }

private:
    int m_root;
    const Layout& m_layout;
    std::size_t m_current = static_cast<std::size_t>(-1);
    UniqueFd m_fd;
};

// A file's dictionary in the v2 tree (`root` set) or the v1 list (then `path` follows).
void write_props(bencode::Writer& w, const FileEntry& e, const std::optional<Sha256Digest>& root) {
    if (e.pad) {
        w.key("attr");
        w.string("p");
    } else if (e.executable) {
        w.key("attr");
        w.string("x");
    }
    w.key("length");
    w.integer(e.size);
    if (root) {
        w.key("pieces root");
        w.string(digest_bytes(*root));
    }
}

// The metainfo on its way out: written into a buffer that is handed to the sink about every
// MiB (and large strings straight through), the `info` dictionary's bytes hashed as they pass.
class Output {
public:
    Output(const ByteSink& sink, const CreateOptions& options, const std::filesystem::path& source)
        : m_sink(sink), m_kind(options.kind), m_max_bytes(options.max_bytes), m_source(source) {}

    std::string& buffer() { return m_buffer; }
    // Hands the buffer over once it is large; called between entries.
    Status spill() { return m_buffer.size() >= k_chunk ? flush() : ok_status(); }
    Status flush() {
        if (m_buffer.empty()) return ok_status();
        ARCHCTL_TRY_STATUS(pass(m_buffer));
        m_buffer.clear();
        return ok_status();
    }
    // `bytes` after the buffer, without copying them into it.
    Status through(std::string_view bytes) {
        ARCHCTL_TRY_STATUS(flush());
        return pass(bytes);
    }
    // What is written between these two is the info dictionary.
    Status begin_info() {
        ARCHCTL_TRY_STATUS(flush());
        m_in_info = true;
        return ok_status();
    }
    Status end_info() {
        ARCHCTL_TRY_STATUS(flush());
        m_in_info = false;
        return ok_status();
    }
    Identity identity() {
        std::optional<Sha1Digest> v1;
        std::optional<Sha256Digest> v2;
        if (m_kind != Kind::v2) v1 = m_sha1.finish();
        if (m_kind != Kind::v1) v2 = m_sha256.finish();
        return Identity(v1, v2);
    }

private:
    static constexpr std::size_t k_chunk = 1u << 20;
    Status pass(std::string_view bytes) {
        // What archctl would refuse to load is refused here, before more of it is written.
        m_written += bytes.size();
        if (m_written > m_max_bytes)
            return create_error(m_source, fmt::format("the torrent would be larger than {}, the most a .torrent archctl reads may be{}",
                                                      format_size(m_max_bytes),
                                                      m_kind == Kind::hybrid ? " (a hybrid lists every file twice and a pad file after "
                                                                               "most; --kind v2 lists each once)"
                                                                             : ""));
        if (m_in_info) {
            if (m_kind != Kind::v2) m_sha1.update(bytes);
            if (m_kind != Kind::v1) m_sha256.update(bytes);
        }
        return m_sink(bytes);
    }

    const ByteSink& m_sink;
    Kind m_kind;
    std::size_t m_max_bytes;
    const std::filesystem::path& m_source;
    std::size_t m_written = 0;
    std::string m_buffer;
    bool m_in_info = false;
    Sha1 m_sha1;
    Sha256 m_sha256;
};

std::string_view bytes_of(const void* data, std::size_t size) { return {static_cast<const char*>(data), size}; }

class TorrentBuilder {
public:
    TorrentBuilder(const std::filesystem::path& source, const CreateOptions& options) : m_source(source), m_options(options) {}

    // The built metainfo, handed to `sink` (CreatedTorrent::bytes left empty). Each stage's
    // tables are freed before the next grows: the scan's list before hashing.
    Result<CreatedTorrent> run(const ByteSink& sink) {
        ARCHCTL_TRY_STATUS(scan());
        ARCHCTL_TRY_STATUS(choose_piece_length());
        m_layout = lay_out(m_sources, m_options, m_piece_length, m_multi, m_name);
        const std::size_t file_count = m_sources.files().size();
        m_sources = SourceList();
        ARCHCTL_TRY_STATUS(check_paths());
        ARCHCTL_TRY_STATUS(hash());
        CreatedTorrent out;
        Output output(sink, m_options, m_source);
        ARCHCTL_TRY_STATUS(encode(output));
        out.identity = output.identity();
        out.name = m_name;
        out.multi_file = m_multi;
        out.piece_length = m_piece_length;
        out.payload_size = m_payload;
        out.file_count = file_count;
        // A v2 single file has the internal pad libtorrent counts (metainfo.hpp); no other kind
        // has a pad the layout does not list.
        out.total_size = m_layout.total;
        if (m_options.kind == Kind::v2 && !m_multi) out.total_size = m_piece_count * m_piece_length;
        out.piece_count = m_piece_count;
        return out;
    }

private:
    Status scan() {
        struct stat st {};
        if (::stat(m_source.c_str(), &st) != 0) return errno_error("cannot create torrent from", m_source.string(), errno);
        std::filesystem::path absolute = std::filesystem::absolute(m_source).lexically_normal();
        std::string base = absolute.filename().string();
        if (base.empty()) base = absolute.parent_path().filename().string();
        m_name = m_options.name.empty() ? base : m_options.name;
        if (S_ISREG(st.st_mode)) {
            m_multi = false;
            m_root_dir = absolute.parent_path();
            if (absolute.filename().empty()) return create_error(m_source, "not a file name");
            m_sources.add(absolute.filename().string(), static_cast<std::int64_t>(st.st_size), (st.st_mode & S_IXUSR) != 0);
        } else if (S_ISDIR(st.st_mode)) {
            m_multi = true;
            m_root_dir = m_source;
            std::string prefix;
            ARCHCTL_TRY_STATUS(scan_dir(m_source, m_source, prefix, m_sources));
            m_sources.sort();
        } else {
            return create_error(m_source, "not a regular file or directory");
        }
        for (const auto& s : m_sources.files()) m_payload += s.size;
        if (m_payload == 0) return create_error(m_source, "no data to hash (all files are empty or there are none)");
        return ok_status();
    }

    Status choose_piece_length() {
        m_piece_length = m_options.piece_length != 0 ? m_options.piece_length : auto_piece_length(m_payload);
        std::int64_t l = m_piece_length;
        if (l < merkle::k_block_size || (l & (l - 1)) != 0 || l > (std::int64_t{1} << 28))
            return create_error(m_source, fmt::format("piece length {} is not a power of two between 16 KiB and 256 MiB", l));
        return ok_status();
    }

    Status check_paths() const {
        const FileTable& files = m_layout.files;
        std::vector<std::uint32_t> payload;
        for (std::size_t i = 0; i < files.size(); ++i)
            if (!files.pad(i)) payload.push_back(static_cast<std::uint32_t>(i));
        return check_payload_paths(m_name, payload.size(), [&](std::size_t n) { return files.path_elements(payload[n]); });
    }

    // Hashes every piece, keeping the v1 hash and the v2 value each as the kind needs.
    Status hash() {
        ARCHCTL_TRY_ASSIGN(UniqueFd root, open_root_dir(m_root_dir));
        m_piece_count = (m_layout.total + m_piece_length - 1) / m_piece_length;
        HashJob job;
        job.files = &m_layout.files;
        job.piece_length = m_piece_length;
        job.total_size = m_layout.total;
        job.piece_count = m_piece_count;
        job.want_v1 = m_options.kind != Kind::v2;
        job.want_v2 = m_options.kind != Kind::v1;
        job.threads = m_options.threads;
        int fd = root.get();
        job.make_reader = [this, fd] { return std::make_unique<SourceReader>(fd, m_layout); };
        std::string failure;
        job.on_read_error = [&](std::size_t native, const Error& e) {
            if (failure.empty()) failure = fmt::format("cannot read '{}': {}", printable(join_path(m_layout.disk_rel(native))), e.message);
        };
        if (job.want_v1) m_v1.resize(static_cast<std::size_t>(m_piece_count));
        if (job.want_v2) m_v2.resize(static_cast<std::size_t>(m_piece_count));
        std::atomic<bool> failed{false};
        job.on_piece = [&](std::int64_t piece, const PieceDigest& d) {
            if (d.outcome != PieceOutcome::hashed) failed = true;
            if (!m_v1.empty()) m_v1[static_cast<std::size_t>(piece)] = d.v1;
            if (!m_v2.empty()) m_v2[static_cast<std::size_t>(piece)] = d.v2;
        };
        (void)hash_pieces(job);
        if (failed) return create_error(m_source, failure.empty() ? "a file shrank while it was hashed" : failure);
        return ok_status();
    }

    // Where a file's layer is in m_v2: first piece, piece count.
    using LayerAt = std::pair<std::size_t, std::size_t>;

    // The pieces root of a non-empty file: its one piece's value, or the root of its layer
    // (whose place is kept in `layers` by root, for "piece layers").
    Sha256Digest file_root(const FileEntry& e, std::map<Sha256Digest, LayerAt>& layers) const {
        auto first = static_cast<std::size_t>(e.offset / m_piece_length);
        auto count = static_cast<std::size_t>((e.size + m_piece_length - 1) / m_piece_length);
        if (count == 1) return m_v2[first];
        std::vector<Sha256Digest> layer(m_v2.begin() + static_cast<std::ptrdiff_t>(first),
                                        m_v2.begin() + static_cast<std::ptrdiff_t>(first + count));
        Sha256Digest root = merkle::root_from_layer(layer, m_piece_length);
        layers[root] = LayerAt{first, count};
        return root;
    }

    // The metainfo, written in canonical key order.
    Status encode(Output& out) const {
        bencode::Writer w(out.buffer());
        std::map<Sha256Digest, LayerAt> layers;
        w.begin_dict();
        w.key("created by");
        w.string(m_options.created_by);
        w.key("creation date");
        w.integer(m_options.creation_date ? *m_options.creation_date : static_cast<std::int64_t>(std::time(nullptr)));
        w.key("info");
        ARCHCTL_TRY_STATUS(out.begin_info());
        w.begin_dict();
        if (m_options.kind != Kind::v2 && !m_multi && m_layout.files.front().executable) {
            w.key("attr");
            w.string("x");
        }
        if (m_options.kind != Kind::v1) ARCHCTL_TRY_STATUS(write_tree(out, w, layers));
        if (m_options.kind != Kind::v2) ARCHCTL_TRY_STATUS(write_v1_files(out, w));
        if (m_options.kind != Kind::v1) {
            w.key("meta version");
            w.integer(2);
        }
        w.key("name");
        w.string(m_name);
        w.key("piece length");
        w.integer(m_piece_length);
        if (m_options.kind != Kind::v2) {
            w.key("pieces");
            w.raw(fmt::format("{}:", m_v1.size() * 20));
            ARCHCTL_TRY_STATUS(out.through(bytes_of(m_v1.data(), m_v1.size() * sizeof(Sha1Digest))));
        }
        w.end();
        ARCHCTL_TRY_STATUS(out.end_info());
        if (!layers.empty()) {
            w.key("piece layers");
            w.begin_dict();
            for (const auto& [root, at] : layers) {
                w.key(digest_bytes(root));
                w.raw(fmt::format("{}:", at.second * sizeof(Sha256Digest)));
                ARCHCTL_TRY_STATUS(out.through(bytes_of(m_v2.data() + at.first, at.second * sizeof(Sha256Digest))));
            }
            w.end();
        }
        w.end();
        return out.flush();
    }

    // "file tree": the payload files in order (sorted by path elements, so each directory's
    // entries come out sorted), directories opened and closed as the paths change.
    Status write_tree(Output& out, bencode::Writer& w, std::map<Sha256Digest, LayerAt>& layers) const {
        const FileTable& files = m_layout.files;
        w.key("file tree");
        w.begin_dict();
        std::vector<std::string> open;
        for (std::size_t i = 0; i < files.size(); ++i) {
            FileEntry e = files[i];
            if (e.pad) continue;
            std::vector<std::string> path = m_multi ? files.rel_elements(i) : std::vector<std::string>{m_name};
            std::size_t common = 0;
            while (common < open.size() && common + 1 < path.size() && open[common] == path[common]) ++common;
            for (; open.size() > common; open.pop_back()) w.end();
            for (std::size_t k = common; k + 1 < path.size(); ++k) {
                w.key(path[k]);
                w.begin_dict();
                open.push_back(path[k]);
            }
            std::optional<Sha256Digest> root;
            if (e.size > 0) root = file_root(e, layers);
            w.key(path.back());
            w.begin_dict();
            w.key("");
            w.begin_dict();
            write_props(w, e, root);
            w.end();
            w.end();
            ARCHCTL_TRY_STATUS(out.spill());
        }
        for (; !open.empty(); open.pop_back()) w.end();
        w.end();
        return ok_status();
    }

    // v1: "files" (multi-file; a hybrid lists its pads) or "length" (single file).
    Status write_v1_files(Output& out, bencode::Writer& w) const {
        const FileTable& files = m_layout.files;
        if (!m_multi) {
            w.key("length");
            w.integer(files.front().size);
            return ok_status();
        }
        w.key("files");
        w.begin_list();
        for (std::size_t i = 0; i < files.size(); ++i) {
            FileEntry e = files[i];
            if (e.pad && m_options.kind != Kind::hybrid) continue;
            w.begin_dict();
            write_props(w, e, std::nullopt);
            w.key("path");
            w.begin_list();
            for_each_element(files.rel_bytes(i), [&](std::string_view element) { w.string(element); });
            w.end();
            w.end();
            ARCHCTL_TRY_STATUS(out.spill());
        }
        w.end();
        return ok_status();
    }

    const std::filesystem::path m_source;
    const CreateOptions& m_options;
    std::string m_name;
    bool m_multi = false;
    std::filesystem::path m_root_dir;
    SourceList m_sources;
    std::int64_t m_payload = 0;
    std::int64_t m_piece_length = 0;
    std::int64_t m_piece_count = 0;
    Layout m_layout;
    std::vector<Sha1Digest> m_v1;    // per piece, v1 and hybrid
    std::vector<Sha256Digest> m_v2;  // per piece, v2 and hybrid
};

}  // namespace

Result<CreatedTorrent> build_torrent(const std::filesystem::path& source, const CreateOptions& options, const ByteSink& sink) {
    return TorrentBuilder(source, options).run(sink);
}

Result<CreatedTorrent> build_torrent(const std::filesystem::path& source, const CreateOptions& options) {
    std::string bytes;
    ByteSink append = [&](std::string_view chunk) {
        bytes.append(chunk);
        return ok_status();
    };
    ARCHCTL_TRY_ASSIGN(auto created, TorrentBuilder(source, options).run(append));
    // Checked with the bencode view (which builds nothing): canonical, the identity over its info.
    auto top = bencode::parse(bytes);
    if (!top) return create_error(source, fmt::format("the created metainfo is not canonical bencoding: {}", top.error().message));
    auto hashes = options.kind == Kind::v1   ? Identity::Hashes::v1_only
                  : options.kind == Kind::v2 ? Identity::Hashes::v2_only
                                             : Identity::Hashes::both;
    if (Identity::of_info_bytes(top->find("info").bytes(), hashes) != created.identity)
        return create_error(source, "the identity of the created metainfo is not that of its info bytes");
    created.bytes = std::move(bytes);
    return created;
}

Result<std::string> create_torrent(const std::filesystem::path& source, const CreateOptions& options) {
    ARCHCTL_TRY_ASSIGN(auto created, build_torrent(source, options));
    return std::move(created.bytes);
}

}  // namespace archctl::torrent
