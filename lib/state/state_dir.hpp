#pragma once
// The control state directory (docs/design.md "State on disk"):
//
//   <state>/
//     jobs/<job-id>/definition.json   immutable, written once
//     jobs/<job-id>/ledger.json       mutable, atomically replaced at step boundaries
//     jobs/<job-id>/events.jsonl      append-only
//     jobs/<job-id>/lock              the running holder
//     reservations/<alias>            alias → job id, O_EXCL
//     placements/<alias>/<node>.json  generation + last verified fingerprint
//     routes/<route-id>.json          route provisioning state
//     tokens/<token>.json             single-use confirmation tokens
//     tombstones/<job-id>             idempotency tombstones of hidden jobs
//     index/active/<job-id>           jobs that may still need something (job_index.hpp)
//     index/finished.jsonl            one row per job that ended cleanly (job_index.hpp)
//     tiers/<policy>.json             the last run of each tier policy (tier_store.hpp)
//     logins/<node>.json              a login the node's qBittorrent refused (refused_logins.hpp)
//     cache/files/<qb id>.json        file tables status keeps (paths and sizes by qB index);
//                                     safe to delete, read again when missing
//
// Every write is durable (temp + fsync + rename + fsync dir, or O_EXCL + fsync + fsync dir).
// Nothing here talks to a service; callers bring the facts.

#include <string>

#include "lib/base/result.hpp"

namespace archctl::state {

class StateDir {
public:
    // Open (creating the layout if needed) the state directory at `root`.
    static Result<StateDir> open(const std::string& root);

    const std::string& root() const { return m_root; }
    std::string jobs() const { return m_root + "/jobs"; }
    std::string job(const std::string& job_id) const { return jobs() + "/" + job_id; }
    std::string reservations() const { return m_root + "/reservations"; }
    std::string placements() const { return m_root + "/placements"; }
    std::string routes() const { return m_root + "/routes"; }
    std::string tokens() const { return m_root + "/tokens"; }
    std::string tombstones() const { return m_root + "/tombstones"; }
    // The job index: active markers and the finished-job log (job_index.hpp).
    std::string index() const { return m_root + "/index"; }
    // The file tables status keeps, one per resource (docs/status.md "What status reads").
    std::string file_tables() const { return m_root + "/cache/files"; }
    // One record per tier policy: its last run's outcome (<tiers>/<name>.json).
    std::string tiers() const { return m_root + "/tiers"; }
    // Logins a node's qBittorrent refused (<logins>/<node>.json, refused_logins.hpp).
    std::string logins() const { return m_root + "/logins"; }

private:
    explicit StateDir(std::string root) : m_root(std::move(root)) {}
    std::string m_root;
};

// A new job id that sorts by creation time: "20261201-183412-7f3c".
std::string new_job_id();

// Random lowercase hex of `chars` characters (OpenSSL RAND_bytes).
std::string random_hex(size_t chars);

}  // namespace archctl::state
