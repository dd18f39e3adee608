#include "lib/plan/coverage.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "lib/base/hash.hpp"
#include "lib/torrent/sha.hpp"

namespace archctl::plan {
namespace {

using torrent::sha256_hex;

// The files of `a` that count as covered: selected, complete, named as the metainfo says.
torrent::Selection counted_files(const ArchiveEvidence& a, const std::vector<CoverageFile>& files) {
    std::vector<std::uint32_t> out;
    for (std::uint32_t i : a.view.complete.intersection(a.view.selected).indices()) {
        if (i >= files.size()) continue;
        if (i < a.view.names.size() && !a.view.names[i].empty() && a.view.names[i] != files[i].path) continue;
        out.push_back(i);
    }
    return torrent::Selection::of(std::move(out));
}

std::string renamed_note(const ArchiveEvidence& a, const std::vector<CoverageFile>& files, const torrent::Selection& required) {
    std::size_t renamed = 0;
    for (std::uint32_t i : a.view.complete.intersection(required).indices())
        if (i < files.size() && i < a.view.names.size() && !a.view.names[i].empty() && a.view.names[i] != files[i].path) ++renamed;
    if (!renamed) return "";
    return fmt::format("{}: {} file(s) renamed in qBittorrent do not count", a.view.node, renamed);
}

}  // namespace

std::string to_string(Trust t) {
    switch (t) {
        case Trust::committed: return "committed";
        case Trust::verify_pieces: return "verify_pieces";
        case Trust::untrusted: return "untrusted";
    }
    return "untrusted";
}

nlohmann::json ArchiveProof::to_json() const {
    return {{"node", node},         {"qb_id", qb_id},           {"save_path", save_path}, {"files", files.to_json()},
            {"generation", generation}, {"fingerprint", fingerprint}, {"trust", to_string(trust)}};
}

Result<ArchiveProof> ArchiveProof::from_json(const nlohmann::json& j) {
    try {
        ArchiveProof p;
        p.node = j.at("node");
        p.qb_id = j.at("qb_id");
        p.save_path = j.value("save_path", "");
        ARCHCTL_TRY_ASSIGN(p.files, torrent::Selection::from_json(j.at("files")));
        p.generation = j.value("generation", std::uint64_t{0});
        p.fingerprint = j.value("fingerprint", "");
        p.trust = j.value("trust", "committed") == "verify_pieces" ? Trust::verify_pieces : Trust::committed;
        return p;
    } catch (const nlohmann::json::exception& e) {
        return Error("CORRUPT", fmt::format("unreadable archive proof: {}", e.what()));
    }
}

Result<Coverage> compute_coverage(const CoverageInput& in) {
    Coverage c;
    c.required = in.cache.selected;
    if (c.required.end() > in.files.size())
        return Error("BAD_VALUE", fmt::format("the cache placement on '{}' selects file {} of a resource with {} files", in.cache.node,
                                              c.required.end() - 1, in.files.size()));
    std::vector<ArchiveEvidence> archives = in.archives;
    std::sort(archives.begin(), archives.end(), [](const auto& a, const auto& b) { return a.view.node < b.view.node; });
    std::map<std::uint32_t, std::vector<std::string>> holders;
    for (const auto& a : archives) {
        if (a.trust == Trust::untrusted) {
            c.notes.push_back(fmt::format("{}: not counted: {}", a.view.node, a.why_untrusted.empty() ? "not verified by archctl" : a.why_untrusted));
            continue;
        }
        if (std::string note = renamed_note(a, in.files, c.required); !note.empty()) c.notes.push_back(note);
        torrent::Selection held = counted_files(a, in.files).intersection(c.required);
        if (held.empty()) continue;
        for (std::uint32_t i : held.indices()) holders[i].push_back(a.view.node);
        c.proofs.push_back({a.view.node, a.view.qb_id, a.view.save_path, held, a.generation, a.fingerprint, a.trust});
    }
    for (const auto& u : in.unreachable) c.notes.push_back(fmt::format("{} (not counted)", u));
    std::string facts = fmt::format("cache {} {} {}\n", in.cache.node, in.cache.qb_id, c.required.to_string());
    for (std::uint32_t i : c.required.indices()) {
        const CoverageFile& f = in.files[i];
        c.required_bytes += f.size;
        auto it = holders.find(i);
        if (it == holders.end()) {
            c.missing.push_back(f);
            c.missing_bytes += f.size;
            c.files.push_back({f, {}});
        } else {
            c.files.push_back({f, it->second});
        }
    }
    for (const auto& p : c.proofs)
        facts += fmt::format("proof {} {} {} {} {} {}\n", p.node, p.qb_id, p.files.to_string(), p.generation, p.fingerprint, to_string(p.trust));
    for (const auto& m : c.missing) facts += fmt::format("missing {}\n", m.index);
    c.digest = sha256_hex(facts);
    return c;
}

std::string proof_drift(const ArchiveProof& proof, const std::optional<PlacementView>& live, const std::string& live_fingerprint,
                        std::uint64_t live_generation) {
    if (!live) return fmt::format("'{}' no longer has the archive placement", proof.node);
    if (live->qb_id != proof.qb_id) return fmt::format("the placement on '{}' is now qB id {}, not {}", proof.node, live->qb_id, proof.qb_id);
    torrent::Selection held = live->selected.intersection(live->complete);
    torrent::Selection lost = proof.files.difference(held);
    if (!lost.empty()) {
        std::uint32_t first = lost.indices().front();
        std::string name = first < live->names.size() ? live->names[first] : "";
        return fmt::format("file {} '{}'{} no longer selected and complete on '{}'", first, name,
                           lost.count() > 1 ? fmt::format(" and {} more are", lost.count() - 1) : std::string(" is"), proof.node);
    }
    if (live->save_path != proof.save_path)
        return fmt::format("the placement on '{}' moved from '{}' to '{}'", proof.node, proof.save_path, live->save_path);
    if (live_fingerprint != proof.fingerprint) return fmt::format("the placement on '{}' changed since it was proven", proof.node);
    if (live_generation != proof.generation)
        return fmt::format("the placement on '{}' is at generation {}, not {}", proof.node, live_generation, proof.generation);
    return "";
}

nlohmann::json Coverage::to_json() const {
    nlohmann::json files_j = nlohmann::json::array();
    for (const auto& f : files)
        files_j.push_back({{"index", f.file.index}, {"path", f.file.path}, {"size", f.file.size}, {"nodes", f.nodes}});
    nlohmann::json missing_j = nlohmann::json::array();
    for (const auto& m : missing) missing_j.push_back({{"index", m.index}, {"path", m.path}, {"size", m.size}});
    nlohmann::json proofs_j = nlohmann::json::array();
    for (const auto& p : proofs) proofs_j.push_back(p.to_json());
    return {{"complete", complete()}, {"required", required.to_json()}, {"required_bytes", required_bytes},
            {"missing_bytes", missing_bytes}, {"files", files_j}, {"missing", missing_j}, {"proofs", proofs_j},
            {"notes", notes}, {"digest", digest}};
}

}  // namespace archctl::plan
