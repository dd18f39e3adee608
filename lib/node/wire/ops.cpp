#include "lib/node/wire/ops.hpp"

#include <fmt/format.h>

#include "lib/base/base64.hpp"

namespace archctl::node {
namespace {

using nlohmann::json;

template <class T>
void put_optional(json& j, const char* key, const std::optional<T>& v) {
    if (v) j[key] = *v;
}

template <class T>
void get_optional(const json& j, const char* key, std::optional<T>& v) {
    auto it = j.find(key);
    if (it != j.end() && !it->is_null()) v = it->template get<T>();
}

template <class T>
std::vector<T> get_list(const json& j, const char* key) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return {};
    return it->template get<std::vector<T>>();
}

// True when `root` is `path` or one of its parent directories.
bool root_contains(const std::string& root, const std::string& path) {
    if (root.empty() || path.compare(0, root.size(), root) != 0) return false;
    return path.size() == root.size() || root.back() == '/' || path[root.size()] == '/';
}

// The result of one call: the typed result of an ok response, the error otherwise.
template <class T>
Result<T> call_typed(Transport& transport, const char* op, const json& args, ProgressFn progress) {
    struct Sink final : ProgressSink {
        ProgressFn fn;
        void on_progress(const Progress& p) override { fn(p); }
    } sink;
    sink.fn = std::move(progress);
    ARCHCTL_TRY_ASSIGN(json result, call_operation(transport, op, args, sink.fn ? &sink : nullptr));
    try {
        return result.get<T>();
    } catch (const json::exception& e) {
        return Error(ErrorCode::PROTOCOL, fmt::format("invalid result of node operation '{}': {}", op, e.what()));
    }
}

}  // namespace

// ---- shared records ------------------------------------------------------------------------

void to_json(json& j, const FileEntry& v) { j = {{"index", v.index}, {"path", v.path}, {"size", v.size}}; }
void from_json(const json& j, FileEntry& v) {
    v.index = j.at("index").get<std::uint32_t>();
    v.path = j.at("path").get<std::string>();
    v.size = j.at("size").get<std::uint64_t>();
}

