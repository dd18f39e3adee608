#include "lib/node/wire/ops_inspect.hpp"

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

void to_json(json& j, const TreeResult& v) { j = {{"base_exists", v.base_exists}, {"entries", v.entries}}; }
void from_json(const json& j, TreeResult& v) {
    v.base_exists = j.value("base_exists", false);
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

}  // namespace archctl::node
