#include "lib/jobs/transfer/job.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace archctl::jobs::transfer {
namespace {

nlohmann::json files_json(const std::vector<JobFile>& files) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& f : files) {
        nlohmann::json row = {{"index", f.index}, {"path", f.path}, {"size", f.size}};
        if (f.at_source() != f.path) row["source_disk"] = f.source_disk();
        if (f.at_target() != f.path) row["target_disk"] = f.target_disk();
        a.push_back(std::move(row));
    }
    return a;
}

std::vector<JobFile> files_from(const nlohmann::json& a) {
    std::vector<JobFile> out;
    // Definitions written before layouts were known have files at their metainfo paths.
    for (const auto& f : a)
        out.push_back({f.at("index").get<std::uint32_t>(), f.at("path").get<std::string>(), f.at("size").get<std::uint64_t>(),
                       f.value("source_disk", ""), f.value("target_disk", "")});
    return out;
}

const char* partfile_text(plan::PartfileNeed n) {
    switch (n) {
        case plan::PartfileNeed::none: return "none";
        case plan::PartfileNeed::carry_source: return "carry_source";
        case plan::PartfileNeed::target_own: return "target_own";
    }
    return "none";
}

}  // namespace

bool is_transfer_definition(const nlohmann::json& j) {
    if (!j.is_object() || !j.contains("op") || !j["op"].is_string()) return false;
    const std::string& op = j["op"].get_ref<const std::string&>();
    return op == "archive" || op == "unarchive";
}

std::string JobDefinition::summary() const {
    return fmt::format("{} {} {} → {}", plan::to_string(op), qb_id.substr(0, 12), source, target);
}

nlohmann::json JobDefinition::to_json() const {
    return {{"version", 1},
            {"id", id},
            {"op", plan::to_string(op)},
            {"created_at", created_at},
            {"resource", identity.to_json()},
            {"name", name},
            {"qb_id", qb_id},
            {"aliases", aliases},
            {"source", {{"node", source}, {"save_path", source_save_path}, {"data_path", source_data_path}, {"fingerprint", source_fingerprint}}},
            {"target", {{"node", target}, {"save_path", target_save_path}, {"new", new_target}, {"fingerprint", target_fingerprint},
                        {"layout", torrent::to_string(target_layout)}}},
            {"route", {{"id", route.id}, {"source_path", route.source_path}, {"target_path", route.target_path}}},
            {"requested", requested.to_json()},
            {"baseline", baseline.to_json()},
            {"delta", delta.to_json()},
            {"union", union_set.to_json()},
            {"delta_bytes", delta_bytes},
            {"files", files_json(files)},
            {"union_files", files_json(union_files)},
            {"file_count", file_count},
            {"partfile", partfile_text(partfile)},
            {"boundary_pieces", boundary_pieces},
            {"piece_count", piece_count},
            {"piece_length", piece_length},
            {"verify_transit", verify_transit},
            {"payload_layout", node::to_string(payload_layout)},
            {"request_digest", request_digest},
            {"plan_digest", plan_digest}};
}

