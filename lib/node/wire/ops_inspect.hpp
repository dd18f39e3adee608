#pragma once
// The messages of the operations that look at a node (info, space, tree, metainfo_read) and of the
// small writes that prove a root or a route (open_roots, write_check, nonce_write, nonce_observe).
// Part of lib/node/wire/ops.hpp, which says how the structs map to the wire.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/boxed.hpp"
#include "lib/base/result.hpp"
#include "lib/node/wire/protocol.hpp"

namespace archctl::node {

// ---- open_roots ----------------------------------------------------------------------------

// Keys: roots (the directories the connection serves from now on).
struct OpenRootsRequest {
    std::vector<std::string> roots;
};

// Keys: roots (each as the hello describes a root).
struct OpenRootsResult {
    std::vector<RootInfo> roots;
};

// ---- info ----------------------------------------------------------------------------------

// Keys: probe_dirs (optional).
struct InfoRequest {
    std::vector<std::string> probe_dirs;  // directories to describe besides the roots
};

// A root or probed directory. Keys: path, fs_type, fs_id, capabilities, free_bytes, total_bytes,
// dev (the last three absent when statvfs/fstat failed).
struct DirectoryInfo {
    RootInfo root;
    std::optional<std::uint64_t> free_bytes;
    std::optional<std::uint64_t> total_bytes;
    std::optional<std::uint64_t> dev;
};

// Keys: archctl, protocol, pid, roots, probes.
struct InfoResult {
    std::string archctl;
    int protocol = k_protocol_version;
    long pid = 0;
    std::vector<DirectoryInfo> roots;
    std::vector<DirectoryInfo> probes;
};

// The free bytes of the filesystem that holds `path`, by the longest configured root that
// contains it (component-wise: "/srv/a" contains "/srv/a/x" but not "/srv/ab"). nullopt when no
// root contains the path or the node could not measure that root.
[[nodiscard]] std::optional<std::uint64_t> free_bytes_at(const InfoResult& info, const std::string& path);

// ---- space ---------------------------------------------------------------------------------

// Keys: path (a node path at or below a root; it need not exist yet).
struct SpaceRequest {
    std::string path;
};

// The free and total bytes of the filesystem that holds `path`, by one statvfs of the directory
// itself or, while it does not exist, of its nearest existing ancestor up to its root: the
// filesystem it will be created on. Nothing is written. Keys: path (as asked), measured (the
// directory statvfs was read at), free_bytes (what an unprivileged writer may still use),
// total_bytes. Unlike other results, one without measured, free_bytes or total_bytes does not
// read (a PROTOCOL error at the caller), so an answer that says nothing is never 0 free.
struct SpaceResult {
    std::string path;
    std::string measured;
    std::uint64_t free_bytes = 0;
    std::uint64_t total_bytes = 0;
};

// ---- tree ----------------------------------------------------------------------------------

// Keys: base, paths. Its result is in the entries form (TreeResult).
struct TreeRequest {
    std::string base;
    std::vector<std::string> paths;  // relative to base
};

// A tree request whose result is in the columns form, with the EntryStat keys `columns` (any of
// k_tree_stat_keys; none: the entry types only). Keys: base, paths, columns.
struct TreeColumnsRequest {
    TreeRequest tree;
    std::vector<std::string> columns;
};

// The EntryStat keys, in the order the columns form of a full stat lists them.
inline const std::vector<std::string> k_tree_stat_keys = {"size", "dev", "ino", "nlink", "mtime_ns", "ctime_ns", "mode", "btime_ns"};

// lstat of an entry. Keys: size, dev, ino, nlink, mtime_ns, ctime_ns, mode, btime_ns (when known).
struct EntryStat {
    std::uint64_t size = 0, dev = 0, ino = 0, nlink = 0;
    std::int64_t mtime_ns = 0;
    unsigned mode = 0;       // permission bits
    std::int64_t btime_ns = 0;  // birth time; 0: the filesystem does not say
    std::int64_t ctime_ns = 0;  // inode change time; 0 from a node that does not send it
};

// What a tree entry is: the file type lstat saw ("file", "dir", "symlink", "fifo", "socket",
// "char", "block", "other" on the wire), "absent" (nothing there) or "refused" (the node would
// not look: the entry's error says why).
enum class EntryType { file, dir, symlink, fifo, socket, char_device, block, other, absent, refused };

// The wire name of `type` ("char" for char_device, else the enumerator's name).
[[nodiscard]] std::string_view to_string(EntryType type);
// The type a wire name stands for; nullopt for a name no node sends.
[[nodiscard]] std::optional<EntryType> parse_entry_type(std::string_view name);

// Keys: path, type (EntryType's wire name; absent: "refused"), error {code, message} (refused
// only), and the EntryStat keys when the entry exists. A type no node sends does not read.
struct TreeEntry {
    std::string path;
    EntryType type = EntryType::refused;
    std::optional<EntryStat> stat;
    Boxed<Error> error;  // refused: why (a tree of 100,000 entries has almost none)
};

// One entry per requested path, in order, in one of two forms (the request chooses):
// - entries: Keys: base_exists, entries (each a TreeEntry object, its path echoed).
// - columns (a TreeColumnsRequest; ~10 bytes a file where the entries form takes ~270, and
//   one JSON value a file for the reader where an object takes ~11): Keys: base_exists, types (a
//   string, one letter per entry: f file, d dir, l symlink, p fifo, s socket, c char, b block,
//   o other, a absent, r refused), fields (the EntryStat keys of each stat, in order: those the
//   request named that the node knows), stats (a flat array of integers: for every entry that
//   exists, fields.size() of them), errors (optional: [index, code, message] of a refused entry).
//   Its entries' paths are empty: each is the request's path at its place.
// Both read into the same TreeResult; a columns result whose counts do not add up (a letter no
// node sends, a stats array of another length, an error at an index that is not refused) does
// not read.
struct TreeResult {
    bool base_exists = false;
    std::vector<TreeEntry> entries;
};

// Writes the columns form entry by entry, so a node never holds its entries: add() each entry
// in the request's order, then finish(). `fields`: the stat keys asked for (unknown names are left
// out of the result's fields).
class TreeColumnsWriter {
public:
    explicit TreeColumnsWriter(const std::vector<std::string>& fields, std::size_t expected = 0);
    void add(const TreeEntry& entry);
    [[nodiscard]] nlohmann::json finish(bool base_exists) &&;

private:
    std::vector<std::string> m_fields;
    std::string m_types;
    nlohmann::json m_stats = nlohmann::json::array();
    nlohmann::json m_errors = nlohmann::json::array();
};

// The columns form of `result` with the stat keys `fields`.
[[nodiscard]] nlohmann::json tree_columns_json(const TreeResult& result, const std::vector<std::string>& fields);

// ---- write_check ---------------------------------------------------------------------------

// Keys: path (a root, or a directory below one).
struct WriteCheckRequest {
    std::string path;
};

// Keys: path, writable (always true: a directory that refuses the check file is an error).
struct WriteCheckResult {
    std::string path;
    bool writable = false;
};

// ---- nonces --------------------------------------------------------------------------------

// Keys: path, content, create_parents.
struct NonceWriteRequest {
    std::string path;
    std::string content;
    bool create_parents = false;
};

// Keys: path, size.
struct NonceWriteResult {
    std::string path;
    std::uint64_t size = 0;
};

// Keys: path.
struct NonceObserveRequest {
    std::string path;
};

// Keys: path, present, content (when present).
struct NonceObserveResult {
    std::string path;
    bool present = false;
    std::string content;
};

// ---- metainfo_read -------------------------------------------------------------------------

// A torrent's .torrent as qBittorrent keeps it, `<id>.torrent` in its BT_backup directory, read
// through the node: asking qBittorrent's torrents/export for it instead blocks qBittorrent's web
// interface for a minute and more on a large v2 or hybrid torrent. The node reads files named
// "*.torrent" only (any other name is BAD_REQUEST), so it never serves arbitrary files this way;
// the leaf is a regular file opened without following a symlink (PATH_SYMLINK). A missing file or
// parent directory is not an error: found is false, and the caller asks qBittorrent. Whether the
// bytes are the torrent's is the caller's check.

// The most max_bytes may say (256 MiB); 0 or a larger number is BAD_REQUEST.
inline constexpr std::uint64_t k_metainfo_read_max_bytes = std::uint64_t{256} << 20;
// The largest file a node answers with, whatever max_bytes says: its base64 (4 bytes for every 3)
// and the response around it must fit on one protocol line (k_max_line_bytes), or the exec
// transport would give up on the node. 50,328,576 bytes, just under 48 MiB; a larger file is
// TOO_LARGE like one over max_bytes.
inline constexpr std::uint64_t k_metainfo_read_line_bytes = (k_max_line_bytes - 4096) / 4 * 3;

// Keys: path (a node path whose name ends in ".torrent"), max_bytes (a larger file is TOO_LARGE;
// 1..k_metainfo_read_max_bytes); optional offset and length (1..k_metainfo_read_line_bytes): the
// part [offset, offset + length) of the file, so a large torrent travels in parts and neither
// end holds its whole text at once. Without length the whole file is answered, as a node that
// does not know the keys answers (then no file past one protocol line is read).
struct MetainfoReadRequest {
    std::string path;
    std::uint64_t max_bytes = 0;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;  // 0: the whole file
};

// The part Ops::metainfo_read asks for at a time: 4 MiB (5.6 MB of base64 on the line).
inline constexpr std::uint64_t k_metainfo_read_part_bytes = std::uint64_t{4} << 20;

// Keys: found, data_b64 (the bytes asked for, base64; when found), size and stamp (the whole
// file's size, and its inode and mtime: a file that changes between two parts is not read; a
// node that predates parts sends neither). A found result without data_b64 does not read, so a
// file is never taken for an empty one.
struct MetainfoReadResult {
    bool found = false;
    std::string data_b64;
    std::optional<std::uint64_t> size;
    std::string stamp;
    // The file's bytes: filled by Ops::metainfo_read from data_b64 (which it then empties); not a
    // key on the wire.
    std::string data;
};

// ---- JSON ----------------------------------------------------------------------------------

// nlohmann/json conversions (`nlohmann::json j = request;`, `j.get<TreeResult>()`): see
// lib/node/wire/ops.hpp for what a from_json does with missing keys.
void to_json(nlohmann::json& j, const OpenRootsRequest& v);
void from_json(const nlohmann::json& j, OpenRootsRequest& v);
void to_json(nlohmann::json& j, const OpenRootsResult& v);
void from_json(const nlohmann::json& j, OpenRootsResult& v);
void to_json(nlohmann::json& j, const InfoRequest& v);
void from_json(const nlohmann::json& j, InfoRequest& v);
void to_json(nlohmann::json& j, const DirectoryInfo& v);
void from_json(const nlohmann::json& j, DirectoryInfo& v);
void to_json(nlohmann::json& j, const InfoResult& v);
void from_json(const nlohmann::json& j, InfoResult& v);
void to_json(nlohmann::json& j, const SpaceRequest& v);
void from_json(const nlohmann::json& j, SpaceRequest& v);
void to_json(nlohmann::json& j, const SpaceResult& v);
void from_json(const nlohmann::json& j, SpaceResult& v);
void to_json(nlohmann::json& j, const TreeRequest& v);
void from_json(const nlohmann::json& j, TreeRequest& v);
void to_json(nlohmann::json& j, const TreeColumnsRequest& v);
void from_json(const nlohmann::json& j, TreeColumnsRequest& v);
void to_json(nlohmann::json& j, EntryType v);
void from_json(const nlohmann::json& j, EntryType& v);
void to_json(nlohmann::json& j, const TreeEntry& v);
void from_json(const nlohmann::json& j, TreeEntry& v);
void to_json(nlohmann::json& j, const TreeResult& v);
void from_json(const nlohmann::json& j, TreeResult& v);
void to_json(nlohmann::json& j, const WriteCheckRequest& v);
void from_json(const nlohmann::json& j, WriteCheckRequest& v);
void to_json(nlohmann::json& j, const WriteCheckResult& v);
void from_json(const nlohmann::json& j, WriteCheckResult& v);
void to_json(nlohmann::json& j, const NonceWriteRequest& v);
void from_json(const nlohmann::json& j, NonceWriteRequest& v);
void to_json(nlohmann::json& j, const NonceWriteResult& v);
void from_json(const nlohmann::json& j, NonceWriteResult& v);
void to_json(nlohmann::json& j, const NonceObserveRequest& v);
void from_json(const nlohmann::json& j, NonceObserveRequest& v);
void to_json(nlohmann::json& j, const NonceObserveResult& v);
void from_json(const nlohmann::json& j, NonceObserveResult& v);
void to_json(nlohmann::json& j, const MetainfoReadRequest& v);
void from_json(const nlohmann::json& j, MetainfoReadRequest& v);
void to_json(nlohmann::json& j, const MetainfoReadResult& v);
void from_json(const nlohmann::json& j, MetainfoReadResult& v);

}  // namespace archctl::node
