#include "tests/unit/runs/tier_fixture.hpp"

#include <memory>

#include "lib/jobs/transfer/target_room.hpp"
#include "lib/node/wire/ops.hpp"
#include "lib/session/node_session.hpp"

namespace archctl::test {

using nlohmann::json;

// --- ScriptedJobs ---

runs::JobOpening ScriptedJobs::created(const std::string& job_id) {
    runs::JobOpening o;
    o.kind = runs::JobOpening::Kind::created;
    o.job_id = job_id;
    o.short_id = job_id;
    o.name = job_id;
    return o;
}

runs::JobOpening ScriptedJobs::refused(Error why) {
    runs::JobOpening o;
    o.kind = runs::JobOpening::Kind::refused;
    o.refusal = std::move(why);
    return o;
}

runs::JobOpening ScriptedJobs::nothing_to_do() {
    runs::JobOpening o;
    o.kind = runs::JobOpening::Kind::nothing_to_do;
    return o;
}

Result<runs::JobOpening> ScriptedJobs::open_archive(const std::string& res, const std::string&, const std::string& node, bool) {
    calls.push_back("archive " + res + " " + node);
    auto it = archive_on.find(node);
    if (it != archive_on.end() && it->second) return it->second(res);
    return created("archive-" + res + "-" + node);
}

Result<runs::JobOpening> ScriptedJobs::open_evict(const std::string& res, const std::string&) {
    calls.push_back("evict " + res);
    if (evict_answer) return evict_answer(res);
    return created("evict-" + res);
}

// --- TierFixture ---

namespace {

// `node`'s `info` answers `free` (read when asked) of `total` for every directory probed.
void answer_space(FakeNode& node, const std::uint64_t& free, const std::uint64_t& total) {
    node.ops.handlers["info"] = [&free, &total](const json& args) -> Result<json> {
        auto request = args.get<node::InfoRequest>();
        node::InfoResult r;
        for (const auto& dir : request.probe_dirs) {
            node::DirectoryInfo d;
            d.root.path = dir;
            d.free_bytes = free;
            d.total_bytes = total;
            r.probes.push_back(d);
        }
        return json(r);
    };
}

config::TierPolicy box_policy() {
    config::TierPolicy p;
    p.name = "box";
    p.cache = "seedbox";
    p.archive = {"nas", "nas2"};
    p.keep_free = 1000;
    p.archive_when.larger_than = 1;
    p.order = config::TierOrder::largest;
    p.evict = config::TierEvict::to_goal;
    return p;
}

}  // namespace

TierFixture::TierFixture() : policy(config.tiers["box"] = box_policy()) {
    config::NodeConfig n2 = config.nodes["nas"];
    n2.name = "nas2";
    n2.qb_root = "/tank2";
    n2.sync_root = "/tank2/sync";
    config.nodes["nas2"] = n2;
    nodes.add(std::make_unique<session::NodeSession>(config.nodes["nas2"], clients::Tuning{},
                                                     session::NodeSession::Injected{&nas2.qb, &nas2.st, &nas2.ops}));
    config.min_free = 0;  // the archive nodes' floor (transfer.min_free); a test sets one
    // The cache's and the archive nodes' filesystems, as their nodes measure them.
    answer_space(seedbox, free, total);
    answer_space(nas, nas_free, total);
    answer_space(nas2, nas2_free, total);
}

void TierFixture::candidate(const std::string& id, std::int64_t size) {
    clients::qbittorrent::TorrentInfo t;
    t.id = id;
    t.infohash_v1 = id;
    t.name = "T-" + id;
    t.size = t.total_size = size;
    t.progress = 1;
    t.amount_left = 0;
    t.state = "stalledUP";
    t.save_path = "/srv/cache/t";
    seedbox.qb.put(t);
    sizes[id] = size;
}

jobs::RunResult TierFixture::stopped(jobs::StopReason reason, const std::string& text) {
    jobs::RunResult r;
    r.outcome = jobs::RunOutcome::stopped;
    r.stop_reason = reason;
    r.stop_text = text;
    r.step = "sync";
    return r;
}

jobs::RunResult TierFixture::failed(Error error) {
    jobs::RunResult r;
    r.outcome = jobs::RunOutcome::failed;
    r.error = std::move(error);
    return r;
}

jobs::RunResult TierFixture::no_room(const std::string& node) {
    jobs::TargetBlocked b{node, "2026-12-01T03:00:00Z", 1, "destination free space on '" + node + "' fell below the floor"};
    jobs::RunResult r = stopped(jobs::StopReason::disk, b.reason + "; " + jobs::transfer::waiting_text(b));
    r.detail = {{"target_blocked", b.to_json()}};
    return r;
}

jobs::RunResult TierFixture::released(const std::string& node) {
    jobs::TargetBlocked b{node, "2026-12-01T03:00:00Z", 3, "destination free space on '" + node + "' fell below the floor"};
    jobs::RunResult r = failed(Error(ErrorCode::DISK_INSUFFICIENT, "job released: '" + node + "' has not taken it"));
    r.detail = {{"released", b.to_json()}};
    r.ended = "cancelled";
    return r;
}

// The fixture's own job runs on the real driver; the scripted ones answer from `results`.
runs::RunJob TierFixture::runner() {
    return [this](const std::string& id, const jobs::Budgets& budgets) -> jobs::RunResult {
        driven.push_back(id);
        if (id == job_id) return run(budgets);
        jobs::RunResult r;
        if (auto it = results.find(id); it != results.end()) r = it->second;
        r.job_id = id;
        const std::string evict_prefix = "evict-";
        if (r.outcome == jobs::RunOutcome::done && id.rfind(evict_prefix, 0) == 0) {
            seedbox.qb.torrent_list.erase(std::remove_if(seedbox.qb.torrent_list.begin(), seedbox.qb.torrent_list.end(),
                                                         [&](const fakes::FakeQb::Torrent& t) { return t.info.id == id.substr(evict_prefix.size()); }),
                                          seedbox.qb.torrent_list.end());
            free += static_cast<std::uint64_t>(sizes[id.substr(evict_prefix.size())]);
        }
        return r;
    };
}

runs::TierRun TierFixture::run_policy(const jobs::Budgets& budgets) {
    jobs::JobIo io;
    io.log = [this](const std::string& line) { log.push_back(line); };
    io.clock = &clock;
    io.test = test;
    jobs::Driver driver(config, state, nodes, io);
    many.emplace(runner(), clock, budgets, clock.steady());
    runs::TierEnv env{config, state, nodes, driver, planner, clock, [this](const std::string& line) { said.push_back(line); }, {}};
    return runs::run_tier_policy(env, *many, policy);
}

std::string TierFixture::said_text() const {
    std::string out;
    for (const auto& l : said) out += l + "\n";
    return out;
}

}  // namespace archctl::test