Result<JobDefinition> JobDefinition::from_json(const nlohmann::json& j) {
    try {
        JobDefinition d;
        d.id = j.at("id");
        std::string op = j.at("op").get<std::string>();
        if (!is_transfer_definition(j))
            return Error(ErrorCode::NOT_A_TRANSFER, fmt::format("job {} is not an archive or unarchive job: {}", j.value("id", "?"), op));
        d.op = op == "archive" ? plan::Operation::archive : plan::Operation::unarchive;
        d.created_at = j.value("created_at", "");
        ARCHCTL_TRY_ASSIGN(d.identity, torrent::Identity::from_json(j.at("resource")));
        d.name = j.value("name", "");
        d.qb_id = j.at("qb_id");
        d.aliases = j.at("aliases").get<std::vector<std::string>>();
        d.source = j.at("source").at("node");
        d.source_save_path = j.at("source").at("save_path");
        d.source_data_path = j.at("source").value("data_path", d.source_save_path);  // older definitions: the save path
        d.source_fingerprint = j.at("source").value("fingerprint", "");
        d.target = j.at("target").at("node");
        d.target_save_path = j.at("target").at("save_path");
        d.new_target = j.at("target").at("new");
        d.target_fingerprint = j.at("target").value("fingerprint", "");
        if (!torrent::parse_content_layout(j.at("target").value("layout", "Original"), d.target_layout))
            return Error(ErrorCode::CORRUPT, fmt::format("unreadable job definition: unknown target layout '{}'", j.at("target").value("layout", "")));
        d.route = {j.at("route").at("id"), j.at("route").at("source_path"), j.at("route").at("target_path")};
        ARCHCTL_TRY_ASSIGN(d.requested, torrent::Selection::from_json(j.at("requested")));
        ARCHCTL_TRY_ASSIGN(d.baseline, torrent::Selection::from_json(j.at("baseline")));
        ARCHCTL_TRY_ASSIGN(d.delta, torrent::Selection::from_json(j.at("delta")));
        ARCHCTL_TRY_ASSIGN(d.union_set, torrent::Selection::from_json(j.at("union")));
        d.delta_bytes = j.value("delta_bytes", std::int64_t{0});
        d.files = files_from(j.at("files"));
        d.union_files = files_from(j.at("union_files"));
        d.file_count = j.value("file_count", std::size_t{0});
        std::string pf = j.value("partfile", "none");
        d.partfile = pf == "carry_source" ? plan::PartfileNeed::carry_source
                     : pf == "target_own"  ? plan::PartfileNeed::target_own
                                           : plan::PartfileNeed::none;
        d.boundary_pieces = j.value("boundary_pieces", std::vector<std::int64_t>{});
        d.piece_count = j.value("piece_count", std::int64_t{0});
        d.piece_length = j.value("piece_length", std::int64_t{0});
        d.verify_transit = j.value("verify_transit", false);
        auto layout = node::parse_payload_layout(j.value("payload_layout", "flat"));
        if (!layout) return Error(ErrorCode::CORRUPT, fmt::format("unreadable job definition: unknown payload layout '{}'", j.value("payload_layout", "")));
        d.payload_layout = *layout;
        d.request_digest = j.value("request_digest", "");
        d.plan_digest = j.value("plan_digest", "");
        return d;
    } catch (const nlohmann::json::exception& e) {
        return Error(ErrorCode::CORRUPT, fmt::format("unreadable job definition: {}", e.what()));
    }
}

nlohmann::json Ledger::to_json() const {
    nlohmann::json j = {{"version", 1},
                        {"staged", staged},
                        {"synced", synced},
                        {"merged", merged},
                        {"target_added", target_added},
                        {"target_tag", target_tag},
                        {"baseline_recorded", baseline_recorded},
                        {"target_baseline", target_baseline},
                        {"target_touched", target_touched},
                        {"committed", committed},
                        {"generation", generation},
                        {"started_target", started_target},
                        {"cleaned", cleaned},
                        {"bytes_present", bytes_present},
                        {"merge_provenance", merge_provenance}};
    write_shared(j);
    j["step"] = to_string(step);
    if (state == JobState::compensating) j["compensation_ends"] = to_string(compensation_ends);
    if (target_blocked) j["target_blocked"] = target_blocked->to_json();
    return j;
}

Result<Ledger> Ledger::from_json(const nlohmann::json& j) {
    Ledger l;
    if (!j.is_object()) return Error(ErrorCode::CORRUPT, "the ledger is not a JSON object");
    ARCHCTL_TRY_ASSIGN(l.step, k_transfer_steps.read(j, TransferStep::stage));
    l.read_shared(j);
    l.staged = j.value("staged", false);
    l.synced = j.value("synced", false);
    l.merged = j.value("merged", false);
    l.target_added = j.value("target_added", false);
    l.target_tag = j.value("target_tag", "");
    l.baseline_recorded = j.value("baseline_recorded", false);
    l.target_baseline = j.value("target_baseline", nlohmann::json());
    l.target_touched = j.value("target_touched", false);
    l.committed = j.value("committed", false);
    l.generation = j.value("generation", std::uint64_t{0});
    l.started_target = j.value("started_target", false);
    l.cleaned = j.value("cleaned", false);
    l.bytes_present = j.value("bytes_present", std::uint64_t{0});
    if (auto p = j.find("merge_provenance"); p != j.end() && p->is_array()) l.merge_provenance = p->get<std::vector<node::MergedFile>>();
    l.compensation_ends = parse_job_state(j.value("compensation_ends", "failed"));
    if (auto b = j.find("target_blocked"); b != j.end() && b->is_object()) l.target_blocked = TargetBlocked::from_json(*b);
    return l;
}

std::string job_tag(const std::string& job_id) { return "archctl-job-" + job_id; }

TargetOwner target_owner(const Ledger& ledger, const std::string& job_id, const std::optional<std::vector<std::string>>& live_tags) {
    if (!live_tags) return TargetOwner::absent;
    if (std::find(live_tags->begin(), live_tags->end(), job_tag(job_id)) != live_tags->end()) return TargetOwner::this_job;
    // A job that added its torrent without a tag can only go by its own record.
    if (ledger.target_added && ledger.target_tag.empty()) return TargetOwner::this_job;
    return TargetOwner::someone_else;
}

}  // namespace archctl::jobs::transfer
