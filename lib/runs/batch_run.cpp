// The batch's run: unfinished jobs first, then the new ones, each created just before it runs
// (re-planned when its plan grew old), all under run_many's shared budgets and stop rule.
#include <fmt/format.h>

#include "lib/runs/batch.hpp"

namespace archctl::runs {

std::string stop_text_of(const JobRun& turn) {
    if (turn.outcome == JobOutcome::stopped) return turn.result.stop_text;
    if (turn.outcome == JobOutcome::locked) return turn.result.error.message;
    return {};
}

namespace {

// Before the run: what each item's plan already settled.
void settle_planned(std::vector<BatchItem>& items) {
    for (auto& it : items) {
        switch (it.action) {
            case Action::nothing_to_do: it.outcome = ItemOutcome::nothing_to_do; break;
            case Action::refused:
            case Action::skipped: it.outcome = ItemOutcome::failed; break;
            case Action::stopped: it.outcome = ItemOutcome::stopped; break;
            case Action::new_job:
            case Action::continue_job: it.outcome = ItemOutcome::not_run; break;
        }
    }
}

// Unfinished jobs first (partial before new), then the new ones in order.
std::vector<BatchItem*> run_order(std::vector<BatchItem>& items) {
    std::vector<BatchItem*> order;
    for (auto& it : items)
        if (it.action == Action::continue_job) order.push_back(&it);
    for (auto& it : items)
        if (it.action == Action::new_job) order.push_back(&it);
    return order;
}

ItemOutcome outcome_of(const JobRun& turn) {
    switch (turn.outcome) {
        case JobOutcome::done: return ItemOutcome::done;
        case JobOutcome::stopped:
        case JobOutcome::locked: return ItemOutcome::stopped;
        case JobOutcome::failed: return ItemOutcome::failed;
    }
    return ItemOutcome::failed;
}

// One run of a batch: turns each item of the order into the job to drive, and records how
// its turn ended.
class Runner {
public:
    Runner(Planned& planned, BatchTools tools, const BatchRunOptions& options, const OnBatchEvent& on_event)
        : m_planned(planned), m_tools(std::move(tools)), m_options(options), m_on_event(on_event), m_order(run_order(planned.items)) {}

    BatchRun run() {
        ManyRun many(m_tools.run, m_tools.clock, m_options.budgets, m_options.started);
        BatchRun out;
        out.summary = run_many(
            many, m_order.size(), [&](std::size_t i) { return job_of(i); },
            [&](const JobRun& turn) {
                BatchItem& it = *m_order[m_turn];
                it.result = turn.result;
                it.outcome = outcome_of(turn);
                if (it.outcome == ItemOutcome::stopped) out.stop_text = stop_text_of(turn);
                say(BatchStep::ran, turn.id, &turn);
            });
        if (out.summary.ended) out.stop_text = out.summary.ended->text;
        return out;
    }

private:
    // The job item `i` runs, or nullopt when the item is settled without one.
    std::optional<std::string> job_of(std::size_t i) {
        m_turn = i;
        BatchItem& it = *m_order[i];
        if (it.existing_job) {
            say(BatchStep::continuing, *it.existing_job);
        } else if (m_tools.clock.steady() - it.prepared_at > k_replan_after && !replan(it)) {
            return std::nullopt;
        }
        if (it.existing_job) return *it.existing_job;
        auto created = m_tools.planner.create(it);
        if (!created.ok()) {
            it.outcome = ItemOutcome::failed;
            it.error = created.take_error();
            say(BatchStep::not_created);
            return std::nullopt;
        }
        say(BatchStep::created, created.value());
        return created.value();
    }

    // A plan made minutes ago (earlier jobs of the batch ran since) is made again from live
    // state; one that changed runs only with `yes`, never on a token for the old one. False when
    // the item is settled without a job.
    bool replan(BatchItem& it) {
        const std::string planned_digest = it.digest;
        jobs::transfer::PlanSnapshot fresh(m_tools.nodes);
        prepare_item(m_tools.planner, m_tools.clock, m_planned.source, PlanMode::for_run, fresh, it);
        if (it.action != Action::new_job && it.action != Action::continue_job) {
            it.outcome = it.action == Action::nothing_to_do ? ItemOutcome::nothing_to_do
                         : it.action == Action::stopped     ? ItemOutcome::stopped
                                                            : ItemOutcome::failed;
            say(BatchStep::settled);
            return false;
        }
        if (it.digest != planned_digest && !m_options.yes) {
            it.outcome = ItemOutcome::failed;
            it.action = Action::refused;
            it.error = Error(ErrorCode::TOKEN_MISMATCH, fmt::format("the plan of '{}' changed since it was confirmed", it.short_id),
                             "plan the batch again");
            it.reason = it.error->message;
            say(BatchStep::changed);
            return false;
        }
        return true;
    }

    void say(BatchStep step, std::string job_id = {}, const JobRun* turn = nullptr) {
        if (m_on_event) m_on_event(BatchEvent{step, m_turn + 1, m_order.size(), *m_order[m_turn], std::move(job_id), turn});
    }

    Planned& m_planned;
    BatchTools m_tools;
    const BatchRunOptions& m_options;
    const OnBatchEvent& m_on_event;
    std::vector<BatchItem*> m_order;
    std::size_t m_turn = 0;
};

}  // namespace

BatchRun run_batch(Planned& planned, BatchTools tools, const BatchRunOptions& options, const OnBatchEvent& on_event) {
    settle_planned(planned.items);
    return Runner(planned, std::move(tools), options, on_event).run();
}

}  // namespace archctl::runs
