#include "lib/torrent/creator.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <system_error>

#include <fmt/format.h>

#include "lib/torrent/bencode.hpp"
#include "lib/torrent/merkle.hpp"
#include "lib/torrent/metainfo.hpp"
#include "lib/torrent/path_rules.hpp"
#include "lib/torrent/piece_engine.hpp"
#include "lib/torrent/safe_open.hpp"

namespace archctl::torrent {

using bencode::DictEntry;
using bencode::Value;

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

struct SourceFile {
    std::vector<std::string> rel;  // below the source directory; {basename} for a single file
    std::int64_t size = 0;
    bool executable = false;
};

Error create_error(const std::filesystem::path& source, std::string_view cause) {
    return Error{"TORRENT_CREATE", fmt::format("cannot create torrent from '{}': {}", printable(source.string()), cause)};
}

Status scan_dir(const std::filesystem::path& source, const std::filesystem::path& dir, std::vector<std::string>& prefix,
                std::vector<SourceFile>& out) {
    std::error_code ec;
    std::filesystem::directory_iterator it(dir, ec);
    if (ec) return create_error(source, fmt::format("cannot list '{}': {}", printable(dir.string()), ec.message()));
    for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
        std::string name = it->path().filename().string();
        prefix.push_back(name);
        struct stat st {};
        if (::lstat(it->path().c_str(), &st) != 0)
            return create_error(source, fmt::format("cannot stat '{}': {}", printable(join_path(prefix)), std::strerror(errno)));
        if (S_ISLNK(st.st_mode)) return create_error(source, fmt::format("'{}' is a symlink", printable(join_path(prefix))));
        if (S_ISDIR(st.st_mode)) {
            ARCHCTL_TRY_STATUS(scan_dir(source, it->path(), prefix, out));
        } else if (S_ISREG(st.st_mode)) {
            out.push_back(SourceFile{prefix, static_cast<std::int64_t>(st.st_size), (st.st_mode & S_IXUSR) != 0});
        } else {
            return create_error(source, fmt::format("'{}' is not a regular file", printable(join_path(prefix))));
        }
        prefix.pop_back();
    }
    if (ec) return create_error(source, fmt::format("cannot list '{}': {}", printable(dir.string()), ec.message()));
    return ok_status();
}

// The piece space being built: native entries (pads included) plus where each is on disk.
struct Layout {
    std::vector<FileEntry> files;
    std::vector<std::vector<std::string>> disk_rel;  // below the scan root; empty for pads
    std::vector<bool> listed_pad;                    // pad appears in the v1 `files` list
    std::int64_t total = 0;
};

Layout lay_out(const std::vector<SourceFile>& sources, const CreateOptions& options, std::int64_t l, bool multi,
               const std::string& name) {
    Layout out;
    // Single-file torrents have no pads: the v1 form cannot list one, and a v2 piece never
    // reads past its file.
    bool aligned = options.kind != Kind::v1;
    for (const SourceFile& s : sources) {
        FileEntry e;
        e.path = multi ? std::vector<std::string>{name} : std::vector<std::string>{};
        if (multi) e.path.insert(e.path.end(), s.rel.begin(), s.rel.end());
        else e.path = {name};
        e.size = s.size;
        e.offset = out.total;
        e.executable = s.executable;
        out.total += s.size;
        out.files.push_back(std::move(e));
        out.disk_rel.push_back(s.rel);
        out.listed_pad.push_back(false);
        if (multi && aligned && s.size > 0 && out.total % l != 0) {
            FileEntry pad;
            pad.size = l - out.total % l;
            pad.offset = out.total;
            pad.pad = true;
            pad.path = {name, ".pad", std::to_string(pad.size)};
            out.total += pad.size;
            out.files.push_back(std::move(pad));
            out.disk_rel.emplace_back();
            out.listed_pad.push_back(options.kind == Kind::hybrid);
        }
    }
    return out;
}

