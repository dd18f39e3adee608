#include "tests/unit/jobs/job_fixture.hpp"

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <memory>

#include "lib/jobs/evidence/archive_evidence.hpp"
#include "lib/jobs/evidence/resolve.hpp"
#include "lib/node/wire/job_layout.hpp"
#include "lib/node/wire/ops.hpp"
#include "lib/session/node_session.hpp"
#include "lib/state/placements.hpp"
#include "lib/state/reservations.hpp"
#include "lib/torrent/sha.hpp"

namespace archctl::test {

namespace qb = clients::qbittorrent;
using nlohmann::json;

namespace {

state::StateDir open_state(const Scratch& scratch) { return state::StateDir::open((scratch / "state").string()).value(); }

config::NodeConfig node_config(const std::string& name, config::Role role, const std::string& qb_root, const std::string& sync_root) {
    config::NodeConfig c;
    c.name = name;
    c.role = role;
    c.qb_root = qb_root;
    c.sync_root = sync_root;
    return c;
}

qb::TorrentInfo torrent_info(const torrent::Identity& id, const std::string& save_path, const std::string& state, double progress) {
    qb::TorrentInfo i;
    i.id = id.qb_id();
    i.infohash_v1 = id.v1_hex();
    i.infohash_v2 = id.v2_hex();
    i.name = "show";
    i.save_path = save_path;
    i.state = state;
    i.progress = progress;
    return i;
}

const std::vector<qb::TorrentFile> k_files = {fakes::qb_file(0, "show/a.bin", 10), fakes::qb_file(1, "show/b.bin", 20)};

// The info dictionary of the fixture's torrent (v1, "show" with k_files, one 16 KiB piece): its
// SHA-1 is the fixture identity's v1 hash, so the exported metainfo is the job's resource.
const std::string k_info = "d5:filesld6:lengthi10e4:pathl5:a.bineed6:lengthi20e4:pathl5:b.bineee4:name4:show"
                           "12:piece lengthi16384e6:pieces20:" + std::string(20, 'x') + "e";

// A stat as a node's tree answers it.
json file_entry(const std::string& path, const plan::FileStamp& s) {
    node::TreeEntry e;
    e.path = path;
    e.type = node::EntryType::file;
    e.stat = node::EntryStat{.size = s.size, .dev = s.dev, .ino = s.ino, .nlink = 1, .mtime_ns = s.mtime_ns, .mode = 0644};
    return e;
}

json absent_entry(const std::string& path) {
    node::TreeEntry e;
    e.path = path;
    e.type = node::EntryType::absent;
    return e;
}

}  // namespace

config::NodeConfig canned_node(const std::string& name, config::Role role) {
    config::NodeConfig n = node_config(name, role, "/q", "/s");
    n.qbittorrent.url = "http://127.0.0.1:1";  // never dialled: the fakes answer
    n.syncthing.url = "http://127.0.0.1:2";
    return n;
}

// --- JobFixture ---

JobFixture::JobFixture() : state(open_state(scratch)) {
    config.state_dir = state.root();
    config.nodes["seedbox"] = node_config("seedbox", config::Role::cache, "/srv/cache", "/srv/sync");
    config.nodes["nas"] = node_config("nas", config::Role::archive, "/tank", "/tank/sync");
    nodes.add(std::make_unique<session::NodeSession>(config.nodes["seedbox"], clients::Tuning{},
                                                     session::NodeSession::Injected{&seedbox.qb, &seedbox.st, &seedbox.ops}));
    nodes.add(std::make_unique<session::NodeSession>(config.nodes["nas"], clients::Tuning{},
                                                     session::NodeSession::Injected{&nas.qb, &nas.st, &nas.ops}));
    identity = torrent::Identity::from_qb(torrent::to_hex(torrent::sha1(k_info)),
                                          "1838bf9a70c10000000000000000000000000000000000000000000000000000")
                   .value();
    qb_id = identity.qb_id();
    aliases = {identity.v1_hex(), identity.v2_hex()};
}

jobs::RunResult JobFixture::run(const jobs::Budgets& budgets) { return with_driver([&](jobs::Driver& d) { return d.run(job_id, budgets); }); }

jobs::RunResult JobFixture::cancel() { return with_driver([&](jobs::Driver& d) { return d.cancel(job_id); }); }

jobs::RunResult JobFixture::with_driver(const std::function<jobs::RunResult(jobs::Driver&)>& fn) {
    jobs::JobIo io;
    io.log = [this](const std::string& line) { log.push_back(line); };
    io.clock = &clock;
    io.test = test;
    jobs::Driver driver(config, state, nodes, io);
    return fn(driver);
}

json JobFixture::ledger() const {
    auto l = state::JobStore(state).ledger(job_id);
    return l.ok() ? l.value() : json();
}

std::vector<json> JobFixture::events() const {
    auto e = state::JobStore(state).events(job_id);
    return e.ok() ? e.value().records : std::vector<json>{};
}

std::vector<std::string> JobFixture::event_types() const {
    std::vector<std::string> out;
    for (const auto& e : events()) out.push_back(e.value("type", ""));
    return out;
}

std::vector<json> JobFixture::events_of(const std::string& type) const {
    std::vector<json> out;
    for (const auto& e : events())
        if (e.value("type", "") == type) out.push_back(e);
    return out;
}

std::string JobFixture::job_dir() const { return state::JobStore(state).dir_of(job_id); }

std::string JobFixture::holder(const std::string& alias) const {
    auto h = state::holder(state, alias);
    return h.ok() && h.value() ? *h.value() : std::string();
}

std::string JobFixture::log_text() const {
    std::string out;
    for (const auto& l : log) out += l + "\n";
    return out;
}

void JobFixture::before(fakes::FakeTransport& node, const std::string& op, std::function<void()> fn) {
    fakes::FakeTransport::Handler inner = node.handlers[op];
    node.handlers[op] = [fn = std::move(fn), inner = std::move(inner)](const json& args) -> Result<json> {
        fn();
        return inner(args);
    };
}

// --- TransferFixture ---

TransferFixture::TransferFixture() {
    rechecked_files = k_files;
    // The source placement: both files selected and complete, seeding.
    auto& src = seedbox.qb.put(torrent_info(identity, k_source_save, "stalledUP", 1.0), k_files);
    src.metainfo = "d4:info" + k_info + "e";
    // The source's disk as the preflight reads it: the files of the torrent, at their sizes.
    seedbox.ops.handlers["tree"] = [](const json& args) -> Result<json> {
        auto request = args.get<node::TreeRequest>();
        json out = node::TreeResult{true, {}};
        std::uint64_t ino = 201;
        for (const auto& p : request.paths) {
            std::uint64_t size = 0;
            for (const auto& f : k_files)
                if (f.name == p) size = static_cast<std::uint64_t>(f.size);
            out["entries"].push_back(size ? file_entry(p, {1, ino++, size, 5}) : absent_entry(p));
        }
        return out;
    };
    create_job();
    answer_stage_and_sync();
    answer_merge_and_unmerge();
    answer_verify_and_cleanup();
}

// The definition the planner would write for this job, its first event and its reservation.
void TransferFixture::create_job() {
    def.id = job_id;
    def.op = plan::Operation::archive;
    def.created_at = "2026-12-01T18:34:12Z";
    def.identity = identity;
    def.name = "show";
    def.qb_id = qb_id;
    def.aliases = aliases;
    def.source = "seedbox";
    def.target = "nas";
    def.source_save_path = k_source_save;
    def.target_save_path = k_target_save;
    def.new_target = true;
    def.route = {"archctl-nas-seedbox-r1", "/srv/sync/r1", "/tank/sync/r1"};
    def.requested = def.delta = def.union_set = torrent::Selection::all(2);
    def.files = def.union_files = {{0, "show/a.bin", 10}, {1, "show/b.bin", 20}};
    def.delta_bytes = 30;
    def.file_count = 2;
    def.piece_count = 2;
    def.piece_length = 16384;
    def.request_digest = "rd";
    def.plan_digest = "pd";
    {
        jobs::evidence::Resource res;
        res.identity = identity;
        auto view = jobs::evidence::read_placement(**nodes.get("seedbox"), res);
        def.source_fingerprint = jobs::evidence::fingerprint(*view.value());
        seedbox.qb.calls.clear();
    }
    state::JobStore store(state);
    (void)store.create(job_id, def.to_json());
    (void)store.append_event(job_id, "created", {{"op", "archive"}});
    (void)state::reserve(state, aliases, job_id);
}

void TransferFixture::answer_stage_and_sync() {
    // stage (seedbox): every delta byte copied, or as many as the budget allows.
    seedbox.ops.handlers["stage"] = [](const json& args) -> Result<json> {
        auto request = args.get<node::StageRequest>();
        std::uint64_t total = 0;
        for (const auto& f : request.files) total += f.size;
        node::StageResult r;
        r.counters.files_copied = request.files.size();
        r.counters.bytes_copied = total;
        if (request.budget_bytes && *request.budget_bytes < total) {
            r.stopped = node::Stop::budget;
            r.counters.bytes_copied = *request.budget_bytes;
            return json(r);
        }
        r.complete = true;
        r.manifest_xxh3 = "00112233445566778899aabbccddeeff";
        return json(r);
    };
    // sync: nas's Syncthing indexed every job file at the global version; the files are there.
    std::vector<std::string> names;
    for (const auto& f : def.files) names.push_back(node::payload_name(f.index, def.payload_layout));
    names.push_back(node::aux_path(node::k_torrent_aux));
    names.push_back(node::k_manifest_name);
    names.push_back(node::k_ready_name);
    for (const auto& n : names) {
        clients::syncthing::FileRecord rec;
        rec.global.name = rec.local.name = job_id + "/" + n;
        rec.global.version = rec.local.version = {"SEEDBOX:1"};
        nas.st.file_records[{def.route.id, job_id + "/" + n}] = rec;
    }
    nas.ops.handlers["receive_check"] = [](const json& args) -> Result<json> {
        auto request = args.get<node::ReceiveCheckRequest>();
        node::ReceiveCheckResult r;
        r.complete = r.job_exists = r.manifest = true;
        r.index_evidence = request.indexed.has_value();
        for (const auto& f : request.files) {
            r.files.push_back({node::payload_name(f.index, request.layout), node::Arrival::present, f.size, f.index, f.size, ""});
            r.bytes_present += f.size;
            ++r.files_present;
        }
        r.bytes_total = r.bytes_present;
        r.files_total = r.files_present;
        return json(r);
    };
}

void TransferFixture::answer_merge_and_unmerge() {
    // merge (nas): every file created by a rename out of the route folder.
    nas.ops.handlers["merge"] = [](const json& args) -> Result<json> {
        auto request = args.get<node::MergeRequest>();
        node::MergeResult r;
        r.complete = true;
        r.record_path = request.save_path + "/.archctl-merge.json";
        std::uint64_t ino = 101;
        for (const auto& f : request.files) {
            r.provenance.push_back({f.index, f.path, "created", "rename", ino++});
            r.bytes_renamed += f.size;
        }
        return json(r);
    };
    // unmerge (nas): the keep rule — a created file another torrent references stays.
    nas.ops.handlers["unmerge"] = [](const json& args) -> Result<json> {
        auto request = args.get<node::UnmergeRequest>();
        node::UnmergeResult r;
        r.record = node::UnmergeRecord::removed;
        std::set<std::string> referenced(request.referenced.begin(), request.referenced.end());
        for (const auto& m : request.provenance.value_or(json::array())) {
            std::string dest = request.save_path + "/" + m.value("path", "");
            if (m.value("provenance", "") == "preexisting") r.preexisting.push_back(dest);
            else if (referenced.count(dest)) r.kept.push_back({dest, "referenced by another torrent", node::KeptCode::referenced});
            else r.removed.push_back(dest);
        }
        return json(r);
    };
}

void TransferFixture::answer_verify_and_cleanup() {
    // verify (nas): the stat of each file after its recheck, and the chmod.
    nas.ops.handlers["tree"] = [](const json& args) -> Result<json> {
        auto request = args.get<node::TreeRequest>();
        node::TreeResult r;
        r.base_exists = true;
        std::uint64_t ino = 101;
        json out = r;
        for (const auto& p : request.paths) {
            std::uint64_t size = p == "show/a.bin" ? 10 : p == "show/b.bin" ? 20 : 0;
            out["entries"].push_back(size ? file_entry(p, {1, ino++, size, 5}) : absent_entry(p));
        }
        return out;
    };
    nas.ops.handlers["chmod_readable"] = [](const json& args) -> Result<json> {
        node::ChmodReadableResult r;
        r.files_changed = args.value("paths", json::array()).size();
        return json(r);
    };
    // cleanup (both): the job directory removed.
    for (FakeNode* n : {&seedbox, &nas})
        n->ops.handlers["cleanup"] = [](const json&) -> Result<json> {
            node::CleanupResult r;
            r.job_dir = node::JobDirEnd::removed;
            return json(r);
        };
    // torrents/add on nas: qBittorrent lists the torrent stopped, with the add's tags; its recheck
    // goes through `recheck` and leaves `rechecked_files`.
    nas.qb.on_add = [this](const qb::AddTorrent& add) -> Status {
        auto info = torrent_info(identity, add.save_path, "pausedDL", 0);
        info.tags = add.tags;
        nas.qb.put(info, rechecked_files);
        nas.qb.script_recheck(qb_id, recheck);
        if (after_add) after_add();
        return {};
    };
}

std::vector<qb::TorrentFile>& TransferFixture::source_files() { return seedbox.qb.find(qb_id)->files; }

std::vector<std::vector<std::string>> TransferFixture::unmerge_referenced() const {
    std::vector<std::vector<std::string>> out;
    for (const auto& a : nas.ops.args_of("unmerge")) out.push_back(a.value("referenced", std::vector<std::string>{}));
    return out;
}

std::uint64_t TransferFixture::committed_generation() const {
    auto rec = state::PlacementStore(state).get(aliases[0], "nas");
    return rec.ok() && rec.value() ? rec.value()->generation : 0;
}

// --- EvictFixture ---

EvictFixture::EvictFixture() {
    // The cache placement on seedbox, and the archive placement on nas that proves it.
    seedbox.qb.put(torrent_info(identity, k_cache_save, "stalledUP", 1.0), k_files);
    nas.qb.put(torrent_info(identity, k_archive_save, "stalledUP", 1.0), k_files);
    archive_disk = {{"show/a.bin", {1, 201, 10, 7}}, {"show/b.bin", {1, 202, 20, 7}}};
    (void)state::PlacementStore(state).advance(
        aliases, "nas", "fp", "20261130-101010-aaaa",
        {{"qb_id", qb_id}, {"save_path", k_archive_save}, {"stamps", plan::stamps_to_json({{0, {1, 201, 10, 7}}, {1, {1, 202, 20, 7}}})}});

    create_job();
    answer_disks();
}

// The definition `plan evict` would write for this job, its first event and its reservation.
void EvictFixture::create_job() {
    def.id = job_id;
    def.created_at = "2026-12-01T18:34:12Z";
    def.identity = identity;
    def.name = "show";
    def.qb_id = qb_id;
    def.aliases = aliases;
    def.cache = "seedbox";
    def.save_path = k_cache_save;
    def.cache_fingerprint =
        jobs::evidence::fingerprint(jobs::evidence::placement_view("seedbox", seedbox.qb.find(qb_id)->info, seedbox.qb.find(qb_id)->files));
    def.cache_generation = 0;
    def.required = torrent::Selection::all(2);
    def.required_bytes = 30;
    def.files = {{0, "show/a.bin", 10, 11, 3}, {1, "show/b.bin", 20, 12, 3}};
    def.proofs = {{"nas", qb_id, k_archive_save, torrent::Selection::all(2), 1, plan::Trust::committed,
                   {{0, "show/a.bin", 10, {1, 201, 10, 7}}, {1, "show/b.bin", 20, {1, 202, 20, 7}}}}};
    def.proved_at = def.created_at;
    def.piece_count = 2;
    def.piece_length = 16384;
    def.request_digest = "rd";
    def.coverage_digest = "cd";
    state::JobStore store(state);
    (void)store.create(job_id, def.to_json());
    (void)store.append_event(job_id, "created", {{"op", "evict"}});
    (void)state::reserve(state, aliases, job_id);
}

void EvictFixture::answer_disks() {
    // nas's disk: the archive files as `archive_disk` says.
    nas.ops.handlers["tree"] = [this](const json& args) -> Result<json> {
        auto request = args.get<node::TreeRequest>();
        json out = node::TreeResult{true, {}};
        for (const auto& p : request.paths) {
            auto it = archive_disk.find(p);
            out["entries"].push_back(it == archive_disk.end() ? absent_entry(p) : file_entry(p, it->second));
        }
        return out;
    };
    // seedbox's disk: the owned files until unlinked; no part file.
    seedbox.ops.handlers["tree"] = [this](const json& args) -> Result<json> {
        auto request = args.get<node::TreeRequest>();
        json out = node::TreeResult{true, {}};
        for (const auto& p : request.paths) {
            std::string abs = request.base + "/" + p;
            const jobs::evict::OwnedFile* owned = nullptr;
            for (const auto& f : def.files)
                if (f.path == p) owned = &f;
            if (!owned || unlinked.count(abs)) out["entries"].push_back(absent_entry(p));
            else out["entries"].push_back(file_entry(p, {owned->dev, owned->ino, owned->size, 9}));
        }
        return out;
    };
    seedbox.ops.handlers["unlink_owned"] = [this](const json& args) -> Result<json> {
        auto request = args.get<node::UnlinkOwnedRequest>();
        std::set<std::string> referenced(request.referenced.begin(), request.referenced.end());
        node::UnlinkOwnedResult r;
        for (const auto& p : request.paths) {
            if (unlinked.count(p.path)) continue;
            if (referenced.count(p.path)) {
                r.kept.push_back({p.path, "referenced by another torrent", node::KeptCode::referenced});
                continue;
            }
            unlinked.insert(p.path);
            r.removed.push_back(p.path);
        }
        return json(r);
    };
}

void target_without_room(TransferFixture& f, std::function<std::uint64_t()> free) {
    f.nas.ops.handlers["receive_check"] = [](const nlohmann::json&) -> Result<nlohmann::json> {
        node::ReceiveCheckResult r;
        r.job_exists = true;
        return nlohmann::json(r);
    };
    f.nas.ops.handlers["info"] = [free = std::move(free)](const nlohmann::json& args) -> Result<nlohmann::json> {
        node::InfoResult info;
        for (const auto& dir : args.get<node::InfoRequest>().probe_dirs) {
            node::DirectoryInfo d;
            d.root.path = dir;
            d.free_bytes = free();
            d.total_bytes = 1u << 30;
            info.probes.push_back(d);
        }
        return nlohmann::json(info);
    };
}

nlohmann::json in_child(const std::function<nlohmann::json()>& body) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(fds[0]);
        std::string text = body().dump();
        (void)!::write(fds[1], text.data(), text.size());
        ::_exit(0);
    }
    ::close(fds[1]);
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    return nlohmann::json::parse(text);
}

}  // namespace archctl::test
