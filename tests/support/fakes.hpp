#pragma once
// Recording test doubles for unit tests that run library code without services and without
// sleeping:
//
//   FakeQb         an in-memory qBittorrent (qbittorrent::Api): torrents with state, progress,
//                  files, priorities and tags; a scripted sequence of states for a recheck;
//   FakeSyncthing  an in-memory Syncthing (syncthing::Api): devices, folders, file records,
//                  folder status, queued events;
//   FakeTransport  a node (node::Transport) that answers operations from a handler map
//                  (operation → function(args) → result), keyed by lib/node/wire/op_names.hpp;
//   ManualClock    a Clock whose sleep_for advances time at once.
//
// Every fake records each call (method or op name and its arguments, as JSON) in `calls`, in
// order; count(name) says how often one was made. A failure is injected per method with
// fail_next(name, error) (the next call only) or fail_always(name, error); for FakeTransport the
// name is the op, and an injected failure is a transport failure (an operation's own failure is
// what its handler returns). The fakes make their own errors with ErrorCode, as the services'
// clients do.
//
// Usage:
//   fakes::FakeQb qb;
//   qb.put({.id = "aaaa", .state = "pausedUP", .progress = 1}, {{0, "a.bin", 10, 1, 1}});
//   qb.script_recheck("aaaa", {{"checkingUP", 0.5}, {"pausedUP", 1}});
//   fakes::ManualClock clock;
//   auto files = jobs::transfer::recheck_and_wait(clock, qb, "aaaa");

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/clock.hpp"
#include "lib/base/result.hpp"
#include "lib/clients/qbittorrent/api.hpp"
#include "lib/clients/syncthing/api.hpp"
#include "lib/node/client/transport.hpp"
#include "lib/node/wire/op_names.hpp"

namespace archctl::fakes {

struct Call {
    std::string name;
    nlohmann::json args;
};

// The call log and failure injection every fake shares.
class Recorder {
public:
    std::vector<Call> calls;
    // Runs as each call is recorded, before it is answered (a test's moment to act: a signal, a
    // change of the world).
    std::function<void(const std::string& name)> on_call;

    [[nodiscard]] std::size_t count(const std::string& name) const;
    // Calls named `name`, in order.
    [[nodiscard]] std::vector<nlohmann::json> args_of(const std::string& name) const;
    void fail_next(const std::string& name, Error error);
    void fail_always(const std::string& name, Error error);
    // `name` answers again (its pending and permanent failures are dropped).
    void heal(const std::string& name);

protected:
    // Records the call; the injected failure for it, if any.
    std::optional<Error> record(const std::string& name, nlohmann::json args = nlohmann::json::object());

private:
    std::map<std::string, std::deque<Error>> m_next;
    std::map<std::string, Error> m_always;
};

// One state a torrent passes through (qBittorrent's raw state string and its progress).
struct QbState {
    std::string state;
    double progress = 0;
};

// One file of a torrent as qBittorrent lists it (index, name, size, progress, priority).
clients::qbittorrent::TorrentFile qb_file(std::uint32_t index, const std::string& name, std::int64_t size, double progress = 1.0,
                                          int priority = 1);

class FakeQb final : public clients::qbittorrent::Api, public Recorder {
public:
    struct Torrent {
        clients::qbittorrent::TorrentInfo info;  // run_state follows info.state
        std::vector<clients::qbittorrent::TorrentFile> files;
        std::string metainfo;           // what export_torrent returns
        clients::qbittorrent::Announce announce;  // what announce returns
        std::deque<QbState> script;     // states a recheck goes through (see script_recheck)
        std::deque<QbState> pending;    // the running recheck's states still to show
        std::deque<std::vector<QbState>> later_scripts;  // the scripts of the rechecks after the next (script_rechecks)
    };

