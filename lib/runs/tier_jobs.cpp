#include "lib/runs/tier_jobs.hpp"

#include <fmt/format.h>

namespace archctl::runs {

namespace {

JobOpening opening(JobOpening::Kind kind, const jobs::evidence::Resource& resource, std::string job_id = {}) {
    JobOpening o;
    o.kind = kind;
    o.job_id = std::move(job_id);
    o.short_id = resource.short_id();
    o.name = resource.name;
    return o;
}

}  // namespace

Result<JobOpening> PlannerJobs::open_archive(const std::string& res, const std::string& cache, const std::string& node, bool no_wait) {
    jobs::transfer::TransferRequest t;
    t.op = plan::Operation::archive;
    t.res = res;
    t.from = cache;
    t.to = node;
    t.no_wait = no_wait;
    ARCHCTL_TRY_ASSIGN(jobs::transfer::Prepared prepared, m_transfers.prepare(t));
    if (prepared.existing_job) return opening(JobOpening::Kind::existing, prepared.resource, *prepared.existing_job);
    if (prepared.plan.empty_delta()) return opening(JobOpening::Kind::nothing_to_do, prepared.resource);
    if (auto refused = prepared.refusal()) {
        JobOpening o = opening(JobOpening::Kind::refused, prepared.resource);
        o.refusal = *refused;
        return o;
    }
    ARCHCTL_TRY_ASSIGN(std::string job, m_transfers.create(prepared));
    return opening(JobOpening::Kind::created, prepared.resource, std::move(job));
}

Result<JobOpening> PlannerJobs::open_evict(const std::string& res, const std::string& cache) {
    ARCHCTL_TRY_ASSIGN(jobs::evict::EvictPrepared prepared, m_evictor.prepare({res, cache, jobs::evict::VerifyArchive::no}));
    if (prepared.existing_job) return opening(JobOpening::Kind::existing, prepared.resource, *prepared.existing_job);
    if (prepared.nothing_to_do) return opening(JobOpening::Kind::nothing_to_do, prepared.resource);
    if (!prepared.coverage.complete()) {
        JobOpening o = opening(JobOpening::Kind::refused, prepared.resource);
        o.refusal = jobs::evict::incomplete_error(prepared);
        return o;
    }
    ARCHCTL_TRY_ASSIGN(std::string job, m_evictor.create(prepared));
    return opening(JobOpening::Kind::created, prepared.resource, std::move(job));
}

}  // namespace archctl::runs
