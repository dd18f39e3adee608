#pragma once
// Archive coverage of a cache placement (pure; DESIGN.md §7, seeds/workflows.md "Evict cache").
//
// Evicting a cache placement is safe only when every file the cache holds is held elsewhere.
// The required set is the cache placement's selected files (files skipped there hold no payload
// on the cache). A required file is covered by an archive placement when, on that node:
//   - the file is selected and at 100% in qBittorrent's view,
//   - the placement's name for the file equals the metainfo path (no rename in qBittorrent), and
//   - the placement is trusted: its live fingerprint equals the one archctl recorded when its own
//     recheck committed it, or a fresh piece check (--verify-archive) will prove the files.
// Per-file coverage is the union over archive nodes; a file may be covered by several. Identity
// is the caller's duty: every view must be a placement of the same resource (by its aliases).
//
// Nothing here talks to a service or touches a disk; callers bring the views.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/plan/transfer_plan.hpp"
#include "lib/torrent/selection.hpp"

namespace archctl::plan {

// One file of the resource, as the metainfo says (qB index, path with the root folder first).
struct CoverageFile {
    std::uint32_t index = 0;
    std::string path;
    std::uint64_t size = 0;
};

// Why an archive placement may count through qBittorrent's view.
enum class Trust {
    committed,       // archctl's recheck committed it and nothing changed since (fingerprints equal)
    verify_pieces,   // it will be proven by a fresh piece check before anything is deleted
    untrusted,       // neither: its files do not count
};

struct ArchiveEvidence {
    PlacementView view;
    Trust trust = Trust::untrusted;
    std::uint64_t generation = 0;   // archctl's placement generation on that node (0: none recorded)
    std::string fingerprint;        // live fingerprint of `view`
    std::string why_untrusted;      // for the notes when trust == untrusted
};

struct CoverageInput {
    PlacementView cache;
    std::vector<CoverageFile> files;       // every file of the resource, by index
    std::vector<ArchiveEvidence> archives; // every reachable archive placement of the resource
    std::vector<std::string> unreachable;  // "node: reason", for the notes
};

struct FileCoverage {
    CoverageFile file;
    std::vector<std::string> nodes;  // archive nodes holding it, sorted
};

// What one archive node proves: the required files it holds (a proof the job persists and
// revalidates right before deleting).
struct ArchiveProof {
    std::string node;
    std::string qb_id;
    std::string save_path;
    torrent::Selection files;
    std::uint64_t generation = 0;
    std::string fingerprint;
    Trust trust = Trust::committed;

    nlohmann::json to_json() const;
    static Result<ArchiveProof> from_json(const nlohmann::json& j);
};

struct Coverage {
    torrent::Selection required;            // the cache placement's selected files
    std::vector<FileCoverage> files;        // one per required file, by index
    std::vector<CoverageFile> missing;      // required files no archive placement covers
    std::vector<ArchiveProof> proofs;       // one per archive node that covers at least one file
    std::vector<std::string> notes;         // placements that do not count, and why
    std::uint64_t required_bytes = 0, missing_bytes = 0;
    std::string digest;                     // sha256 hex over every fact the verdict relies on

    bool complete() const { return missing.empty(); }
    nlohmann::json to_json() const;
};

// Compute the coverage. Errors: BAD_VALUE when a selected index is not a file of the resource.
[[nodiscard]] Result<Coverage> compute_coverage(const CoverageInput& input);

// Does `proof` still hold against a fresh read of its node? Empty when it does, else the reason
// (user-facing, e.g. "file 3 'pay/b.bin' is no longer selected and complete on 'nas'").
// `live` is nullopt when the node no longer has the placement.
[[nodiscard]] std::string proof_drift(const ArchiveProof& proof, const std::optional<PlacementView>& live,
                                      const std::string& live_fingerprint, std::uint64_t live_generation);

std::string to_string(Trust t);

}  // namespace archctl::plan
