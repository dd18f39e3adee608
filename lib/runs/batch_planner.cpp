// LivePlanner: each resource of a batch planned and created by its kind's own planner, exactly
// as its single-resource command would.
#include <fmt/format.h>

#include "lib/routes/routes.hpp"
#include "lib/runs/batch.hpp"

namespace archctl::runs {

LivePlanner::LivePlanner(jobs::transfer::TransferPlanner& transfers, jobs::evict::Evictor& evictor, const BatchSpec& spec)
    : m_transfers(transfers), m_evictor(evictor), m_spec(spec) {}

void LivePlanner::prepare(BatchItem& it, const std::string& source, PlanMode mode, jobs::transfer::PlanSnapshot& snapshot) {
    if (m_spec.op == BatchOp::evict) return prepare_evict(it, source);
    prepare_transfer(it, source, mode, snapshot);
}

namespace {

void refuse(BatchItem& it, Error e, Action action = Action::refused) {
    it.action = action;
    it.reason = e.message;
    it.error = std::move(e);
}

}  // namespace

void LivePlanner::prepare_evict(BatchItem& it, const std::string& source) {
    auto p = m_evictor.prepare({it.res, source, m_spec.verify_archive});
    if (!p.ok()) return refuse(it, p.take_error());
    it.id = p->resource.identity.qb_id();
    it.short_id = p->resource.short_id();
    it.name = p->resource.name;
    it.files = p->owned.size();
    it.bytes = p->coverage.required_bytes;
    it.digest = p->coverage.digest;
    if (p->existing_job) {
        it.action = Action::continue_job;
        it.existing_job = p->existing_job;
    } else if (p->nothing_to_do) {
        it.action = Action::nothing_to_do;
        it.reason = fmt::format("'{}' holds no placement of it", p->cache.empty() ? source : p->cache);
    } else if (!p->coverage.complete()) {
        refuse(it, jobs::evict::incomplete_error(p.value()));
    } else {
        it.action = Action::new_job;
    }
    it.evict = std::move(p.value());
}

void LivePlanner::prepare_transfer(BatchItem& it, const std::string& source, PlanMode mode, jobs::transfer::PlanSnapshot& snapshot) {
    jobs::transfer::TransferRequest t;
    t.op = m_spec.op == BatchOp::archive ? plan::Operation::archive : plan::Operation::unarchive;
    t.res = it.res;
    t.from = source;
    t.to = m_spec.to;
    t.verify_transit = m_spec.verify_transit;
    t.route_mode = mode == PlanMode::read_only ? jobs::transfer::TransferRequest::RouteMode::look_up : jobs::transfer::TransferRequest::RouteMode::ensure;
    t.no_wait = m_spec.no_wait;
    t.settle_held = true;
    auto p = m_transfers.prepare(t, snapshot);
    if (!p.ok()) {
        bool clean = routes::is_clean_stop(p.error());
        return refuse(it, p.take_error(), clean ? Action::stopped : Action::refused);
    }
    it.id = p->resource.identity.qb_id();
    it.short_id = p->resource.short_id();
    it.name = p->resource.name;
    it.files = p->plan.delta.count();
    it.bytes = static_cast<std::uint64_t>(p->plan.delta_bytes);
    it.digest = p->plan.digest;
    if (p->existing_job) {
        it.action = Action::continue_job;
        it.existing_job = p->existing_job;
    } else if (p->held || p->plan.empty_delta()) {
        it.action = Action::nothing_to_do;
        it.reason = fmt::format("'{}' already holds it", p->target);
    } else if (auto refused = p->refusal()) {
        refuse(it, *refused);
    } else {
        it.action = Action::new_job;
    }
    it.transfer = std::move(p.value());
}

Result<std::string> LivePlanner::create(const BatchItem& it) {
    if (it.evict) return m_evictor.create(*it.evict);
    if (it.transfer) return m_transfers.create(*it.transfer);
    return Error(ErrorCode::INTERNAL, fmt::format("'{}' has no plan to create a job from", it.short_id));
}

}  // namespace archctl::runs