    // Adds or replaces a torrent (info.id names it; run_state is set from info.state).
    Torrent& put(clients::qbittorrent::TorrentInfo info, std::vector<clients::qbittorrent::TorrentFile> files = {});
    [[nodiscard]] Torrent* find(const std::string& id);
    // After recheck(id), each read of the torrent (torrents(), all_torrents()) shows the next of
    // `states`; the last one stays. Without a script a recheck changes nothing.
    void script_recheck(const std::string& id, std::vector<QbState> states);
    // The first recheck shows `scripts[0]`, the next `scripts[1]`, …; the last one stays.
    void script_rechecks(const std::string& id, std::vector<std::vector<QbState>> scripts);
    // As qBittorrent 4.5 does: a recheck asked for while the torrent is checking leaves it at
    // checkingDL 0% for good (until a stop, which ends a check: pausedDL 0%).
    bool recheck_during_check_sticks = true;
    // What add() does besides recording (default: nothing is added, as when qBittorrent has not
    // listed the torrent yet).
    std::function<Status(const clients::qbittorrent::AddTorrent&)> on_add;
    // Torrents in the order they were put.
    std::vector<Torrent> torrent_list;
    std::string app_version = "4.5.2";
    std::string webapi_version = "2.8.19";

    Result<clients::qbittorrent::Capabilities> capabilities() override;
    Result<std::vector<clients::qbittorrent::TorrentInfo>> torrents(const std::vector<std::string>& ids) override;
    Result<std::vector<clients::qbittorrent::TorrentInfo>> all_torrents() override;
    Result<std::vector<clients::qbittorrent::TorrentFile>> files(const std::string& id) override;
    Result<std::string> export_torrent(const std::string& id) override;
    Result<clients::qbittorrent::Announce> announce(const std::string& id) override;
    Status add(const clients::qbittorrent::AddTorrent& torrent) override;
    Status set_file_priority(const std::string& id, const std::vector<std::uint32_t>& indices,
                             clients::qbittorrent::FilePriority priority) override;
    Status recheck(const std::vector<std::string>& ids) override;
    Status stop(const std::vector<std::string>& ids) override;
    Status start(const std::vector<std::string>& ids) override;
    Status remove(const std::vector<std::string>& ids, clients::qbittorrent::DeleteData data) override;
    Status add_tags(const std::vector<std::string>& ids, const std::vector<std::string>& tags) override;
    Status remove_tags(const std::vector<std::string>& ids, const std::vector<std::string>& tags) override;
    Status delete_tags(const std::vector<std::string>& tags) override;
    Status clear_share_limits(const std::vector<std::string>& ids) override;
    Result<clients::qbittorrent::Categories> categories() override;
    Status create_category(const std::string& name, const std::string& save_path) override;
    Status sync(clients::qbittorrent::MainData& data) override;
    // What categories() answers; create_category adds to it (a conflict when present).
    clients::qbittorrent::Categories category_list;
    // Indices set_file_priority leaves unselected whatever it is asked (as qBittorrent would for
    // a file it refuses).
    std::set<std::uint32_t> refuse_select;
    // What preferences() answers (app/preferences).
    nlohmann::json prefs = nlohmann::json::object();
    Result<nlohmann::json> preferences() override;
    std::uint64_t request_count() const override { return calls.size(); }

private:
    // The torrent as a read shows it now (advancing a running recheck).
    clients::qbittorrent::TorrentInfo read(Torrent& t);
    std::int64_t m_rid = 0;
};

class FakeSyncthing final : public clients::syncthing::Api, public Recorder {
public:
    clients::syncthing::SystemStatus system;
    clients::syncthing::VersionInfo version_info;
    std::vector<clients::syncthing::Connection> connection_list;
    std::map<std::string, clients::syncthing::Device> device_map;   // by device ID
    std::map<std::string, clients::syncthing::Folder> folder_map;   // by folder ID
    nlohmann::json options_json = nlohmann::json::object();
    std::map<std::string, clients::syncthing::FolderStatus> folder_status;                       // by folder ID
    std::map<std::pair<std::string, std::string>, clients::syncthing::FileRecord> file_records;  // (folder, path)
    std::map<std::pair<std::string, std::string>, clients::syncthing::Completion> completions;   // (folder, device)
    std::map<std::string, std::vector<clients::syncthing::FolderError>> folder_error_lists;      // by folder ID
    std::map<std::string, std::vector<std::string>> ignore_lines;                                // by folder ID
    // Events not yet delivered; events() hands out those newer than the query's `since` and
    // matching its types (all when none are given), up to its limit.
    std::vector<clients::syncthing::Event> event_queue;

    FakeSyncthing();
    // Queues an event with the next id.
    void push_event(const std::string& type, nlohmann::json data = nlohmann::json::object());

