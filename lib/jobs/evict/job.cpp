#include "lib/jobs/evict/job.hpp"

#include <fmt/format.h>

namespace archctl::jobs::evict {

bool is_evict(const nlohmann::json& definition) { return definition.is_object() && definition.value("op", "") == "evict"; }

std::string EvictDefinition::summary() const { return fmt::format("evict {} from {}", qb_id.substr(0, 12), cache); }

nlohmann::json EvictDefinition::to_json() const {
    nlohmann::json files_j = nlohmann::json::array();
    for (const auto& f : files) files_j.push_back({{"index", f.index}, {"path", f.path}, {"size", f.size}, {"dev", f.dev}, {"ino", f.ino}});
    nlohmann::json proofs_j = nlohmann::json::array();
    for (const auto& p : proofs) proofs_j.push_back(p.to_json());
    return {{"version", 1},
            {"id", id},
            {"op", "evict"},
            {"created_at", created_at},
            {"resource", identity.to_json()},
            {"name", name},
            {"qb_id", qb_id},
            {"aliases", aliases},
            {"source", {{"node", cache}, {"save_path", save_path}, {"fingerprint", cache_fingerprint}, {"generation", cache_generation}}},
            {"target", {{"node", ""}}},
            {"required", required.to_json()},
            {"required_bytes", required_bytes},
            {"files", files_j},
            {"proofs", proofs_j},
            {"proved_at", proved_at},
            {"verify_archive", verify_archive},
            {"piece_count", piece_count},
            {"piece_length", piece_length},
            {"request_digest", request_digest},
            {"coverage_digest", coverage_digest}};
}

Result<EvictDefinition> EvictDefinition::from_json(const nlohmann::json& j) {
    try {
        if (!is_evict(j)) return Error(ErrorCode::CORRUPT, "not an evict job definition");
        EvictDefinition d;
        d.id = j.at("id");
        d.created_at = j.value("created_at", "");
        ARCHCTL_TRY_ASSIGN(d.identity, torrent::Identity::from_json(j.at("resource")));
        d.name = j.value("name", "");
        d.qb_id = j.at("qb_id");
        d.aliases = j.at("aliases").get<std::vector<std::string>>();
        const auto& src = j.at("source");
        d.cache = src.at("node");
        d.save_path = src.at("save_path");
        d.cache_fingerprint = src.value("fingerprint", "");
        d.cache_generation = src.value("generation", std::uint64_t{0});
        ARCHCTL_TRY_ASSIGN(d.required, torrent::Selection::from_json(j.at("required")));
        d.required_bytes = j.value("required_bytes", std::uint64_t{0});
        for (const auto& f : j.at("files"))
            d.files.push_back({f.at("index").get<std::uint32_t>(), f.at("path").get<std::string>(), f.at("size").get<std::uint64_t>(),
                               f.value("ino", std::uint64_t{0}), f.value("dev", std::uint64_t{0})});
        for (const auto& p : j.at("proofs")) {
            ARCHCTL_TRY_ASSIGN(plan::ArchiveProof proof, plan::ArchiveProof::from_json(p));
            d.proofs.push_back(std::move(proof));
        }
        d.proved_at = j.value("proved_at", "");
        d.verify_archive = j.value("verify_archive", false);
        d.piece_count = j.value("piece_count", std::int64_t{0});
        d.piece_length = j.value("piece_length", std::int64_t{0});
        d.request_digest = j.value("request_digest", "");
        d.coverage_digest = j.value("coverage_digest", "");
        return d;
    } catch (const nlohmann::json::exception& e) {
        return Error(ErrorCode::CORRUPT, fmt::format("unreadable evict job definition: {}", e.what()));
    }
}

nlohmann::json EvictLedger::to_json() const {
    nlohmann::json j = {{"version", 1},
                        {"op", "evict"},
                        {"removed", removed},
                        {"files_removed", files_removed},
                        {"bytes_freed", bytes_freed},
                        {"dirs_removed", dirs_removed},
                        {"partfile", partfile}};
    // The unlink step's progress only once it has some: a ledger from before it reads the same.
    if (unlink_done > 0) j["unlink_done"] = unlink_done;
    if (unlinking) j["unlinking"] = nlohmann::json::array({unlinking->first, unlinking->second});
    write_shared(j);
    j["step"] = to_string(step);
    return j;
}

Result<EvictLedger> EvictLedger::from_json(const nlohmann::json& j) {
    EvictLedger l;
    if (!j.is_object()) return l;
    ARCHCTL_TRY_ASSIGN(l.step, k_evict_steps.read(j, EvictStep::hold));
    l.read_shared(j);
    l.removed = j.value("removed", false);
    l.files_removed = j.value("files_removed", std::uint64_t{0});
    l.bytes_freed = j.value("bytes_freed", std::uint64_t{0});
    l.dirs_removed = j.value("dirs_removed", std::uint64_t{0});
    l.unlink_done = j.value("unlink_done", std::uint64_t{0});
    if (const auto it = j.find("unlinking"); it != j.end() && it->is_array() && it->size() == 2 && (*it)[0].is_number_unsigned() &&
                                             (*it)[1].is_number_unsigned())
        l.unlinking = std::make_pair((*it)[0].get<std::uint64_t>(), (*it)[1].get<std::uint64_t>());
    l.partfile = j.value("partfile", "");
    return l;
}

}  // namespace archctl::jobs::evict