void to_json(json& j, const KeptEntry& v) {
    j = {{"path", v.path}, {"reason", v.reason}};
    if (!v.code.empty()) j["code"] = v.code;
}
void from_json(const json& j, KeptEntry& v) {
    v.path = j.value("path", "");
    v.reason = j.value("reason", "");
    v.code = j.value("code", "");
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

// ---- tree ----------------------------------------------------------------------------------

void to_json(json& j, const TreeRequest& v) { j = {{"base", v.base}, {"paths", v.paths}}; }
void from_json(const json& j, TreeRequest& v) {
    v.base = j.at("base").get<std::string>();
    v.paths = j.at("paths").get<std::vector<std::string>>();
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
    v.type = j.value("type", "refused");
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

// ---- stage ---------------------------------------------------------------------------------

StageAux StageAux::with_bytes(std::string name, std::string_view bytes) {
    return StageAux{std::move(name), base64_encode(bytes), false};
}
StageAux StageAux::already_present(std::string name) { return StageAux{std::move(name), std::nullopt, true}; }

void to_json(json& j, const StageAux& v) {
    j = {{"name", v.name}};
    if (v.data_b64) j["data_b64"] = *v.data_b64;
    if (v.present) j["present"] = true;
}
void from_json(const json& j, StageAux& v) {
    v.name = j.at("name").get<std::string>();
    get_optional(j, "data_b64", v.data_b64);
    v.present = j.value("present", false);
}

void to_json(json& j, const StageRequest& v) {
    j = {{"job_dir", v.job_dir}, {"source_base", v.source_base}, {"files", v.files}, {"verify_transit", v.verify_transit}, {"aux", v.aux}};
    if (!v.method.empty()) j["method"] = v.method;
    put_optional(j, "budget_bytes", v.budget_bytes);
    if (v.min_free) j["min_free"] = v.min_free;
}
void from_json(const json& j, StageRequest& v) {
    v.job_dir = j.at("job_dir").get<std::string>();
    v.source_base = j.at("source_base").get<std::string>();
    v.files = j.at("files").get<std::vector<FileEntry>>();
    v.method = j.value("method", "auto");
    v.verify_transit = j.value("verify_transit", false);
    v.budget_bytes.reset();
    if (std::uint64_t b = j.value("budget_bytes", std::uint64_t{0}); b) v.budget_bytes = b;
    v.aux = get_list<StageAux>(j, "aux");
    v.min_free = j.value("min_free", std::uint64_t{0});
}

void to_json(json& j, const StageCounters& c) {
    j = {{"files_linked", c.files_linked}, {"files_reflinked", c.files_reflinked}, {"files_copied", c.files_copied},
         {"files_reused", c.files_reused}, {"bytes_linked", c.bytes_linked},       {"bytes_reflinked", c.bytes_reflinked},
         {"bytes_copied", c.bytes_copied}, {"bytes_hashed", c.bytes_hashed},       {"files_done", c.files_done},
         {"bytes_done", c.bytes_done}};
}
void from_json(const json& j, StageCounters& c) {
    auto u = [&](const char* key) { return j.value(key, std::uint64_t{0}); };
    c.files_linked = u("files_linked");
    c.files_reflinked = u("files_reflinked");
    c.files_copied = u("files_copied");
    c.files_reused = u("files_reused");
    c.bytes_linked = u("bytes_linked");
    c.bytes_reflinked = u("bytes_reflinked");
    c.bytes_copied = u("bytes_copied");
    c.bytes_hashed = u("bytes_hashed");
    c.files_done = u("files_done");
    c.bytes_done = u("bytes_done");
}

void to_json(json& j, const StageResult& v) {
    j = v.counters;
    j["complete"] = v.complete;
    j["stopped"] = v.stopped;
    if (v.stopped == "disk") j.update({{"free_bytes", v.free_bytes}, {"need_bytes", v.need_bytes}});
    put_optional(j, "already_ready", v.already_ready);
    put_optional(j, "manifest_xxh3", v.manifest_xxh3);
}
void from_json(const json& j, StageResult& v) {
    v.complete = j.value("complete", false);
    v.stopped = j.value("stopped", "");
    v.free_bytes = j.value("free_bytes", std::uint64_t{0});
    v.need_bytes = j.value("need_bytes", std::uint64_t{0});
    get_optional(j, "already_ready", v.already_ready);
    get_optional(j, "manifest_xxh3", v.manifest_xxh3);
    v.counters = j.get<StageCounters>();
}

// ---- receive_check -------------------------------------------------------------------------

void to_json(json& j, const ReceiveCheckRequest& v) {
    j = {{"job_dir", v.job_dir}, {"files", v.files}, {"verify_transit", v.verify_transit}};
    if (v.indexed) j["indexed"] = *v.indexed;
}
void from_json(const json& j, ReceiveCheckRequest& v) {
    v.job_dir = j.at("job_dir").get<std::string>();
    v.files.clear();
    for (const auto& f : j.at("files"))  // the check needs index and size only
        v.files.push_back(FileEntry{f.at("index").get<std::uint32_t>(), f.value("path", ""), f.at("size").get<std::uint64_t>()});
    v.indexed.reset();
    get_optional(j, "indexed", v.indexed);
    v.verify_transit = j.value("verify_transit", false);
}

void to_json(json& j, const ReceivedFile& v) {
    j = {{"name", v.name}, {"state", v.state}, {"have_bytes", v.have_bytes}};
    put_optional(j, "index", v.index);
    put_optional(j, "size", v.size);
    if (!v.detail.empty()) j["detail"] = v.detail;
}
void from_json(const json& j, ReceivedFile& v) {
    v.name = j.value("name", "");
    v.state = j.value("state", "absent");
    v.have_bytes = j.value("have_bytes", std::uint64_t{0});
    get_optional(j, "index", v.index);
    get_optional(j, "size", v.size);
    v.detail = j.value("detail", "");
}

void to_json(json& j, const ForeignEntry& v) { j = {{"name", v.name}, {"what", v.what}}; }
void from_json(const json& j, ForeignEntry& v) {
    v.name = j.value("name", "");
    v.what = j.value("what", "");
}

void to_json(json& j, const ReceiveCheckResult& v) {
    j = {{"complete", v.complete}, {"stopped", v.stopped}};
    if (!v.stopped.empty()) return;  // a stopped check reports nothing else
    j.update({{"job_exists", v.job_exists},       {"manifest", v.manifest},         {"index_evidence", v.index_evidence},
              {"files", v.files},                 {"ignored", v.ignored},           {"bytes_present", v.bytes_present},

              {"bytes_total", v.bytes_total},     {"files_present", v.files_present}, {"files_total", v.files_total},
              {"bytes_hashed", v.bytes_hashed}});
    if (!v.foreign.empty()) j["foreign"] = v.foreign;
}
void from_json(const json& j, ReceiveCheckResult& v) {
    v.complete = j.value("complete", false);
    v.stopped = j.value("stopped", "");
    v.job_exists = j.value("job_exists", false);
    v.manifest = j.value("manifest", false);
    v.index_evidence = j.value("index_evidence", false);
    v.files = get_list<ReceivedFile>(j, "files");
    v.ignored = get_list<std::string>(j, "ignored");
    v.foreign = get_list<ForeignEntry>(j, "foreign");
    v.bytes_present = j.value("bytes_present", std::uint64_t{0});
    v.bytes_total = j.value("bytes_total", std::uint64_t{0});
    v.files_present = j.value("files_present", std::uint64_t{0});
    v.files_total = j.value("files_total", std::uint64_t{0});
    v.bytes_hashed = j.value("bytes_hashed", std::uint64_t{0});
}

// ---- merge / unmerge -----------------------------------------------------------------------

void to_json(json& j, const MergeRequest& v) {
    j = {{"job_dir", v.job_dir}, {"save_path", v.save_path}, {"files", v.files}};
    put_optional(j, "record_path", v.record_path);
    if (v.min_free) j["min_free"] = v.min_free;
}
void from_json(const json& j, MergeRequest& v) {
    v.job_dir = j.at("job_dir").get<std::string>();
    v.save_path = j.at("save_path").get<std::string>();
    v.files = j.at("files").get<std::vector<FileEntry>>();
    v.record_path.reset();
    get_optional(j, "record_path", v.record_path);
    v.min_free = j.value("min_free", std::uint64_t{0});
}

void to_json(json& j, const MergedFile& v) {
    j = {{"index", v.index}, {"path", v.path}, {"provenance", v.provenance}, {"how", v.how}, {"ino", v.ino}};
}
void from_json(const json& j, MergedFile& v) {
    v.index = j.value("index", 0u);
    v.path = j.value("path", "");
    v.provenance = j.value("provenance", "");
    v.how = j.value("how", "");
    v.ino = j.value("ino", std::uint64_t{0});
}

void to_json(json& j, const MergeResult& v) {
    j = {{"complete", v.complete}, {"stopped", v.stopped}, {"record_path", v.record_path}, {"bytes_copied", v.bytes_copied}};
    if (v.stopped == "disk")
        j.update({{"free_bytes", v.free_bytes}, {"need_bytes", v.need_bytes}, {"stopped_at", v.stopped_at}});
    if (!v.stopped.empty()) return;  // a stopped merge reports where its record is and why it stopped
    j.update({{"provenance", v.provenance}, {"dirs_created", v.dirs_created}, {"bytes_renamed", v.bytes_renamed}});
}
void from_json(const json& j, MergeResult& v) {
    v.complete = j.value("complete", false);
    v.stopped = j.value("stopped", "");
    v.free_bytes = j.value("free_bytes", std::uint64_t{0});
    v.need_bytes = j.value("need_bytes", std::uint64_t{0});
    v.stopped_at = j.value("stopped_at", "");
    v.provenance = get_list<MergedFile>(j, "provenance");
    v.dirs_created = get_list<std::string>(j, "dirs_created");
    v.record_path = j.value("record_path", "");
    v.bytes_copied = j.value("bytes_copied", std::uint64_t{0});
    v.bytes_renamed = j.value("bytes_renamed", std::uint64_t{0});
}

void to_json(json& j, const UnmergeRequest& v) {
    j = {{"save_path", v.save_path}, {"referenced", v.referenced}};
    put_optional(j, "job_dir", v.job_dir);
    put_optional(j, "record_path", v.record_path);
    put_optional(j, "provenance", v.provenance);
}
void from_json(const json& j, UnmergeRequest& v) {
    v.save_path = j.at("save_path").get<std::string>();
    v.job_dir.reset();
    v.record_path.reset();
    v.provenance.reset();
    get_optional(j, "job_dir", v.job_dir);
    get_optional(j, "record_path", v.record_path);
    v.referenced = get_list<std::string>(j, "referenced");
    if (auto it = j.find("provenance"); it != j.end()) v.provenance = *it;
}

void to_json(json& j, const MergeRecordRequest& v) {
    j = {{"save_path", v.save_path}};
    put_optional(j, "job_dir", v.job_dir);
    put_optional(j, "record_path", v.record_path);
}
void from_json(const json& j, MergeRecordRequest& v) {
    v.save_path = j.at("save_path").get<std::string>();
    v.job_dir.reset();
    v.record_path.reset();
    get_optional(j, "job_dir", v.job_dir);
    get_optional(j, "record_path", v.record_path);
}

void to_json(json& j, const MergeRecordResult& v) {
    j = {{"record", v.record}, {"record_path", v.record_path}, {"files", v.files}, {"placed", v.placed}};
}
void from_json(const json& j, MergeRecordResult& v) {
    v.record = j.value("record", "");
    v.record_path = j.value("record_path", "");
    v.files = get_list<std::uint32_t>(j, "files");
    v.placed = get_list<std::uint32_t>(j, "placed");
}

void to_json(json& j, const UnmergeResult& v) {
    j = {{"record", v.record}, {"removed", v.removed}, {"kept", v.kept}, {"preexisting", v.preexisting}};
}
void from_json(const json& j, UnmergeResult& v) {
    v.record = j.value("record", "");
    v.removed = get_list<std::string>(j, "removed");
    v.kept = get_list<KeptEntry>(j, "kept");
    v.preexisting = get_list<std::string>(j, "preexisting");
}

void to_json(json& j, const AdoptIncompleteRequest& v) {
    j = {{"save_path", v.save_path}, {"suffix", v.suffix}, {"indices", v.indices}, {"adopt", v.adopt}};
    put_optional(j, "job_dir", v.job_dir);
    put_optional(j, "record_path", v.record_path);
}
void from_json(const json& j, AdoptIncompleteRequest& v) {
    v.save_path = j.at("save_path").get<std::string>();
    v.job_dir.reset();
    v.record_path.reset();
    get_optional(j, "job_dir", v.job_dir);
    get_optional(j, "record_path", v.record_path);
    v.suffix = j.value("suffix", std::string(k_incomplete_suffix));
    v.indices = get_list<std::uint32_t>(j, "indices");
    v.adopt = j.value("adopt", true);
}

void to_json(json& j, const AdoptIncompleteResult& v) {
    j = {{"suffixed", v.suffixed}, {"plain", v.plain}, {"pending", v.pending}, {"foreign", v.foreign}};
}
void from_json(const json& j, AdoptIncompleteResult& v) {
    v.suffixed = get_list<std::uint32_t>(j, "suffixed");
    v.plain = get_list<std::uint32_t>(j, "plain");
    v.pending = get_list<std::uint32_t>(j, "pending");
    v.foreign = get_list<std::uint32_t>(j, "foreign");
}

// ---- chmod_readable, cleanup, unlink_owned -------------------------------------------------

void to_json(json& j, const ChmodReadableRequest& v) { j = {{"base", v.base}, {"paths", v.paths}}; }
void from_json(const json& j, ChmodReadableRequest& v) {
    v.base = j.at("base").get<std::string>();
    v.paths = j.at("paths").get<std::vector<std::string>>();
}

void to_json(json& j, const ChmodReadableResult& v) {
    j = {{"files_changed", v.files_changed}, {"dirs_changed", v.dirs_changed}, {"missing", v.missing}};
}
void from_json(const json& j, ChmodReadableResult& v) {
    v.files_changed = j.value("files_changed", std::uint64_t{0});
    v.dirs_changed = j.value("dirs_changed", std::uint64_t{0});
    v.missing = get_list<std::string>(j, "missing");
}

void to_json(json& j, const CleanupRequest& v) {
    j = {{"job_dir", v.job_dir}, {"referenced", v.referenced}};
    put_optional(j, "save_path", v.save_path);
    put_optional(j, "source_base", v.source_base);
    if (!v.files.empty()) j["files"] = v.files;
    if (!v.aux.empty()) j["aux"] = v.aux;
}
void from_json(const json& j, CleanupRequest& v) {
    v.job_dir = j.at("job_dir").get<std::string>();
    v.referenced = get_list<std::string>(j, "referenced");
    v.save_path.reset();
    get_optional(j, "save_path", v.save_path);
    v.source_base.reset();
    get_optional(j, "source_base", v.source_base);
    v.files = get_list<std::uint32_t>(j, "files");
    v.aux = get_list<std::string>(j, "aux");
}

void to_json(json& j, const RestoredStamp& v) {
    j = {{"index", v.index},           {"path", v.path},
         {"mtime_found", v.mtime_found}, {"mtime_restored", v.mtime_restored},
         {"mode_found", fmt::format("{:04o}", v.mode_found)}, {"mode_restored", fmt::format("{:04o}", v.mode_restored)}};
}
void from_json(const json& j, RestoredStamp& v) {
    v.index = j.value("index", std::uint32_t{0});
    v.path = j.value("path", "");
    v.mtime_found = j.value("mtime_found", std::int64_t{0});
    v.mtime_restored = j.value("mtime_restored", std::int64_t{0});
    v.mode_found = static_cast<std::uint32_t>(std::stoul(j.value("mode_found", std::string("0")), nullptr, 8));
    v.mode_restored = static_cast<std::uint32_t>(std::stoul(j.value("mode_restored", std::string("0")), nullptr, 8));
}

void to_json(json& j, const CleanupResult& v) {
    j = {{"job_dir", v.job_dir}, {"removed", v.removed}, {"kept", v.kept}};
    if (!v.restored.empty()) j["restored"] = v.restored;
    if (!v.replaced.empty()) j["replaced"] = v.replaced;
}
void from_json(const json& j, CleanupResult& v) {
    v.job_dir = j.value("job_dir", "");
    v.removed = get_list<std::string>(j, "removed");
    v.kept = get_list<KeptEntry>(j, "kept");
    v.restored = get_list<RestoredStamp>(j, "restored");
    v.replaced = get_list<std::string>(j, "replaced");
}

void to_json(json& j, const OwnedFile& v) {
    if (!v.size && !v.ino) {
        j = v.path;
        return;
    }
    j = {{"path", v.path}};
    put_optional(j, "size", v.size);
    put_optional(j, "ino", v.ino);
}
void from_json(const json& j, OwnedFile& v) {
    v.size.reset();
    v.ino.reset();
    if (j.is_string()) {
        v.path = j.get<std::string>();
        return;
    }
    v.path = j.at("path").get<std::string>();
    get_optional(j, "size", v.size);
    get_optional(j, "ino", v.ino);
}

void to_json(json& j, const UnlinkOwnedRequest& v) {
    j = {{"paths", v.paths}, {"stop_at", v.stop_at}};
    if (!v.referenced.empty()) j["referenced"] = v.referenced;
}
void from_json(const json& j, UnlinkOwnedRequest& v) {
    v.paths = j.at("paths").get<std::vector<OwnedFile>>();
    v.referenced = get_list<std::string>(j, "referenced");
    v.stop_at = j.at("stop_at").get<std::string>();
}

void to_json(json& j, const UnlinkOwnedResult& v) { j = {{"removed", v.removed}, {"kept", v.kept}}; }
void from_json(const json& j, UnlinkOwnedResult& v) {
    v.removed = get_list<std::string>(j, "removed");
    v.kept = get_list<KeptEntry>(j, "kept");
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

// ---- part files ----------------------------------------------------------------------------

namespace {

void put_check(json& j, const PartfileCheck& c) {
    put_optional(j, "expect_pieces", c.expect_pieces);
    put_optional(j, "expect_piece_size", c.expect_piece_size);
    if (c.allow_short_last_slot) j["allow_short_last_slot"] = true;
}

PartfileCheck get_check(const json& j) {
    PartfileCheck c;
    get_optional(j, "expect_pieces", c.expect_pieces);
    get_optional(j, "expect_piece_size", c.expect_piece_size);
    c.allow_short_last_slot = j.value("allow_short_last_slot", false);
    return c;
}

}  // namespace

PartfileCheck qb_partfile_check() {
    PartfileCheck c;
    c.allow_short_last_slot = true;
    return c;
}

PartfileCheck qb_partfile_check(std::int64_t piece_count, std::int64_t piece_size) {
    PartfileCheck c = qb_partfile_check();
    c.expect_pieces = static_cast<std::uint32_t>(piece_count);
    c.expect_piece_size = static_cast<std::uint32_t>(piece_size);
    return c;
}

void to_json(json& j, const PartfileReadRequest& v) {
    j = {{"path", v.path}};
    put_check(j, v.check);
}
void from_json(const json& j, PartfileReadRequest& v) {
    v.path = j.at("path").get<std::string>();
    v.check = get_check(j);
}

void to_json(json& j, const PartfileSlot& v) { j = {{"piece", v.piece}, {"slot", v.slot}}; }
void from_json(const json& j, PartfileSlot& v) {
    v.piece = j.value("piece", 0u);
    v.slot = j.value("slot", 0u);
}

void to_json(json& j, const PartfileReadResult& v) {
    j = {{"piece_count", v.piece_count}, {"piece_size", v.piece_size}, {"header_size", v.header_size},
         {"used_slots", v.used_slots},   {"slots", v.slots},           {"file_size", v.file_size},
         {"short_slots", v.short_slots}};
}
void from_json(const json& j, PartfileReadResult& v) {
    v.piece_count = j.value("piece_count", 0u);
    v.piece_size = j.value("piece_size", 0u);
    v.header_size = j.value("header_size", std::uint64_t{0});
    v.used_slots = j.value("used_slots", 0u);
    v.slots = get_list<PartfileSlot>(j, "slots");
    v.file_size = j.value("file_size", std::uint64_t{0});
    v.short_slots = get_list<std::uint32_t>(j, "short_slots");
}

void to_json(json& j, const PartfileCopyRequest& v) {
    j = {{"from", v.from}, {"to", v.to}, {"create_parents", v.create_parents}, {"replace", v.replace}};
    put_check(j, v.check);
    if (v.min_free) j["min_free"] = v.min_free;
}
void from_json(const json& j, PartfileCopyRequest& v) {
    v.from = j.at("from").get<std::string>();
    v.to = j.at("to").get<std::string>();
    v.create_parents = j.value("create_parents", false);
    v.replace = j.value("replace", false);
    v.check = get_check(j);
    v.min_free = j.value("min_free", std::uint64_t{0});
}

void to_json(json& j, const PartfileCopyResult& v) {
    j = v.header;
    j.update({{"to", v.to}, {"xxh3", v.xxh3}, {"already", v.already}});
    put_optional(j, "bytes", v.bytes);
}
void from_json(const json& j, PartfileCopyResult& v) {
    v.header = j.get<PartfileReadResult>();
    v.to = j.value("to", "");
    v.xxh3 = j.value("xxh3", "");
    v.already = j.value("already", false);
    v.bytes.reset();
    get_optional(j, "bytes", v.bytes);
}

void to_json(json& j, const PartfileBuildRange& v) {
    j = {{"at", v.at}, {"length", v.length}};
    if (v.from_partfile) j["from_partfile"] = true;
    else j.update({{"path", v.path}, {"offset", v.offset}});
    if (v.keep) j["keep"] = true;
}
void from_json(const json& j, PartfileBuildRange& v) {
    v.at = j.at("at").get<std::uint64_t>();
    v.length = j.at("length").get<std::uint64_t>();
    v.from_partfile = j.value("from_partfile", false);
    v.path = j.value("path", "");
    v.offset = j.value("offset", std::uint64_t{0});
    v.keep = j.value("keep", false);
}

void to_json(json& j, const PartfileBuildPiece& v) {
    j = {{"piece", v.piece}, {"length", v.length}, {"ranges", v.ranges}};
    put_optional(j, "sha1", v.sha1);
}
void from_json(const json& j, PartfileBuildPiece& v) {
    v.piece = j.at("piece").get<std::uint32_t>();
    v.length = j.at("length").get<std::uint64_t>();
    v.sha1.reset();
    get_optional(j, "sha1", v.sha1);
    v.ranges = get_list<PartfileBuildRange>(j, "ranges");
}

void to_json(json& j, const PartfileBuildRequest& v) {
    j = {{"to", v.to}, {"create_parents", v.create_parents}, {"piece_count", v.piece_count}, {"piece_size", v.piece_size},
         {"pieces", v.pieces}};
    put_optional(j, "source_partfile", v.source_partfile);
    if (v.min_free) j["min_free"] = v.min_free;
    if (v.dry_run) j["dry_run"] = true;
}
void from_json(const json& j, PartfileBuildRequest& v) {
    v.to = j.value("to", "");
    v.create_parents = j.value("create_parents", false);
    v.piece_count = j.at("piece_count").get<std::uint32_t>();
    v.piece_size = j.at("piece_size").get<std::uint32_t>();
    v.source_partfile.reset();
    get_optional(j, "source_partfile", v.source_partfile);
    v.pieces = get_list<PartfileBuildPiece>(j, "pieces");
    v.min_free = j.value("min_free", std::uint64_t{0});
    v.dry_run = j.value("dry_run", false);
}

void to_json(json& j, const PartfileBuildResult& v) {
    j = v.header;
    j.update({{"to", v.to}, {"xxh3", v.xxh3}, {"bytes", v.bytes}, {"failed", v.failed}});
}
void from_json(const json& j, PartfileBuildResult& v) {
    v.header = j.get<PartfileReadResult>();
    v.to = j.value("to", "");
    v.xxh3 = j.value("xxh3", "");
    v.bytes = j.value("bytes", std::uint64_t{0});
    v.failed = get_list<std::uint32_t>(j, "failed");
}

// ---- verify_pieces -------------------------------------------------------------------------

void to_json(json& j, const VerifyPiecesRequest& v) {
    j = {{"save_path", v.save_path}};
    put_optional(j, "torrent_b64", v.torrent_b64);
    put_optional(j, "torrent_path", v.torrent_path);
    put_optional(j, "files", v.files);
    put_optional(j, "readable", v.readable);
    if (!v.paths.empty()) {
        json paths = json::array();
        for (const auto& [index, path] : v.paths) paths.push_back({index, path});
        j["paths"] = std::move(paths);
    }
}
void from_json(const json& j, VerifyPiecesRequest& v) {
    v.save_path = j.at("save_path").get<std::string>();
    v.torrent_b64.reset();
    v.torrent_path.reset();
    v.files.reset();
    get_optional(j, "torrent_b64", v.torrent_b64);
    if (!v.torrent_b64) v.torrent_path = j.at("torrent_path").get<std::string>();
    get_optional(j, "files", v.files);
    v.readable.reset();
    get_optional(j, "readable", v.readable);
    v.paths.clear();
    for (const auto& row : j.value("paths", json::array())) v.paths[row.at(0).get<std::uint32_t>()] = row.at(1).get<std::string>();
}

void to_json(json& j, const VerifyPiecesResult& v) {
    j = v.report.is_object() ? v.report : json::object();
    j["save_path"] = v.save_path;
}
void from_json(const json& j, VerifyPiecesResult& v) {
    v.report = j;
    v.report.erase("save_path");
    v.report.erase("io");
    v.save_path = j.value("save_path", "");
}

// ---- facade --------------------------------------------------------------------------------

Result<InfoResult> Ops::info(const InfoRequest& r) { return call_typed<InfoResult>(m_transport, "info", r, {}); }
Result<TreeResult> Ops::tree(const TreeRequest& r) { return call_typed<TreeResult>(m_transport, "tree", r, {}); }
Result<StageResult> Ops::stage(const StageRequest& r, ProgressFn progress) {
    return call_typed<StageResult>(m_transport, "stage", r, std::move(progress));
}
Result<ReceiveCheckResult> Ops::receive_check(const ReceiveCheckRequest& r, ProgressFn progress) {
    return call_typed<ReceiveCheckResult>(m_transport, "receive_check", r, std::move(progress));
}
Result<MergeResult> Ops::merge(const MergeRequest& r, ProgressFn progress) {
    return call_typed<MergeResult>(m_transport, "merge", r, std::move(progress));
}
Result<MergeRecordResult> Ops::merge_record(const MergeRecordRequest& r) {
    return call_typed<MergeRecordResult>(m_transport, "merge_record", r, {});
}
Result<UnmergeResult> Ops::unmerge(const UnmergeRequest& r) { return call_typed<UnmergeResult>(m_transport, "unmerge", r, {}); }
Result<AdoptIncompleteResult> Ops::adopt_incomplete(const AdoptIncompleteRequest& r) {
    return call_typed<AdoptIncompleteResult>(m_transport, "adopt_incomplete", r, {});
}
Result<ChmodReadableResult> Ops::chmod_readable(const ChmodReadableRequest& r) {
    return call_typed<ChmodReadableResult>(m_transport, "chmod_readable", r, {});
}
Result<CleanupResult> Ops::cleanup(const CleanupRequest& r) { return call_typed<CleanupResult>(m_transport, "cleanup", r, {}); }
Result<UnlinkOwnedResult> Ops::unlink_owned(const UnlinkOwnedRequest& r) {
    return call_typed<UnlinkOwnedResult>(m_transport, "unlink_owned", r, {});
}
Result<NonceWriteResult> Ops::nonce_write(const NonceWriteRequest& r) {
    return call_typed<NonceWriteResult>(m_transport, "nonce_write", r, {});
}
Result<NonceObserveResult> Ops::nonce_observe(const NonceObserveRequest& r) {
    return call_typed<NonceObserveResult>(m_transport, "nonce_observe", r, {});
}
Result<PartfileReadResult> Ops::partfile_read(const PartfileReadRequest& r) {
    return call_typed<PartfileReadResult>(m_transport, "partfile_read", r, {});
}
Result<PartfileCopyResult> Ops::partfile_copy(const PartfileCopyRequest& r) {
    return call_typed<PartfileCopyResult>(m_transport, "partfile_copy", r, {});
}
Result<PartfileBuildResult> Ops::partfile_build(const PartfileBuildRequest& r) {
    return call_typed<PartfileBuildResult>(m_transport, "partfile_build", r, {});
}
Result<VerifyPiecesResult> Ops::verify_pieces(const VerifyPiecesRequest& r, ProgressFn progress) {
    return call_typed<VerifyPiecesResult>(m_transport, "verify_pieces", r, std::move(progress));
}

}  // namespace archctl::node
