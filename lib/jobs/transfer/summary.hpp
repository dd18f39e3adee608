#pragma once
// The transfer kind's job rows for `status` and `job list` (the row itself, whatever the kind, is
// lib/jobs/core/job_row.hpp): its progress in the user's words, e.g. "archiving: 61% (13.2 GiB/
// 21.5 GiB, 3/6 files)".

#include <string>

#include <nlohmann/json.hpp>

#include "lib/jobs/core/job_row.hpp"
#include "lib/jobs/transfer/job.hpp"
#include "lib/state/job_store.hpp"

namespace archctl::jobs::transfer {

// The row of one archive/unarchive job (the transfer kind's summary; every kind's rows come from
// jobs::summarize_jobs in driver.hpp).
[[nodiscard]] JobSummary summarize_transfer(const state::JobStore& store, const std::string& id, nlohmann::json definition);
// "archiving: 61% (…)", "done", "failed: <message> (compensation kept 3 files used by other
// torrents)".
std::string progress_text(const nlohmann::json& definition, const Ledger& ledger);

}  // namespace archctl::jobs::transfer
