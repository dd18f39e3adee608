#include "lib/node/wire/ops_transfer.hpp"

#include <fmt/format.h>

#include "lib/base/base64.hpp"
#include "lib/node/wire/json_fields.hpp"
#include "lib/torrent/selection.hpp"

namespace archctl::node {

using nlohmann::json;
using namespace json_fields;

// ---- shared records ------------------------------------------------------------------------

namespace {

constexpr Stop k_stops[] = {Stop::none, Stop::cancel, Stop::budget, Stop::disk};
constexpr KeptCode k_kept_codes[] = {KeptCode::none,     KeptCode::referenced, KeptCode::not_regular,
                                     KeptCode::size_changed, KeptCode::replaced, KeptCode::other_links,
                                     KeptCode::not_owned, KeptCode::not_empty, KeptCode::preexisting};
constexpr Arrival k_arrivals[] = {Arrival::absent, Arrival::in_transit, Arrival::present, Arrival::verified, Arrival::mismatch};
constexpr MergeRecord k_merge_records[] = {MergeRecord::absent, MergeRecord::present};
constexpr UnmergeRecord k_unmerge_records[] = {UnmergeRecord::absent, UnmergeRecord::removed};
constexpr PayloadLayout k_payload_layouts[] = {PayloadLayout::flat, PayloadLayout::sharded};
constexpr MethodChoice k_method_choices[] = {MethodChoice::automatic, MethodChoice::hardlink, MethodChoice::reflink, MethodChoice::copy};

}  // namespace

std::string_view to_string(Stop stop) {
    switch (stop) {
        case Stop::none: return "";
        case Stop::cancel: return "cancel";
        case Stop::budget: return "budget";
        case Stop::disk: return "disk";
    }
    return "";
}

void to_json(json& j, Stop v) { j = to_string(v); }
void from_json(const json& j, Stop& v) { v = enum_from_json(j, k_stops, "stop reason"); }

void to_json(json& j, const FileEntry& v) { j = {{"index", v.index}, {"path", v.path}, {"size", v.size}}; }
void from_json(const json& j, FileEntry& v) {
    v.index = j.at("index").get<std::uint32_t>();
    v.path = j.at("path").get<std::string>();
    v.size = j.at("size").get<std::uint64_t>();
}

std::string_view to_string(KeptCode code) {
    switch (code) {
        case KeptCode::none: return "";
        case KeptCode::referenced: return "referenced";
        case KeptCode::not_regular: return "not_regular";
        case KeptCode::size_changed: return "size_changed";
        case KeptCode::replaced: return "replaced";
        case KeptCode::other_links: return "other_links";
        case KeptCode::not_owned: return "not_owned";
        case KeptCode::not_empty: return "not_empty";
        case KeptCode::preexisting: return "preexisting";
    }
    return "";
}

void to_json(json& j, KeptCode v) { j = to_string(v); }
void from_json(const json& j, KeptCode& v) { v = enum_from_json(j, k_kept_codes, "kept code"); }

void to_json(json& j, const KeptEntry& v) {
    j = {{"path", v.path}, {"reason", v.reason}};
    if (v.code != KeptCode::none) j["code"] = v.code;
}
void from_json(const json& j, KeptEntry& v) {
    v.path = j.value("path", "");
    v.reason = j.value("reason", "");
    v.code = j.value("code", KeptCode::none);
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

std::string_view to_string(MethodChoice method) {
    switch (method) {
        case MethodChoice::automatic: return "auto";
        case MethodChoice::hardlink: return "hardlink";
        case MethodChoice::reflink: return "reflink";
        case MethodChoice::copy: return "copy";
    }
    return "auto";
}

std::optional<MethodChoice> parse_method_choice(std::string_view name) { return parse_enum(name, k_method_choices); }

void to_json(json& j, MethodChoice v) { j = to_string(v); }
void from_json(const json& j, MethodChoice& v) { v = enum_from_json(j, k_method_choices, "stage method (use auto, hardlink, reflink or copy)"); }

void to_json(json& j, PayloadLayout v) { j = to_string(v); }
void from_json(const json& j, PayloadLayout& v) { v = enum_from_json(j, k_payload_layouts, "payload layout (flat or sharded)"); }

void to_json(json& j, const StageRequest& v) {
    j = {{"job_dir", v.job_dir}, {"source_base", v.source_base}, {"files", v.files}, {"verify_transit", v.verify_transit}, {"aux", v.aux}};
    if (v.method != MethodChoice::automatic) j["method"] = v.method;
    put_optional(j, "budget_bytes", v.budget_bytes);
    if (v.min_free) j["min_free"] = v.min_free;
    if (v.layout != PayloadLayout::flat) j["layout"] = v.layout;
}
void from_json(const json& j, StageRequest& v) {
    v.job_dir = j.at("job_dir").get<std::string>();
    v.source_base = j.at("source_base").get<std::string>();
    v.files = j.at("files").get<std::vector<FileEntry>>();
    v.method = j.value("method", MethodChoice::automatic);
    v.verify_transit = j.value("verify_transit", false);
    v.budget_bytes.reset();
    if (std::uint64_t b = j.value("budget_bytes", std::uint64_t{0}); b) v.budget_bytes = b;
    v.aux = get_list<StageAux>(j, "aux");
    v.min_free = j.value("min_free", std::uint64_t{0});
    v.layout = j.value("layout", PayloadLayout::flat);
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
    if (v.stopped == Stop::disk) j.update({{"free_bytes", v.free_bytes}, {"need_bytes", v.need_bytes}});
    put_optional(j, "already_ready", v.already_ready);
    put_optional(j, "manifest_xxh3", v.manifest_xxh3);
}
void from_json(const json& j, StageResult& v) {
    v.complete = j.value("complete", false);
    v.stopped = j.value("stopped", Stop::none);
    v.free_bytes = j.value("free_bytes", std::uint64_t{0});
    v.need_bytes = j.value("need_bytes", std::uint64_t{0});
    get_optional(j, "already_ready", v.already_ready);
    get_optional(j, "manifest_xxh3", v.manifest_xxh3);
    v.counters = j.get<StageCounters>();
}

// ---- receive_check -------------------------------------------------------------------------

std::string_view to_string(Arrival arrival) {
    switch (arrival) {
        case Arrival::absent: return "absent";
        case Arrival::in_transit: return "in_transit";
        case Arrival::present: return "present";
        case Arrival::verified: return "verified";
        case Arrival::mismatch: return "mismatch";
    }
    return "absent";
}

void to_json(json& j, Arrival v) { j = to_string(v); }
void from_json(const json& j, Arrival& v) { v = enum_from_json(j, k_arrivals, "arrival state"); }

void to_json(json& j, const ReceiveCheckRequest& v) {
    j = {{"job_dir", v.job_dir}, {"files", v.files}, {"verify_transit", v.verify_transit}};
    if (v.indexed) j["indexed"] = *v.indexed;
    if (v.indexed_all) j["indexed_all"] = true;
    if (v.unfinished_only) j["unfinished_only"] = true;
    if (v.absent_ranges) j["absent_ranges"] = true;
    if (v.layout != PayloadLayout::flat) j["layout"] = v.layout;
}
void from_json(const json& j, ReceiveCheckRequest& v) {
    v.job_dir = j.at("job_dir").get<std::string>();
    v.files.clear();
    for (const auto& f : j.at("files"))  // the check needs index and size only
        v.files.push_back(FileEntry{f.at("index").get<std::uint32_t>(), f.value("path", ""), f.at("size").get<std::uint64_t>()});
    v.indexed.reset();
    get_optional(j, "indexed", v.indexed);
    v.indexed_all = j.value("indexed_all", false);
    v.verify_transit = j.value("verify_transit", false);
    v.unfinished_only = j.value("unfinished_only", false);
    v.absent_ranges = j.value("absent_ranges", false);
    v.layout = j.value("layout", PayloadLayout::flat);
}

void to_json(json& j, const ReceivedFile& v) {
    j = {{"name", v.name}, {"state", v.state}, {"have_bytes", v.have_bytes}};
    put_optional(j, "index", v.index);
    put_optional(j, "size", v.size);
    if (!v.detail.empty()) j["detail"] = v.detail;
}
void from_json(const json& j, ReceivedFile& v) {
    v.name = j.value("name", "");
    v.state = j.value("state", Arrival::absent);
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
    if (v.stopped != Stop::none) return;  // a stopped check reports nothing else
    j.update({{"job_exists", v.job_exists},       {"manifest", v.manifest},         {"index_evidence", v.index_evidence},
              {"files", v.files},                 {"ignored", v.ignored},           {"bytes_present", v.bytes_present},

              {"bytes_total", v.bytes_total},     {"files_present", v.files_present}, {"files_total", v.files_total},
              {"bytes_hashed", v.bytes_hashed}});
    if (!v.foreign.empty()) j["foreign"] = v.foreign;
    if (!v.absent.empty()) j["absent"] = torrent::Selection::of(v.absent).to_string();
}
// More files than a request line (64 MiB) can name: a larger `absent` is a hostile far end.
constexpr std::uint64_t k_max_absent = std::uint64_t{1} << 24;

void from_json(const json& j, ReceiveCheckResult& v) {
    v.complete = j.value("complete", false);
    v.stopped = j.value("stopped", Stop::none);
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
    v.absent.clear();
    if (auto it = j.find("absent"); it != j.end()) {
        auto absent = torrent::Selection::parse(it->get<std::string>());
        if (!absent.ok()) throw nlohmann::json::other_error::create(501, "'absent' is not a ranges text: " + absent.error().message, &j);
        // A few bytes of text can name billions of indices: never more than the files it checked.
        if (absent->count() > v.files_total || absent->count() > k_max_absent)
            throw nlohmann::json::other_error::create(501, fmt::format("'absent' names {} files of {} checked", absent->count(), v.files_total), &j);
        v.absent = absent->indices();
    }
    v.bytes_hashed = j.value("bytes_hashed", std::uint64_t{0});
}

// ---- merge / unmerge -----------------------------------------------------------------------

void to_json(json& j, const MergeRequest& v) {
    j = {{"job_dir", v.job_dir}, {"save_path", v.save_path}, {"files", v.files}};
    put_optional(j, "record_path", v.record_path);
    if (v.min_free) j["min_free"] = v.min_free;
    if (v.layout != PayloadLayout::flat) j["layout"] = v.layout;
}
void from_json(const json& j, MergeRequest& v) {
    v.job_dir = j.at("job_dir").get<std::string>();
    v.save_path = j.at("save_path").get<std::string>();
    v.files = j.at("files").get<std::vector<FileEntry>>();
    v.record_path.reset();
    get_optional(j, "record_path", v.record_path);
    v.min_free = j.value("min_free", std::uint64_t{0});
    v.layout = j.value("layout", PayloadLayout::flat);
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
    if (v.stopped == Stop::disk)
        j.update({{"free_bytes", v.free_bytes}, {"need_bytes", v.need_bytes}, {"stopped_at", v.stopped_at}});
    if (v.stopped != Stop::none) return;  // a stopped merge reports where its record is and why it stopped
    // Each key set in place: a merge of 100,000 files answers 100,000 objects, built once.
    j["provenance"] = v.provenance;
    j["dirs_created"] = v.dirs_created;
    j["bytes_renamed"] = v.bytes_renamed;
}
void from_json(const json& j, MergeResult& v) {
    v.complete = j.value("complete", false);
    v.stopped = j.value("stopped", Stop::none);
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

std::string_view to_string(MergeRecord record) { return record == MergeRecord::present ? "present" : "absent"; }

void to_json(json& j, MergeRecord v) { j = to_string(v); }
void from_json(const json& j, MergeRecord& v) { v = enum_from_json(j, k_merge_records, "merge record state"); }

void to_json(json& j, const MergeRecordResult& v) {
    j = {{"record", v.record}, {"record_path", v.record_path}, {"files", v.files}, {"placed", v.placed}};
}
void from_json(const json& j, MergeRecordResult& v) {
    v.record = j.value("record", MergeRecord::absent);
    v.record_path = j.value("record_path", "");
    v.files = get_list<std::uint32_t>(j, "files");
    v.placed = get_list<std::uint32_t>(j, "placed");
}

std::string_view to_string(UnmergeRecord record) { return record == UnmergeRecord::removed ? "removed" : "absent"; }

void to_json(json& j, UnmergeRecord v) { j = to_string(v); }
void from_json(const json& j, UnmergeRecord& v) { v = enum_from_json(j, k_unmerge_records, "unmerge record state"); }

void to_json(json& j, const UnmergeResult& v) {
    j = {{"record", v.record}, {"removed", v.removed}, {"kept", v.kept}, {"preexisting", v.preexisting}};
}
void from_json(const json& j, UnmergeResult& v) {
    v.record = j.value("record", UnmergeRecord::absent);
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

}  // namespace archctl::node
