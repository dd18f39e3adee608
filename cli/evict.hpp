#pragma once
// What evict shares with plan, resume and job: the evictor set-up, `plan evict`, and rendering
// an evict run as an Outcome.

#include <memory>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/transfer_common.hpp"
#include "lib/evict/evict.hpp"
#include "lib/jobs/summary.hpp"
#include "lib/state/job_store.hpp"

namespace archctl::cli {

// Evict jobs live in the job store with their own ledger shape: put their rows (state, progress,
// whether a live process holds them) into `rows` from lib/evict, replacing any row the transfer
// summary made for them, sorted by id. Used by `job list` and `status`.
void add_evict_rows(const state::JobStore& store, std::vector<jobs::JobSummary>& rows);

// An Evictor on the nodes, state and log of an engine set-up (setup_engine).
std::unique_ptr<evict::Evictor> make_evictor(Context& ctx, EngineSetup& setup);

struct EvictOptions {
    std::string res;
    std::string from;
    bool verify_archive = false;
    bool yes = false;
    std::string confirm;
};

// `archctl plan evict RES --from CACHE`: the coverage table and a token, or the refusal (exit 1).
Outcome run_plan_evict(Context& ctx, const EvictOptions& o);
// An evict run as an Outcome: done 0, stopped 10, failed/refused 1.
Outcome evict_outcome(Context& ctx, const evict::EvictResult& r, nlohmann::json result);

}  // namespace archctl::cli
