#pragma once
// The last run of each tier policy (docs/design.md "Many resources and tier policies"):
// <state>/tiers/<policy>.json, one record per policy, replaced by every run of it and read by
// `status`. The record is the run's summary without its steps, plus when the run started and
// ended.
//
//   TierStore store(dir);
//   store.write(record);                    // durable: temp, fsync, rename, fsync directory
//   auto last = store.read("seedbox");      // nullopt when the policy never ran
//
// What a crash leaves: the previous record, or the new one, never a torn one (a stray temp file
// at most, which read() never looks at).

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/state/state_dir.hpp"

namespace archctl::state {

// What one run of a policy did, as `tier --json` and `status` show it.
struct TierRecord {
    std::string policy;
    std::string outcome;  // done|stopped|failed
    std::size_t resumed = 0, archived = 0, evicted = 0, failed = 0, blocked = 0;
    std::uint64_t free_before = 0, free_after = 0, want_free = 0;
    std::string goal;     // the goal in words ("keep 200.0 GiB free"); empty when never read
    bool goal_met = false;
    std::optional<std::string> stop;  // the clean stop's text, when the run stopped
    struct Failure {
        std::string code, message;
    };
    std::optional<Failure> error;     // the run's first error
    std::string started, ended;       // RFC 3339

    // The record's document: every field above, `stop` and `error` only when set, `started` and
    // `ended` only when not empty.
    [[nodiscard]] nlohmann::json to_json() const;
    // A document to_json() wrote; absent fields keep their defaults. CORRUPT when it is not an
    // object or a field has the wrong type.
    [[nodiscard]] static Result<TierRecord> from_json(const nlohmann::json& j);
};

class TierStore {
public:
    explicit TierStore(const StateDir& dir) : m_dir(dir) {}

    // Replace the record of `record.policy` durably (mode 0600).
    [[nodiscard]] Status write(const TierRecord& record) const;
    // The policy's record; nullopt when it never ran; CORRUPT when the file is not a record.
    [[nodiscard]] Result<std::optional<TierRecord>> read(const std::string& policy) const;
    [[nodiscard]] std::string path_of(const std::string& policy) const;

private:
    StateDir m_dir;
};

}  // namespace archctl::state