    Result<clients::syncthing::SystemStatus> status() override;
    Result<clients::syncthing::VersionInfo> version() override;
    Result<std::vector<clients::syncthing::Connection>> connections() override;
    Result<std::vector<clients::syncthing::Device>> devices() override;
    Result<std::optional<clients::syncthing::Device>> device(const std::string& device_id) override;
    Status put_device(const clients::syncthing::Device& device) override;
    Status delete_device(const std::string& device_id) override;
    Result<std::vector<clients::syncthing::Folder>> folders() override;
    Result<std::optional<clients::syncthing::Folder>> folder(const std::string& folder_id) override;
    Status put_folder(const clients::syncthing::Folder& folder) override;
    Status delete_folder(const std::string& folder_id) override;
    // Applies "paused" and "path" to folder_map; other keys are only recorded.
    Status patch_folder(const std::string& folder_id, const nlohmann::json& changes) override;
    Result<nlohmann::json> options() override;
    Result<clients::syncthing::FolderStatus> db_status(const std::string& folder_id) override;
    Result<clients::syncthing::Completion> completion(const std::string& folder_id, const std::string& device_id) override;
    Result<std::vector<clients::syncthing::FolderError>> folder_errors(const std::string& folder_id) override;
    Result<clients::syncthing::Ignores> ignores(const std::string& folder_id) override;
    Status set_ignores(const std::string& folder_id, const std::vector<std::string>& lines) override;
    Result<std::optional<clients::syncthing::FileRecord>> file(const std::string& folder_id, const std::string& path) override;
    // browse and need answer from file_records: browse lists the records below the prefix whose
    // global version is not deleted (with the global size), need those whose local version is
    // not current.
    Result<std::vector<clients::syncthing::GlobalEntry>> browse(const std::string& folder_id, const std::string& prefix) override;
    Result<clients::syncthing::NeedList> need(const std::string& folder_id) override;
    Status scan(const std::string& folder_id, const std::vector<std::string>& subs = {}) override;
    Result<std::vector<clients::syncthing::Event>> events(const clients::syncthing::EventQuery& query) override;
    std::uint64_t request_count() const override { return calls.size(); }

private:
    std::int64_t m_next_event = 1;
};

// What answers each node operation of a FakeTransport, by lib/node/wire/op_names.hpp's Op or by
// its wire name. A name that is no operation is a mistake in the test: it throws
// std::invalid_argument, so a misspelt handler never silently goes unused.
class FakeHandlers {
public:
    using Handler = std::function<Result<nlohmann::json>(const nlohmann::json& args)>;

    Handler& operator[](node::Op op) { return m_handlers[op]; }
    Handler& operator[](std::string_view name) { return m_handlers[op_named(name)]; }
    std::size_t erase(node::Op op) { return m_handlers.erase(op); }
    std::size_t erase(std::string_view name) { return m_handlers.erase(op_named(name)); }
    // The handler of `op`, or nullptr.
    [[nodiscard]] const Handler* find(node::Op op) const;

private:
    static node::Op op_named(std::string_view name);
    std::map<node::Op, Handler> m_handlers;
};

class FakeTransport final : public node::Transport, public Recorder {
public:
    using Handler = FakeHandlers::Handler;

    explicit FakeTransport(std::string node_name = "fake");

    // What answers each operation. A request whose op is no operation fails as `node serve` fails
    // it, and one without a handler the same way (UNKNOWN_OPERATION).
    FakeHandlers handlers;
    // Calls to cancel() so far.
    int cancels = 0;

    const std::string& node_name() const override { return m_name; }
    const node::Hello& hello() const override { return m_hello; }
    Result<node::Response> call(node::Request request, node::ProgressSink* sink = nullptr) override;
    void cancel() override { ++cancels; }

private:
    std::string m_name;
    node::Hello m_hello;
    std::uint64_t m_next_id = 1;
};

// A clock that starts at a fixed time and moves only when slept on (or advanced).
class ManualClock final : public Clock {
public:
    ManualClock();

    SystemTime now() const override { return m_system; }
    SteadyTime steady() const override { return m_steady; }
    void sleep_for(std::chrono::milliseconds d) override;
    void advance(std::chrono::milliseconds d);

    // sleep_for() calls and the time they slept in total.
    int sleeps = 0;
    std::chrono::milliseconds slept{0};

private:
    SystemTime m_system;
    SteadyTime m_steady;
};

}  // namespace archctl::fakes