class SourceReader final : public PayloadReader {
public:
    SourceReader(int root_fd, const Layout& layout) : m_root(root_fd), m_layout(layout) {}
    Result<std::size_t> read(std::size_t native, std::int64_t offset, std::uint8_t* buffer, std::size_t size) override {
        if (native != m_current) {
            OpenedFile f = open_below(m_root, m_layout.disk_rel[native]);
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

Value file_props(const FileEntry& e, const std::optional<Sha256Digest>& root, bool pad) {
    Value props = Value::dict();
    if (pad) props.set("attr", Value::string("p"));
    else if (e.executable) props.set("attr", Value::string("x"));
    props.set("length", Value::integer(e.size));
    if (root) props.set("pieces root", Value::string(digest_bytes(*root)));
    return props;
}

void insert_tree(Value& tree, const std::vector<std::string>& rel, Value props) {
    Value* node = &tree;
    for (const auto& element : rel) {
        Value* child = nullptr;
        for (auto& entry : node->mutable_dict())
            if (entry.key == element) child = &entry.value;
        node = child ? child : &node->set(element, Value::dict());
    }
    Value leaf = Value::dict();
    leaf.set("", std::move(props));
    *node = std::move(leaf);
}

struct V2Result {
    std::vector<std::optional<Sha256Digest>> roots;  // by native index
    std::vector<DictEntry> layers;
};

}  // namespace

class TorrentBuilder {
public:
    TorrentBuilder(const std::filesystem::path& source, const CreateOptions& options) : m_source(source), m_options(options) {}

    Result<std::string> run() {
        ARCHCTL_TRY_STATUS(scan());
        ARCHCTL_TRY_STATUS(choose_piece_length());
        m_layout = lay_out(m_sources, m_options, m_piece_length, m_multi, m_name);
        std::vector<std::vector<std::string>> paths;
        for (const auto& e : m_layout.files)
            if (!e.pad) paths.push_back(e.path);
        ARCHCTL_TRY_STATUS(check_payload_paths(m_name, paths));
        ARCHCTL_TRY_ASSIGN(auto digests, hash());
        std::string bytes = bencode::encode(build(digests));
        auto parsed = parse_metainfo(bytes, m_name);
        if (!parsed) return create_error(m_source, fmt::format("the created metainfo does not parse back: {}", parsed.error().message));
        return bytes;
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
            m_sources.push_back(SourceFile{{absolute.filename().string()}, static_cast<std::int64_t>(st.st_size), (st.st_mode & S_IXUSR) != 0});
        } else if (S_ISDIR(st.st_mode)) {
            m_multi = true;
            m_root_dir = m_source;
            std::vector<std::string> prefix;
            ARCHCTL_TRY_STATUS(scan_dir(m_source, m_source, prefix, m_sources));
            std::sort(m_sources.begin(), m_sources.end(), [](const SourceFile& a, const SourceFile& b) { return a.rel < b.rel; });
        } else {
            return create_error(m_source, "not a regular file or directory");
        }
        for (const auto& s : m_sources) m_payload += s.size;
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

    Result<std::vector<PieceDigest>> hash() {
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
            if (failure.empty()) failure = fmt::format("cannot read '{}': {}", printable(join_path(m_layout.disk_rel[native])), e.message);
        };
        auto digests = hash_pieces(job);
        for (const auto& d : digests) {
            if (d.outcome == PieceOutcome::hashed) continue;
            return create_error(m_source, failure.empty() ? "a file shrank while it was hashed" : failure);
        }
        return digests;
    }

    V2Result v2_hashes(const std::vector<PieceDigest>& digests) const {
        V2Result out;
        out.roots.resize(m_layout.files.size());
        for (std::size_t i = 0; i < m_layout.files.size(); ++i) {
            const FileEntry& e = m_layout.files[i];
            if (e.pad || e.size == 0) continue;
            auto first = static_cast<std::size_t>(e.offset / m_piece_length);
            auto count = static_cast<std::size_t>((e.size + m_piece_length - 1) / m_piece_length);
            if (count == 1) {
                out.roots[i] = digests[first].v2;
                continue;
            }
            std::vector<Sha256Digest> layer;
            std::string layer_bytes;
            for (std::size_t p = first; p < first + count; ++p) {
                layer.push_back(digests[p].v2);
                layer_bytes += digest_bytes(digests[p].v2);
            }
            Sha256Digest root = merkle::root_from_layer(layer, m_piece_length);
            out.roots[i] = root;
            out.layers.push_back(DictEntry{digest_bytes(root), Value::string(std::move(layer_bytes))});
        }
        return out;
    }

    Value build(const std::vector<PieceDigest>& digests) const {
        Value info = Value::dict();
        info.set("name", Value::string(m_name));
        info.set("piece length", Value::integer(m_piece_length));
        V2Result v2;
        if (m_options.kind != Kind::v1) {
            v2 = v2_hashes(digests);
            Value tree = Value::dict();
            for (std::size_t i = 0; i < m_layout.files.size(); ++i) {
                const FileEntry& e = m_layout.files[i];
                if (e.pad) continue;
                insert_tree(tree, m_multi ? m_layout.disk_rel[i] : std::vector<std::string>{m_name}, file_props(e, v2.roots[i], false));
            }
            info.set("file tree", std::move(tree));
            info.set("meta version", Value::integer(2));
        }
        if (m_options.kind != Kind::v2) add_v1(info, digests);
        Value top = Value::dict();
        top.set("created by", Value::string(m_options.created_by));
        top.set("creation date", Value::integer(m_options.creation_date ? *m_options.creation_date : static_cast<std::int64_t>(std::time(nullptr))));
        top.set("info", std::move(info));
        if (!v2.layers.empty()) {
            Value layers = Value::dict();
            for (auto& entry : v2.layers) layers.set(entry.key, entry.value);
            top.set("piece layers", std::move(layers));
        }
        return top;
    }

    void add_v1(Value& info, const std::vector<PieceDigest>& digests) const {
        std::string pieces;
        pieces.reserve(digests.size() * 20);
        for (const auto& d : digests) pieces += digest_bytes(d.v1);
        info.set("pieces", Value::string(std::move(pieces)));
        if (!m_multi) {
            const FileEntry& e = m_layout.files.front();
            if (e.executable) info.set("attr", Value::string("x"));
            info.set("length", Value::integer(e.size));
            return;
        }
        Value files = Value::list();
        for (std::size_t i = 0; i < m_layout.files.size(); ++i) {
            const FileEntry& e = m_layout.files[i];
            if (e.pad && !m_layout.listed_pad[i]) continue;
            Value entry = file_props(e, std::nullopt, e.pad);
            Value path = Value::list();
            std::vector<std::string> rel = e.pad ? std::vector<std::string>{".pad", std::to_string(e.size)} : m_layout.disk_rel[i];
            for (const auto& element : rel) path.mutable_list().push_back(Value::string(element));
            entry.set("path", std::move(path));
            files.mutable_list().push_back(std::move(entry));
        }
        info.set("files", std::move(files));
    }

    const std::filesystem::path m_source;
    const CreateOptions& m_options;
    std::string m_name;
    bool m_multi = false;
    std::filesystem::path m_root_dir;
    std::vector<SourceFile> m_sources;
    std::int64_t m_payload = 0;
    std::int64_t m_piece_length = 0;
    std::int64_t m_piece_count = 0;
    Layout m_layout;
};

Result<std::string> create_torrent(const std::filesystem::path& source, const CreateOptions& options) {
    return TorrentBuilder(source, options).run();
}

}  // namespace archctl::torrent
