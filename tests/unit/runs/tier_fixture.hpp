#pragma once
// A tier policy's run over the recording fakes (tests/unit/jobs/job_fixture.hpp): the
// TransferFixture's cache "seedbox" and archive "nas" — with its unfinished archive job of the
// torrent "show", which the run continues first with a real jobs::Driver — plus a second archive
// node "nas2", and the policy "box" (cache seedbox, archive nas then nas2, keep_free, largest
// first, evict to_goal). The cache's free space is what its `info` operation answers (`free`);
// the candidates' jobs come from ScriptedJobs and their runs from `results` (done unless a test
// says otherwise; a done eviction frees its candidate's size). No service, no sleeping.
//
//   TierFixture f;
//   f.candidate("aa", 500);
//   f.results["archive-aa-nas"] = TierFixture::stopped(jobs::StopReason::waiting, "unreachable");
//   runs::TierRun run = f.run_policy();
//   CHECK(f.planner.calls == std::vector<std::string>{"archive aa nas"});

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/runs/run_many.hpp"
#include "lib/runs/tier_jobs.hpp"
#include "lib/runs/tier_run.hpp"
#include "tests/unit/jobs/job_fixture.hpp"

namespace archctl::test {

// Planners that answer from a script and record what they were asked.
class ScriptedJobs final : public runs::TierJobs {
public:
    using Answer = std::function<Result<runs::JobOpening>(const std::string& res)>;

    // node → the answer to archiving there; a node without one makes "archive-<res>-<node>".
    std::map<std::string, Answer> archive_on;
    // The answer to evicting; without one, "evict-<res>".
    Answer evict_answer;
    // "archive RES NODE" and "evict RES", in order.
    std::vector<std::string> calls;

    Result<runs::JobOpening> open_archive(const std::string& res, const std::string& cache, const std::string& node, bool no_wait) override;
    Result<runs::JobOpening> open_evict(const std::string& res, const std::string& cache) override;

    // Answers.
    [[nodiscard]] static runs::JobOpening created(const std::string& job_id);
    [[nodiscard]] static runs::JobOpening refused(Error why);
    [[nodiscard]] static runs::JobOpening nothing_to_do();
};

class TierFixture : public TransferFixture {
public:
    TierFixture();

    // A complete torrent of `size` bytes on the cache (the policy chooses every torrent larger
    // than 1 byte).
    void candidate(const std::string& id, std::int64_t size);
    // Run the policy once, under `budgets`, with a fresh driver; the run's ManyRun is `many`.
    runs::TierRun run_policy(const jobs::Budgets& budgets = {});

    // What a job's run answers.
    [[nodiscard]] static jobs::RunResult stopped(jobs::StopReason reason, const std::string& text);
    [[nodiscard]] static jobs::RunResult failed(Error error);
    // A transfer's run whose target `node` cannot take it (a 'disk' stop at its floor), and the
    // run that undid and released the job past the bound (jobs/transfer/target_room.hpp).
    [[nodiscard]] static jobs::RunResult no_room(const std::string& node);
    [[nodiscard]] static jobs::RunResult released(const std::string& node);

    FakeNode nas2{"nas2"};
    config::TierPolicy& policy;
    std::uint64_t free = 100, total = 10000;  // the cache's filesystem, as `info` answers it
    // Each archive node's filesystem, as its `info` answers it: room for every candidate.
    std::uint64_t nas_free = 1'000'000, nas2_free = 1'000'000;
    ScriptedJobs planner;
    std::map<std::string, jobs::RunResult> results;  // job id → its run's result (default: done)
    std::map<std::string, std::int64_t> sizes;       // candidate → its size
    std::vector<std::string> driven;                 // job ids, in the order they were driven
    std::vector<std::string> said;                   // the run's lines for the person
    std::optional<runs::ManyRun> many;

    [[nodiscard]] std::string said_text() const;

private:
    [[nodiscard]] runs::RunJob runner();
};

}  // namespace archctl::test
