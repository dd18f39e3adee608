#pragma once
// Jobs driven end to end against the recording fakes (tests/support/fakes.hpp): a scratch state
// directory, two configured nodes — "seedbox" (cache) and "nas" (archive) — each with a FakeQb,
// a FakeSyncthing and a FakeTransport injected into jobs::Nodes, a ManualClock, and
// jobs::Driver::run over them. No service, no node process, no sleeping.
//
//   TransferFixture f;                        // archive seedbox → nas, a new target, 2 files
//   f.before(f.seedbox.ops, "stage", [&] { f.seedbox.qb.torrent_list.clear(); });
//   auto r = f.run();
//   CHECK(r.error.code == "STALE_STATE");
//   CHECK(f.ledger()["state"] == "failed");
//
//   EvictFixture e;                           // evict seedbox, proven by nas
//   auto r = e.run();
//
// Each node's FakeTransport answers the operations a step asks for with what the real operation
// would answer (lib/node/wire/ops.hpp); a test changes a handler, or runs something just before one
// (before()), to put the world into the state it needs.

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/config/config.hpp"
#include "lib/jobs/core/driver.hpp"
#include "lib/jobs/evict/job.hpp"
#include "lib/jobs/transfer/job.hpp"
#include "lib/state/job_store.hpp"
#include "lib/state/state_dir.hpp"
#include "tests/support/fakes.hpp"
#include "tests/support/scratch.hpp"

namespace archctl::test {

// A node's configuration for tests on the fakes: roots /q and /s, URLs never dialled.
config::NodeConfig canned_node(const std::string& name, config::Role role);

// What one node answers with.
struct FakeNode {
    explicit FakeNode(const std::string& name) : ops(name) {}
    fakes::FakeQb qb;
    fakes::FakeSyncthing st;
    fakes::FakeTransport ops;
};

class JobFixture {
public:
    JobFixture();
    JobFixture(const JobFixture&) = delete;
    JobFixture& operator=(const JobFixture&) = delete;
    virtual ~JobFixture() = default;

    // Drive the fixture's job once, with a fresh Driver over the same fakes and clock (a rerun
    // is another call).
    jobs::RunResult run(const jobs::Budgets& budgets = {});
    // `archctl job cancel` of the fixture's job, with a fresh Driver.
    jobs::RunResult cancel();

    // The job's records as the state directory holds them now.
    [[nodiscard]] nlohmann::json ledger() const;
    [[nodiscard]] std::vector<nlohmann::json> events() const;
    [[nodiscard]] std::vector<std::string> event_types() const;
    [[nodiscard]] std::vector<nlohmann::json> events_of(const std::string& type) const;
    [[nodiscard]] std::string job_dir() const;
    // The job holding `alias`, or "" when none does.
    [[nodiscard]] std::string holder(const std::string& alias) const;
    // The log lines the run wrote, joined.
    [[nodiscard]] std::string log_text() const;

    // Run `fn` right before every call of `op` on `node`, then answer as before.
    static void before(fakes::FakeTransport& node, const std::string& op, std::function<void()> fn);

    Scratch scratch;
    config::Config config;
    state::StateDir state;
    fakes::ManualClock clock;
    FakeNode seedbox{"seedbox"};
    FakeNode nas{"nas"};
    jobs::Nodes nodes;
    jobs::TestSwitches test;
    std::vector<std::string> log;
    std::string job_id = "20261201-183412-7f3c";
    torrent::Identity identity;
    std::string qb_id;
    std::vector<std::string> aliases;

private:
    jobs::RunResult with_driver(const std::function<jobs::RunResult(jobs::Driver&)>& fn);
};

// An archive job seedbox → nas onto a new target (nas does not have the torrent): files
// show/a.bin (10 bytes) and show/b.bin (20 bytes), both selected and complete on the source,
// no part file. With the default answers it runs to done.
class TransferFixture : public JobFixture {
public:
    TransferFixture();

    // The job's node paths.
    static constexpr const char* k_source_save = "/srv/cache/t";
    static constexpr const char* k_target_save = "/tank/t";

    jobs::transfer::JobDefinition def;
    // The states the target's recheck goes through, and its files after it (what check_verified
    // reads). The nas qBittorrent adds the torrent with these (see add_on_target).
    std::vector<fakes::QbState> recheck = {{"checkingUP", 0.5}, {"pausedUP", 1.0}};
    std::vector<clients::qbittorrent::TorrentFile> rechecked_files;
    // Runs after the nas qBittorrent listed the added torrent (a hook for a change during verify).
    std::function<void()> after_add;

    // The source torrent's files (change one to change the source's selection or completion).
    std::vector<clients::qbittorrent::TorrentFile>& source_files();
    // The `referenced` list of each unmerge request the target received.
    [[nodiscard]] std::vector<std::vector<std::string>> unmerge_referenced() const;
    // The placement generation committed for the resource on nas (0: none).
    [[nodiscard]] std::uint64_t committed_generation() const;

private:
    void create_job();
    void answer_stage_and_sync();
    void answer_merge_and_unmerge();
    void answer_verify_and_cleanup();
};

// An evict job of the cache placement on seedbox (save path /srv/cache/t, files show/a.bin and
// show/b.bin), proven by the archive placement on nas (/tank/t) whose stamps archctl recorded at
// its commit. With the default answers it runs to done and unlinks both files.
class EvictFixture : public JobFixture {
public:
    EvictFixture();

    static constexpr const char* k_cache_save = "/srv/cache/t";
    static constexpr const char* k_archive_save = "/tank/t";

    jobs::evict::EvictDefinition def;
    // What nas's disk shows for each file below /tank/t (path → stamp); change one to make the
    // proof drift.
    std::map<std::string, plan::FileStamp> archive_disk;
    // Cache paths unlink_owned removed so far (the cache's tree then reports them absent).
    std::set<std::string> unlinked;

private:
    void create_job();
    void answer_disks();
};

// `f`'s target (nas) receives nothing of the job, and its filesystem has free() bytes, read each
// time the node is asked (a test may change it between runs).
void target_without_room(TransferFixture& f, std::function<std::uint64_t()> free);

// Runs `body` in a forked child and returns the JSON it returned: for a test that must request a
// stop (a SIGINT), which cannot be undone in this process. The child's state directory writes are
// seen by the parent; its fakes' call logs are not (return what the test needs from them).
[[nodiscard]] nlohmann::json in_child(const std::function<nlohmann::json()>& body);

}  // namespace archctl::test
