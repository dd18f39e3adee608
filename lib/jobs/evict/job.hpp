#pragma once
// An evict job's records (docs/design.md "State on disk", "Evict"): the immutable definition — the cache placement as
// proven (fingerprint, generation, the files it owns with their size and inode) and the archive
// proofs (node, qB id, file set, generation, fingerprint, time) — and the mutable ledger of what
// is durably done. They live in the same JobStore as archive jobs (<state>/jobs/<id>/) with
// "op": "evict".
//
// Steps, in order (the ledger's `step` names the next one):
//   hold        tag every covering archive torrent `archctl-hold` (restored on every rerun)
//   remove      revalidate every proof and the cache fingerprint, then remove the cache torrent
//               from qBittorrent with data deletion disabled
//   unlink      snapshot the paths every remaining torrent on the cache node references, revalidate
//               again, unlink owned files nobody references, rmdir upward
//   partfile    remove `.<qB id>.parts` only when its header proves it is this torrent's
//   release     remove the hold tags, forget the cache placement record, release the reservation
// A rerun re-reads evidence for the step it is at; nothing before `remove` has deleted anything.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/jobs/core/ledger.hpp"
#include "lib/plan/coverage.hpp"
#include "lib/torrent/identity.hpp"
#include "lib/torrent/selection.hpp"

namespace archctl::jobs::evict {

inline constexpr const char* k_hold_tag = "archctl-hold";

// A file of the cache placement that eviction may unlink: what it was when it was proven.
struct OwnedFile {
    std::uint32_t index = 0;
    std::string path;      // its path below the save path on the cache's disk (its content layout's)
    std::uint64_t size = 0;
    std::uint64_t ino = 0;
    std::uint64_t dev = 0;
};

struct EvictDefinition {
    std::string id;
    std::string created_at;
    torrent::Identity identity;
    std::string name;
    std::string qb_id;                     // the cache torrent's qB id
    std::vector<std::string> aliases;
    std::string cache;                     // node name
    std::string save_path;                 // the cache placement's save path (node path)
    std::string cache_fingerprint;
    std::uint64_t cache_generation = 0;    // archctl's placement generation on the cache (0: none)
    torrent::Selection required;           // the cache placement's selected files
    std::uint64_t required_bytes = 0;
    std::vector<OwnedFile> files;          // required files present on disk when proven
    std::vector<plan::ArchiveProof> proofs;
    std::string proved_at;
    bool verify_archive = false;
    std::int64_t piece_count = 0, piece_length = 0;
    std::string request_digest;
    std::string coverage_digest;

    nlohmann::json to_json() const;
    static Result<EvictDefinition> from_json(const nlohmann::json& j);
    std::string summary() const;           // "evict 1838bf9a70c1 from seedbox"
};

// An eviction's steps, in order (above).
enum class EvictStep : std::uint8_t { hold, remove, unlink, partfile, release, done };
inline constexpr jobs::StepNames<EvictStep, 6> k_evict_steps{{"hold", "remove", "unlink", "partfile", "release", "done"}};
[[nodiscard]] inline std::string_view to_string(EvictStep s) { return k_evict_steps(s); }

// The evict ledger: the shared part (core/ledger.hpp; its sessions move no bytes), its next
// step, and what the steps hold … release record. `kept`: [{path, reason}] from the unlink step;
// `failure`: {code, message, step} (and `gone`, the owned files no longer on the cache's disk).
struct EvictLedger : jobs::LedgerCore {
    EvictLedger() : LedgerCore(jobs::SessionBytes::none) {}

    EvictStep step = EvictStep::hold;

    bool removed = false;                  // the cache torrent is gone from qBittorrent
    std::uint64_t files_removed = 0, bytes_freed = 0, dirs_removed = 0;
    // The unlink step's progress through the definition's files, in order: the first
    // `unlink_done` are accounted for in the counts above. `unlinking` is the intent written
    // durably before a batch is unlinked, [first, last) of those files; a run that finds it set
    // was killed during that batch and counts the intent's files now absent before going on.
    std::uint64_t unlink_done = 0;
    std::optional<std::pair<std::uint64_t, std::uint64_t>> unlinking;
    std::string partfile;                  // "", absent, removed, kept: <reason>

    nlohmann::json to_json() const;
    // CORRUPT when its step is none of k_evict_steps.
    static Result<EvictLedger> from_json(const nlohmann::json& j);
};

// True when a job definition (as stored) is an evict job.
[[nodiscard]] bool is_evict(const nlohmann::json& definition);

}  // namespace archctl::jobs::evict
