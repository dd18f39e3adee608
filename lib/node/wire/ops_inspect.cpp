#include "lib/node/wire/ops_inspect.hpp"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "lib/node/wire/json_fields.hpp"

namespace archctl::node {

using nlohmann::json;
using namespace json_fields;

namespace {

// True when `root` is `path` or one of its parent directories.
bool root_contains(const std::string& root, const std::string& path) {
    if (root.empty() || path.compare(0, root.size(), root) != 0) return false;
    return path.size() == root.size() || root.back() == '/' || path[root.size()] == '/';
}

}  // namespace

// ---- open_roots ----------------------------------------------------------------------------

void to_json(json& j, const OpenRootsRequest& v) { j = {{"roots", v.roots}}; }
void from_json(const json& j, OpenRootsRequest& v) { v.roots = j.at("roots").get<std::vector<std::string>>(); }

void to_json(json& j, const OpenRootsResult& v) {
    json roots = json::array();
    for (const auto& r : v.roots) roots.push_back(to_json(r));
    j = {{"roots", std::move(roots)}};
}
void from_json(const json& j, OpenRootsResult& v) {
    v.roots.clear();
    for (const auto& r : j.value("roots", json::array())) v.roots.push_back(root_info_from_json(r));
}

// ---- info ----------------------------------------------------------------------------------

void to_json(json& j, const InfoRequest& v) {
    j = json::object();
    if (!v.probe_dirs.empty()) j["probe_dirs"] = v.probe_dirs;
}
void from_json(const json& j, InfoRequest& v) { v.probe_dirs = get_list<std::string>(j, "probe_dirs"); }

void to_json(json& j, const DirectoryInfo& v) {
    j = to_json(v.root);
    put_optional(j, "free_bytes", v.free_bytes);
    put_optional(j, "total_bytes", v.total_bytes);
    put_optional(j, "dev", v.dev);
}
void from_json(const json& j, DirectoryInfo& v) {
    v.root = root_info_from_json(j);
    get_optional(j, "free_bytes", v.free_bytes);
    get_optional(j, "total_bytes", v.total_bytes);
    get_optional(j, "dev", v.dev);
}

void to_json(json& j, const InfoResult& v) {
    j = {{"archctl", v.archctl}, {"protocol", v.protocol}, {"pid", v.pid}, {"roots", v.roots}, {"probes", v.probes}};
}
void from_json(const json& j, InfoResult& v) {
    v.archctl = j.value("archctl", "");
    v.protocol = j.value("protocol", k_protocol_version);
    v.pid = j.value("pid", 0L);
    v.roots = get_list<DirectoryInfo>(j, "roots");
    v.probes = get_list<DirectoryInfo>(j, "probes");
}

std::optional<std::uint64_t> free_bytes_at(const InfoResult& info, const std::string& path) {
    const DirectoryInfo* best = nullptr;
    for (const auto& r : info.roots)
        if (root_contains(r.root.path, path) && (!best || r.root.path.size() > best->root.path.size())) best = &r;
    if (!best) return std::nullopt;
    return best->free_bytes;
}

// ---- space ---------------------------------------------------------------------------------

void to_json(json& j, const SpaceRequest& v) { j = {{"path", v.path}}; }
void from_json(const json& j, SpaceRequest& v) { v.path = j.at("path").get<std::string>(); }

void to_json(json& j, const SpaceResult& v) {
    j = {{"path", v.path}, {"measured", v.measured}, {"free_bytes", v.free_bytes}, {"total_bytes", v.total_bytes}};
}
void from_json(const json& j, SpaceResult& v) {
    v.path = j.value("path", "");
    v.measured = j.at("measured").get<std::string>();
    v.free_bytes = j.at("free_bytes").get<std::uint64_t>();
    v.total_bytes = j.at("total_bytes").get<std::uint64_t>();
}

// ---- tree ----------------------------------------------------------------------------------

void to_json(json& j, const TreeRequest& v) { j = {{"base", v.base}, {"paths", v.paths}}; }
void from_json(const json& j, TreeRequest& v) {
    v.base = j.at("base").get<std::string>();
    v.paths = j.at("paths").get<std::vector<std::string>>();
}

void to_json(json& j, const TreeColumnsRequest& v) {
    to_json(j, v.tree);
    j["columns"] = v.columns;
}
void from_json(const json& j, TreeColumnsRequest& v) {
    from_json(j, v.tree);
    v.columns = j.at("columns").get<std::vector<std::string>>();
}

namespace {

constexpr EntryType k_entry_types[] = {EntryType::file,   EntryType::dir,         EntryType::symlink,
                                       EntryType::fifo,   EntryType::socket,      EntryType::char_device,
                                       EntryType::block,  EntryType::other,       EntryType::absent,
                                       EntryType::refused};

}  // namespace

std::string_view to_string(EntryType type) {
    switch (type) {
        case EntryType::file: return "file";
        case EntryType::dir: return "dir";
        case EntryType::symlink: return "symlink";
        case EntryType::fifo: return "fifo";
        case EntryType::socket: return "socket";
        case EntryType::char_device: return "char";
        case EntryType::block: return "block";
        case EntryType::other: return "other";
        case EntryType::absent: return "absent";
        case EntryType::refused: return "refused";
    }
    return "refused";
}

std::optional<EntryType> parse_entry_type(std::string_view name) {
    for (EntryType type : k_entry_types)
        if (to_string(type) == name) return type;
    return std::nullopt;
}

void to_json(json& j, EntryType v) { j = to_string(v); }
void from_json(const json& j, EntryType& v) {
    const auto text = j.get<std::string>();
    auto type = parse_entry_type(text);
    if (!type) throw json::other_error::create(501, "unknown tree entry type '" + text + "'", &j);
    v = *type;
}

void to_json(json& j, const TreeEntry& v) {
    j = {{"path", v.path}, {"type", v.type}};
    if (v.stat) {
        j["size"] = v.stat->size;
        j["dev"] = v.stat->dev;
        j["ino"] = v.stat->ino;
        j["nlink"] = v.stat->nlink;
        j["mtime_ns"] = v.stat->mtime_ns;
        if (v.stat->ctime_ns != 0) j["ctime_ns"] = v.stat->ctime_ns;
        j["mode"] = v.stat->mode;
        if (v.stat->btime_ns != 0) j["btime_ns"] = v.stat->btime_ns;
    }
    if (v.error) j["error"] = {{"code", v.error->code}, {"message", v.error->message}};
}
void from_json(const json& j, TreeEntry& v) {
    v.path = j.value("path", "");
    v.type = j.value("type", EntryType::refused);
    v.stat.reset();
    v.error.reset();
    if (j.contains("size") || j.contains("ino")) {
        EntryStat s;
        s.size = j.value("size", std::uint64_t{0});
        s.dev = j.value("dev", std::uint64_t{0});
        s.ino = j.value("ino", std::uint64_t{0});
        s.nlink = j.value("nlink", std::uint64_t{0});
        s.mtime_ns = j.value("mtime_ns", std::int64_t{0});
        s.mode = j.value("mode", 0u);
        s.btime_ns = j.value("btime_ns", std::int64_t{0});
        s.ctime_ns = j.value("ctime_ns", std::int64_t{0});
        v.stat = s;
    }
    if (auto it = j.find("error"); it != j.end() && it->is_object())
        v.error = Error(it->value("code", ""), it->value("message", ""));
}

namespace {

// The columns form's letter of each entry type, in k_entry_types' order.
constexpr char k_type_letters[] = {'f', 'd', 'l', 'p', 's', 'c', 'b', 'o', 'a', 'r'};

char type_letter(EntryType type) {
    for (std::size_t i = 0; i < std::size(k_entry_types); ++i)
        if (k_entry_types[i] == type) return k_type_letters[i];
    return 'r';
}

std::optional<EntryType> type_of_letter(char letter) {
    for (std::size_t i = 0; i < std::size(k_entry_types); ++i)
        if (k_type_letters[i] == letter) return k_entry_types[i];
    return std::nullopt;
}

bool has_stat(EntryType type) { return type != EntryType::absent && type != EntryType::refused; }

// Where a stat key's value lives in an EntryStat; nullopt for a key no node sends.
std::optional<std::size_t> stat_key_index(std::string_view key) {
    for (std::size_t i = 0; i < k_tree_stat_keys.size(); ++i)
        if (k_tree_stat_keys[i] == key) return i;
    return std::nullopt;
}

void put_stat_field(json& out, const EntryStat& s, std::size_t key) {
    switch (key) {
        case 0: out.push_back(s.size); break;
        case 1: out.push_back(s.dev); break;
        case 2: out.push_back(s.ino); break;
        case 3: out.push_back(s.nlink); break;
        case 4: out.push_back(s.mtime_ns); break;
        case 5: out.push_back(s.ctime_ns); break;
        case 6: out.push_back(s.mode); break;
        default: out.push_back(s.btime_ns); break;
    }
}

// An integer of the stats array as the stat field `key` (the reader has refused fractions; a
// negative number where none belongs does not read).
void get_stat_field(const json& value, EntryStat& s, std::size_t key) {
    if (!value.is_number_integer()) throw json::type_error::create(302, "a stat that is not an integer", &value);
    const bool is_signed = key == 4 || key == 5 || key == 7;
    if (!is_signed && !value.is_number_unsigned() && value.get<std::int64_t>() < 0)
        throw json::type_error::create(302, "a negative stat", &value);
    switch (key) {
        case 0: s.size = value.get<std::uint64_t>(); break;
        case 1: s.dev = value.get<std::uint64_t>(); break;
        case 2: s.ino = value.get<std::uint64_t>(); break;
        case 3: s.nlink = value.get<std::uint64_t>(); break;
        case 4: s.mtime_ns = value.get<std::int64_t>(); break;
        case 5: s.ctime_ns = value.get<std::int64_t>(); break;
        case 6: {
            const auto mode = value.get<std::uint64_t>();
            if (mode > 07777) throw json::type_error::create(302, "a mode past 07777", &value);
            s.mode = static_cast<unsigned>(mode);
            break;
        }
        default: s.btime_ns = value.get<std::int64_t>(); break;
    }
}

[[noreturn]] void bad_columns(const std::string& why, const json& j) {
    throw json::other_error::create(501, "tree result in columns: " + why, &j);
}

void columns_from_json(const json& j, TreeResult& v) {
    const auto& types = j.at("types").get_ref<const std::string&>();
    std::vector<std::size_t> keys;  // each field's place in k_tree_stat_keys; past it: unknown
    for (const auto& f : j.value("fields", json::array())) keys.push_back(stat_key_index(f.get<std::string>()).value_or(k_tree_stat_keys.size()));
    const json& stats = j.at("stats");
    if (!stats.is_array()) bad_columns("stats is not an array", j);
    v.entries.clear();
    v.entries.resize(types.size());
    std::size_t next = 0;
    for (std::size_t i = 0; i < types.size(); ++i) {
        auto type = type_of_letter(types[i]);
        if (!type) bad_columns(fmt::format("unknown entry type letter at {}", i), j);
        TreeEntry& e = v.entries[i];
        e.type = *type;
        if (!has_stat(e.type)) continue;
        if (stats.size() - next < keys.size()) bad_columns("fewer stats than entries that exist", j);
        EntryStat s;
        for (std::size_t key : keys) {
            if (key < k_tree_stat_keys.size()) get_stat_field(stats[next], s, key);
            ++next;
        }
        e.stat = s;
    }
    if (next != stats.size()) bad_columns("more stats than entries that exist", j);
    for (const auto& err : j.value("errors", json::array())) {
        if (!err.at(0).is_number_unsigned()) bad_columns("an error without an index", j);
        const auto index = err.at(0).get<std::uint64_t>();
        if (index >= v.entries.size() || v.entries[index].type != EntryType::refused)
            bad_columns("an error at an entry that is not refused", j);
        v.entries[index].error = Error(err.at(1).get<std::string>(), err.at(2).get<std::string>());
    }
}

}  // namespace

TreeColumnsWriter::TreeColumnsWriter(const std::vector<std::string>& fields, std::size_t expected) {
    for (const auto& key : k_tree_stat_keys)
        if (std::find(fields.begin(), fields.end(), key) != fields.end()) m_fields.push_back(key);
    m_types.reserve(expected);
}

void TreeColumnsWriter::add(const TreeEntry& entry) {
    m_types.push_back(type_letter(entry.type));
    if (has_stat(entry.type)) {
        const EntryStat s = entry.stat.value_or(EntryStat{});
        for (const auto& key : m_fields) put_stat_field(m_stats, s, *stat_key_index(key));
    }
    if (entry.type == EntryType::refused && entry.error)
        m_errors.push_back(json::array({m_types.size() - 1, entry.error->code, entry.error->message}));
}

json TreeColumnsWriter::finish(bool base_exists) && {
    json j = {{"base_exists", base_exists}, {"types", std::move(m_types)}, {"fields", m_fields}, {"stats", std::move(m_stats)}};
    if (!m_errors.empty()) j["errors"] = std::move(m_errors);
    return j;
}

json tree_columns_json(const TreeResult& result, const std::vector<std::string>& fields) {
    TreeColumnsWriter writer(fields, result.entries.size());
    for (const auto& e : result.entries) writer.add(e);
    return std::move(writer).finish(result.base_exists);
}

void to_json(json& j, const TreeResult& v) { j = {{"base_exists", v.base_exists}, {"entries", v.entries}}; }
void from_json(const json& j, TreeResult& v) {
    v.base_exists = j.value("base_exists", false);
    if (j.contains("types")) {
        columns_from_json(j, v);
        return;
    }
    v.entries = get_list<TreeEntry>(j, "entries");
}

// ---- write_check ---------------------------------------------------------------------------

void to_json(json& j, const WriteCheckRequest& v) { j = {{"path", v.path}}; }
void from_json(const json& j, WriteCheckRequest& v) { v.path = j.at("path").get<std::string>(); }

void to_json(json& j, const WriteCheckResult& v) { j = {{"path", v.path}, {"writable", v.writable}}; }
void from_json(const json& j, WriteCheckResult& v) {
    v.path = j.value("path", "");
    v.writable = j.value("writable", false);
}

// ---- nonces --------------------------------------------------------------------------------

void to_json(json& j, const NonceWriteRequest& v) {
    j = {{"path", v.path}, {"content", v.content}};
    if (v.create_parents) j["create_parents"] = true;
}
void from_json(const json& j, NonceWriteRequest& v) {
    v.path = j.at("path").get<std::string>();
    v.content = j.at("content").get<std::string>();
    v.create_parents = j.value("create_parents", false);
}

void to_json(json& j, const NonceWriteResult& v) { j = {{"path", v.path}, {"size", v.size}}; }
void from_json(const json& j, NonceWriteResult& v) {
    v.path = j.value("path", "");
    v.size = j.value("size", std::uint64_t{0});
}

void to_json(json& j, const NonceObserveRequest& v) { j = {{"path", v.path}}; }
void from_json(const json& j, NonceObserveRequest& v) { v.path = j.at("path").get<std::string>(); }

void to_json(json& j, const NonceObserveResult& v) {
    j = {{"path", v.path}, {"present", v.present}};
    if (v.present) j["content"] = v.content;
}
void from_json(const json& j, NonceObserveResult& v) {
    v.path = j.value("path", "");
    v.present = j.value("present", false);
    v.content = j.value("content", "");
}

// ---- metainfo_read -------------------------------------------------------------------------

void to_json(json& j, const MetainfoReadRequest& v) {
    j = {{"path", v.path}, {"max_bytes", v.max_bytes}};
    if (v.length) {
        j["offset"] = v.offset;
        j["length"] = v.length;
    }
}
void from_json(const json& j, MetainfoReadRequest& v) {
    v.path = j.at("path").get<std::string>();
    v.max_bytes = j.at("max_bytes").get<std::uint64_t>();
    v.offset = j.value("offset", std::uint64_t{0});
    v.length = j.value("length", std::uint64_t{0});
}

void to_json(json& j, const MetainfoReadResult& v) {
    j = {{"found", v.found}};
    if (!v.found) return;
    j["data_b64"] = v.data_b64;
    if (v.size) {
        j["size"] = *v.size;
        j["stamp"] = v.stamp;
    }
}
void from_json(const json& j, MetainfoReadResult& v) {
    v.found = j.value("found", false);
    v.data_b64 = v.found ? j.at("data_b64").get<std::string>() : std::string();
    v.size.reset();
    if (v.found && j.contains("size")) v.size = j.at("size").get<std::uint64_t>();
    v.stamp = v.found ? j.value("stamp", "") : std::string();
}

}  // namespace archctl::node
