#pragma once
// Summaries for `status` and `job list`: one row per job with its progress in the user's words,
// e.g. "archiving: 61% (13.2 GiB/21.5 GiB, 3/6 files)", and each resource's placements read live
// with per-node and per-cache coverage.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/jobs/transfer/job.hpp"
#include "lib/jobs/core/nodes.hpp"
#include "lib/state/placements.hpp"
#include "lib/torrent/identity.hpp"
#include "lib/state/job_store.hpp"

namespace archctl::jobs {

struct JobSummary {
    std::string id;
    nlohmann::json definition;
    Ledger ledger;                // the kind's ledger as a transfer ledger: state, step, failure, kept
    nlohmann::json stored_ledger; // the ledger as the kind stores it (`job show --json`)
    std::string nodes;            // "seedbox → nas"; the cache node alone for an eviction
    bool running = false;         // a live process holds its lock
    long pid = 0;                 // that process (read_lock), 0 when none
    std::string status;           // the progress text
    bool needs_attention = false; // failed with something left to do, or cleanup required
    bool damaged = false;         // its definition is missing or unreadable: nothing can drive it
    bool retired = false;         // not in the job index's active set (its row is in the finished log)
    // A damaged job's staging directories as its "created" event names them: [{node, path}].
    nlohmann::json staging = nlohmann::json::array();

    bool finished() const;
    // What the job moves, from where to where, read from its definition: op (archive, unarchive,
    // evict), resource (its qB id), torrent name, source and target node (evict: the cache node
    // as source, no target). Empty fields for a damaged job.
    struct Identity {
        std::string op, resource, name, source, target;
    };
    Identity identity() const;
    // The job row of every --json document (man archctl-json, "JOB ROW"): id, op, resource,
    // name, source, target, state, step, bytes/files done and total, percent, started, ended,
    // pid, failure {code, message} or null, plus the human `status` text.
    nlohmann::json to_json() const;
};

// Whether a live process holds the job's lock, and its pid.
void read_lock(const state::JobStore& store, JobSummary& row);

// The row of one archive/unarchive job (the transfer kind's summary; every kind's rows come from
// jobs::summarize_jobs in driver.hpp).
[[nodiscard]] JobSummary summarize_transfer(const state::JobStore& store, const std::string& id, const nlohmann::json& definition);
// The row of a damaged job (state::JobStore::damaged): what is wrong and the command that
// removes its records.
[[nodiscard]] JobSummary summarize_damaged(const state::JobStore& store, const std::string& id);
// Remove a damaged job's staging directories on their nodes (the node's cleanup operation: only
// the job's own directory below the route folder). Every node is tried; the first error is
// returned and the job's records should then stay, so the paths remain known.
[[nodiscard]] Status remove_damaged_staging(Nodes& nodes, const JobSummary& row);
// "archiving: 61% (…)", "done", "failed: <message> (compensation kept 3 files used by other
// torrents)".
std::string progress_text(const nlohmann::json& definition, const Ledger& ledger);
// What compensation and cleanup left in place, by step and reason: "compensation kept 3 files
// used by other torrents", "compensation kept 2 files: 1 used by another torrent, 1 there before
// the job"; empty when nothing was kept. `kept` is the ledger's list.
std::string kept_text(const nlohmann::json& kept);

// What one node holds of a resource, as its qBittorrent reports it now.
struct PlacementSummary {
    std::string node, role;
    std::string error;                 // the node could not be read (then nothing else is known)
    bool present = false;              // the node's qBittorrent has the torrent
    std::string qb_id, save_path, run_state;
    std::size_t files = 0, selected = 0, complete = 0;
    std::int64_t selected_bytes = 0, complete_bytes = 0;
    torrent::Selection selected_set, complete_set;
    std::vector<std::string> names;    // file paths by qB index
    clients::qbittorrent::TorrentInfo info;                    // qB's torrent entry
    std::vector<clients::qbittorrent::TorrentFile> file_list;  // qB's file list
    std::optional<state::PlacementRecord> record;  // archctl's last commit on this node

    nlohmann::json to_json() const;
};

// How much of one cache placement's selected files archive placements hold now, by the live
// test evict applies before it deletes anything (docs/evict-proof.md "The per-file judgement").
struct CoverageSummary {
    std::string cache;
    std::size_t files = 0, covered = 0;
    std::map<std::string, std::size_t> by_archive;  // archive node → files of this cache it proves
    std::vector<std::string> missing;               // paths no archive node proves
    std::vector<std::pair<std::string, std::string>> refused;  // (path, why no archive copy counts)
    std::vector<std::string> notes;                 // archive placements that do not count, and why

    nlohmann::json to_json() const;
};

struct ResourceStatus {
    torrent::Identity identity;
    std::string name;
    std::vector<PlacementSummary> placements;  // every configured node, by name
    std::vector<CoverageSummary> coverage;     // one per cache node holding the resource

    nlohmann::json to_json() const;
};

// Fill in the placements and coverage of each resource (given by identity and name) on every
// configured node: one torrent list per node for all of them; a placement whose torrent entry
// proves every file selected and complete takes the resource's file table (kept in the state
// directory's cache/files/ after its first read), every other placement reads its own file list
// (docs/status.md "What status reads"). An unreadable node is reported in its placement's
// `error`, never fatal.
// `count_shared`: evict.count_shared_copies (coverage counts copies other torrents share).
[[nodiscard]] std::vector<ResourceStatus> resource_status(Nodes& nodes, const state::StateDir& dir,
                                                          const std::vector<ResourceStatus>& resources, bool count_shared = false);

}  // namespace archctl::jobs
