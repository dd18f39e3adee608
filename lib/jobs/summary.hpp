#pragma once
// Job summaries for `status` and `job list`: one row per job with its progress in the user's
// words, e.g. "archiving: 61% (13.2 GiB/21.5 GiB, 3/6 files)".

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/jobs/job.hpp"
#include "lib/state/job_store.hpp"

namespace archctl::jobs {

struct JobSummary {
    std::string id;
    nlohmann::json definition;
    Ledger ledger;
    bool running = false;         // a live process holds its lock
    std::string status;           // the progress text
    bool needs_attention = false; // failed with something left to do, or cleanup required

    bool finished() const;
    nlohmann::json to_json() const;
};

[[nodiscard]] Result<std::vector<JobSummary>> summarize_jobs(const state::JobStore& store);
std::string progress_text(const nlohmann::json& definition, const Ledger& ledger);

}  // namespace archctl::jobs
