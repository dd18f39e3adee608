#pragma once
// What a tier run asks of the job planners: the job that archives a candidate to one archive
// node, or evicts it from the cache (docs/design.md "Many resources and tier policies"). Behind
// one small interface, so the run's decisions — the order, the fallback to the next archive
// node, the goal — are tested without planning real jobs; PlannerJobs is the one a command uses
// (jobs::transfer::TransferPlanner for archive, jobs::evict::Evictor for evict).
//
// Opening a job never drives it: the run drives what it is given (tier_run.hpp).

#include <string>

#include "lib/base/result.hpp"
#include "lib/jobs/evict/evictor.hpp"
#include "lib/jobs/transfer/planner.hpp"

namespace archctl::runs {

// What a planner answered for one candidate.
struct JobOpening {
    enum class Kind {
        created,        // a new job, to drive
        existing,       // the unfinished job of the same command, to drive
        nothing_to_do,  // archive: the node already holds it; evict: the cache no longer does
        refused,        // archive: the node cannot take it now; evict: its copies are not proven
    };
    Kind kind = Kind::created;
    std::string job_id;          // created, existing
    std::string short_id, name;  // the resource, for the lines the run says
    Error refusal;               // refused: why (its message's first line says it in short)
};

class TierJobs {
public:
    virtual ~TierJobs() = default;
    // The job that archives `res` from `cache` to archive node `node`. An error when planning or
    // creating it failed; a route that is not ready in time is a clean stop among them
    // (routes::is_clean_stop).
    [[nodiscard]] virtual Result<JobOpening> open_archive(const std::string& res, const std::string& cache, const std::string& node,
                                                          bool no_wait) = 0;
    // The job that evicts `res` from `cache`, only with live proof of its archive copies
    // (refused with the coverage's refusal otherwise). An error when planning or creating it
    // failed.
    [[nodiscard]] virtual Result<JobOpening> open_evict(const std::string& res, const std::string& cache) = 0;
};

// The command's planners.
class PlannerJobs final : public TierJobs {
public:
    PlannerJobs(jobs::transfer::TransferPlanner& transfers, jobs::evict::Evictor& evictor) : m_transfers(transfers), m_evictor(evictor) {}

    Result<JobOpening> open_archive(const std::string& res, const std::string& cache, const std::string& node, bool no_wait) override;
    Result<JobOpening> open_evict(const std::string& res, const std::string& cache) override;

private:
    jobs::transfer::TransferPlanner& m_transfers;
    jobs::evict::Evictor& m_evictor;
};

}  // namespace archctl::runs
