#pragma once
// Placement generations: per resource alias and node, the generation counter archctl advances at
// each commit and the fingerprint it verified then. A fingerprint seen later that differs from
// the recorded one is stale external state (docs/design.md "Words"), never silently adopted.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/state/state_dir.hpp"

namespace archctl::state {

struct PlacementRecord {
    std::uint64_t generation = 0;
    std::string fingerprint;       // digest of the committed placement
    std::string job_id;            // the job that committed it
    std::string committed_at;      // RFC 3339
    nlohmann::json detail = nlohmann::json::object();  // qB id, save path, selection, ...
};

class PlacementStore {
public:
    explicit PlacementStore(const StateDir& dir) : m_dir(dir) {}

    // The record for (alias, node), or nullopt when archctl never committed one.
    Result<std::optional<PlacementRecord>> get(const std::string& alias, const std::string& node) const;

    // The commit: write generation+1 for every alias of the resource. Idempotent for the same
    // job: if `job_id` already committed generation N+1, nothing changes.
    Result<std::uint64_t> advance(const std::vector<std::string>& aliases, const std::string& node,
                                  const std::string& fingerprint, const std::string& job_id,
                                  const nlohmann::json& detail);

    // Replace the detail of the record at `generation` for every alias that has it (the
    // generation, fingerprint and committing job stay): a re-stamp after a change archctl made
    // to the committed files itself. A record that moved on to another generation is left alone.
    Status update_detail(const std::vector<std::string>& aliases, const std::string& node, std::uint64_t generation,
                         const nlohmann::json& detail);

    Status forget(const std::vector<std::string>& aliases, const std::string& node);

private:
    std::string path_of(const std::string& alias, const std::string& node) const;
    StateDir m_dir;
};

}  // namespace archctl::state
