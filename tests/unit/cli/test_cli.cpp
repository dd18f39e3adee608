// The built binary: exit-code mapping, the --json document, help, and `archctl config`.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "tests/support/scratch.hpp"

using namespace archctl;
using nlohmann::json;

namespace {

std::vector<std::string> isolated_env(const test::Scratch& s) {
    return {"HOME=" + s.path().string(), "XDG_CONFIG_HOME=" + (s / "xdg").string(), "XDG_STATE_HOME=" + (s / "xstate").string(),
            "ARCHCTL_CONFIG=", "ARCHCTL_STATE=", "ARCHCTL_MIN_FREE="};
}

test::RunResult run_archctl(const test::Scratch& s, std::vector<std::string> args, std::vector<std::string> extra_env = {}) {
    args.insert(args.begin(), test::archctl_bin());
    std::vector<std::string> env;
    for (const auto& e : isolated_env(s)) {
        std::string name = e.substr(0, e.find('=') + 1);
        bool overridden = false;
        for (const auto& x : extra_env) overridden = overridden || x.rfind(name, 0) == 0;
        if (!overridden) env.push_back(e);
    }
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    return test::run(args, env);
}

}  // namespace

TEST_CASE("--version and --help exit 0; help groups porcelain and plumbing") {
    test::Scratch s;
    auto v = run_archctl(s, {"--version"});
    CHECK(v.exit_code == 0);
    CHECK(v.out.rfind("archctl ", 0) == 0);
    auto h = run_archctl(s, {"--help"});
    CHECK(h.exit_code == 0);
    auto porcelain = h.out.find("Porcelain commands:");
    auto plumbing = h.out.find("Plumbing commands:");
    REQUIRE(porcelain != std::string::npos);
    REQUIRE(plumbing != std::string::npos);
    CHECK(porcelain < plumbing);
    for (const char* cmd : {"plan", "archive", "unarchive", "evict", "resume", "status", "route", "job", "config"})
        CHECK(h.out.find(std::string("  ") + cmd + " ") < plumbing);
    for (const char* cmd : {"node", "torrent"}) CHECK(h.out.find(std::string("  ") + cmd + " ") > plumbing);
}

TEST_CASE("help COMMAND is COMMAND --help") {
    test::Scratch s;
    auto r = run_archctl(s, {"help", "archive"});
    CHECK(r.exit_code == 0);
    CHECK(r.out == run_archctl(s, {"archive", "--help"}).out);
    CHECK(r.out.find("RES") != std::string::npos);
    auto nested = run_archctl(s, {"help", "job", "show"});
    CHECK(nested.exit_code == 0);
    CHECK(nested.out == run_archctl(s, {"job", "show", "--help"}).out);
    auto top = run_archctl(s, {"help"});
    CHECK(top.exit_code == 0);
    CHECK(top.out == run_archctl(s, {"--help"}).out);
    auto unknown = run_archctl(s, {"help", "bogus"});
    CHECK(unknown.exit_code == 2);
    CHECK(unknown.err.find("unknown command 'bogus'") != std::string::npos);
}

TEST_CASE("usage errors exit 2, with a one-document --json error") {
    test::Scratch s;
    auto r = run_archctl(s, {"bogus"});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("archctl: error: unknown command 'bogus'") != std::string::npos);
    auto j = run_archctl(s, {"config", "--no-such-flag", "--json"});
    CHECK(j.exit_code == 2);
    json doc = json::parse(j.out);
    CHECK(doc["schema"] == 1);
    CHECK(doc["ok"] == false);
    CHECK(doc["error"]["code"] == "USAGE");
    CHECK(doc["error"]["message"].get<std::string>().find("--no-such-flag") != std::string::npos);
    CHECK(run_archctl(s, {}).exit_code == 2);
}

TEST_CASE("usage errors name the missing argument or the unknown option as written") {
    test::Scratch s;
    auto missing = run_archctl(s, {"archive"});
    CHECK(missing.exit_code == 2);
    CHECK(missing.err.find("archctl: error: archive: missing RES (resource: a v1/v2 info hash") != std::string::npos);
    CHECK(missing.err.find("hint: see 'archctl archive --help'") != std::string::npos);
    CHECK(missing.err.find("rES") == std::string::npos);
    auto j = run_archctl(s, {"archive", "--json"});
    CHECK(j.exit_code == 2);
    json doc = json::parse(j.out);
    CHECK(doc["error"]["code"] == "USAGE");
    CHECK(doc["error"]["message"].get<std::string>().rfind("archive: missing RES (", 0) == 0);
    CHECK(doc["error"]["hint"] == "see 'archctl archive --help'");
    auto op = run_archctl(s, {"plan"});
    CHECK(op.exit_code == 2);
    CHECK(op.err.find("archctl: error: plan: missing OPERATION (archive, unarchive, evict or tier)") != std::string::npos);
    auto bad_op = run_archctl(s, {"plan", "bogus", "x"});
    CHECK(bad_op.exit_code == 2);
    CHECK(bad_op.err.find("plan: OPERATION: bogus") != std::string::npos);
    CHECK(bad_op.err.find("oPERATION") == std::string::npos);
    for (std::vector<std::string> argv : {std::vector<std::string>{"archive", "--bogus"},
                                          std::vector<std::string>{"archive", "abcd1234", "--bogus"}}) {
        auto unknown = run_archctl(s, argv);
        CHECK(unknown.exit_code == 2);
        CHECK(unknown.err.find("archctl: error: archive: unknown option '--bogus'") != std::string::npos);
        CHECK(unknown.err.find("required") == std::string::npos);
    }
    auto extra = run_archctl(s, {"status", "abcd1234", "surplus"});
    CHECK(extra.exit_code == 2);
    CHECK(extra.err.find("archctl: error: status: unexpected argument 'surplus'") != std::string::npos);
    // Several RES are a batch; a batch takes no file selection, and the filters are checked
    // before any node is contacted.
    auto files = run_archctl(s, {"archive", "abcd1234", "abcd5678", "--files", "0"});
    CHECK(files.exit_code == 2);
    CHECK(files.err.find("--files, --file and --dir take a single RES") != std::string::npos);
    auto age = run_archctl(s, {"archive", "--completed-before", "soon"});
    CHECK(age.exit_code == 2);
    CHECK(age.err.find("--completed-before") != std::string::npos);
    auto ratio = run_archctl(s, {"plan", "evict", "--min-ratio", "x"});
    CHECK(ratio.exit_code == 2);
    CHECK(ratio.err.find("invalid --min-ratio 'x'") != std::string::npos);
    // Budgets: a negative or zero number is a usage error, never "no limit".
    for (std::vector<std::string> argv : {std::vector<std::string>{"resume", "--max-minutes", "-5"},
                                          std::vector<std::string>{"archive", "abcd1234", "--max-gb", "-1"},
                                          std::vector<std::string>{"archive", "abcd1234", "--max-gb", "0"},
                                          std::vector<std::string>{"resume", "--max-bytes", "-5"},
                                          std::vector<std::string>{"tier", "--min-free", "lots"}}) {
        auto bad = run_archctl(s, argv);
        CHECK(bad.exit_code == 2);
        CHECK(bad.err.find("invalid") != std::string::npos);
        CHECK(bad.err.find(argv[argv.size() - 2]) != std::string::npos);
    }
    auto tier_args = run_archctl(s, {"plan", "tier", "--category", "tv"});
    CHECK(tier_args.exit_code == 2);
    CHECK(tier_args.err.find("'plan tier' takes at most a policy NAME") != std::string::npos);
    auto top = run_archctl(s, {"--bogus", "--json"});
    CHECK(top.exit_code == 2);
    CHECK(json::parse(top.out)["error"]["message"] == "unknown option '--bogus'");
    auto sub = run_archctl(s, {"job"});
    CHECK(sub.exit_code == 2);
    CHECK(sub.err.find("archctl: error: job: a subcommand is required") != std::string::npos);
}

TEST_CASE("evict refuses without configured nodes and prints nothing on stdout") {
    test::Scratch s;
    auto r = run_archctl(s, {"evict", "1838bf9a70c1", "--from", "seedbox"});
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    CHECK(r.err.find("archctl: error: no nodes are configured") != std::string::npos);
    auto j = run_archctl(s, {"--json", "evict", "1838bf9a70c1", "--from", "seedbox"});
    CHECK(j.exit_code == 1);
    json doc = json::parse(j.out);
    CHECK(doc["ok"] == false);
    CHECK(doc["error"]["code"] == "CONFIG_INVALID");
    auto h = run_archctl(s, {"evict", "--help"});
    CHECK(h.exit_code == 0);
    CHECK(h.out.find("--verify-archive") != std::string::npos);
}

TEST_CASE("config shows each value's winning layer, and --json gives the same facts") {
    test::Scratch s;
    std::string user = s.write("xdg/archctl/config.toml",
                               "[routes]\npolicy = \"eager_mesh\"\n[transfer]\nmin_free = \"3G\"\n"
                               "[retention]\ntombstone_days = 7\n").string();
    std::string state_dir = (s / "st").string();
    std::string state = s.write("st/config.toml", "[retention]\ntombstone_days = 14\n[routes]\nprovision_timeout = \"10m\"\n").string();
    auto r = run_archctl(s, {"config", "--state", state_dir}, {"ARCHCTL_MIN_FREE=10G"});
    REQUIRE(r.exit_code == 0);
    auto line_of = [&](const std::string& key) {
        auto at = r.out.find(key + " ");
        REQUIRE(at != std::string::npos);
        return r.out.substr(at, r.out.find('\n', at) - at);
    };
    CHECK(line_of("transfer.min_free").find("10.0 GiB") != std::string::npos);
    CHECK(line_of("transfer.min_free").find("env:ARCHCTL_MIN_FREE") != std::string::npos);
    CHECK(line_of("routes.policy").find("user:" + user) != std::string::npos);
    CHECK(line_of("retention.tombstone_days").find("state:" + state) != std::string::npos);
    CHECK(line_of("state_dir").find("flag") != std::string::npos);
    CHECK(line_of("routes.check_max_age").find("default") != std::string::npos);

    auto j = run_archctl(s, {"config", "--json", "--state", state_dir}, {"ARCHCTL_MIN_FREE=10G"});
    REQUIRE(j.exit_code == 0);
    json doc = json::parse(j.out);
    CHECK(doc["ok"] == true);
    std::map<std::string, std::pair<std::string, std::string>> got;
    for (const auto& e : doc["settings"]) got[e["key"]] = {e["value"], e["origin"]};
    CHECK(got["transfer.min_free"] == std::make_pair(std::string("10.0 GiB"), std::string("env:ARCHCTL_MIN_FREE")));
    CHECK(got["routes.policy"].second == "user:" + user);
    CHECK(got["retention.tombstone_days"] == std::make_pair(std::string("14"), "state:" + state));
    CHECK(got["routes.provision_timeout"].second == "state:" + state);
}

TEST_CASE("config never prints secrets, in text or JSON") {
    test::Scratch s;
    std::string pw = s.write("nas.qb", "pw-9f8e7d6c-distinctive\n").string();
    ::chmod(pw.c_str(), 0600);
    std::string user = s.write("xdg/archctl/config.toml",
            "[nodes.nas]\nrole=\"archive\"\nqb_root=\"/tank/t\"\nsync_root=\"/tank/s\"\n"
            "[nodes.nas.qbittorrent]\nurl=\"http://127.0.0.1:1\"\npassword_file=\"" + pw + "\"\n"
            "[nodes.nas.syncthing]\nurl=\"http://127.0.0.1:2\"\napi_key=\"key-1a2b3c4d-distinctive\"\n").string();
    ::chmod(user.c_str(), 0600);
    for (bool as_json : {false, true}) {
        std::vector<std::string> args = {"config"};
        if (as_json) args.push_back("--json");
        auto r = run_archctl(s, args);
        REQUIRE(r.exit_code == 0);
        CHECK(r.out.find("distinctive") == std::string::npos);
        CHECK(r.err.find("distinctive") == std::string::npos);
        CHECK(r.out.find("<set, from password_file " + pw + ">") != std::string::npos);
        CHECK(r.out.find("nodes.nas.syncthing.api_key") != std::string::npos);
    }
}

TEST_CASE("--version --json is one document with the version") {
    test::Scratch s;
    auto r = run_archctl(s, {"--version", "--json"});
    CHECK(r.exit_code == 0);
    json doc = json::parse(r.out);
    CHECK(doc["schema"] == 1);
    CHECK(doc["ok"] == true);
    CHECK(doc["version"].is_string());
    CHECK(run_archctl(s, {"--version"}).out.find(doc["version"].get<std::string>()) != std::string::npos);
}

TEST_CASE("config --json prints list values (exec, notify exec) as arrays and the notify url as text") {
    test::Scratch s;
    s.write("xdg/archctl/config.toml",
            "[nodes.nas]\nrole=\"archive\"\nqb_root=\"/tank/t\"\nsync_root=\"/tank/s\"\n"
            "transport=\"exec\"\nexec=[\"ssh\", \"nas\", \"archctl\", \"node\", \"serve\"]\n"
            "[nodes.nas.qbittorrent]\nurl=\"http://127.0.0.1:1\"\n[nodes.nas.syncthing]\nurl=\"http://127.0.0.1:2\"\n"
            "[notify]\nexec=[\"/usr/local/bin/hook\", \"--quiet\"]\nurl=\"http://127.0.0.1:3/hook\"\n");
    auto r = run_archctl(s, {"config", "--json"});
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.find("unknown") == std::string::npos);
    json doc = json::parse(r.out);
    std::map<std::string, json> got;
    for (const auto& e : doc["settings"]) got[e["key"].get<std::string>()] = e["value"];
    CHECK(got["nodes.nas.exec"] == json({"ssh", "nas", "archctl", "node", "serve"}));
    CHECK(got["notify.exec"] == json({"/usr/local/bin/hook", "--quiet"}));
    CHECK(got["notify.url"] == "http://127.0.0.1:3/hook");
    CHECK(got["nodes.nas.role"] == "archive");
}

TEST_CASE("a notify url that is not http(s) is a config error naming it") {
    test::Scratch s;
    s.write("xdg/archctl/config.toml", "[notify]\nurl = \"hooks.example/x\"\n");
    auto r = run_archctl(s, {"config", "--json"});
    CHECK(r.exit_code == 1);
    json doc = json::parse(r.out);
    CHECK(doc["error"]["code"] == "CONFIG_INVALID");
    CHECK(doc["error"]["message"].get<std::string>().find("notify.url 'hooks.example/x'") != std::string::npos);
}

TEST_CASE("a malformed config is exit 1 with file and line, and a typo warns") {
    test::Scratch s;
    std::string user = s.write("xdg/archctl/config.toml", "[transfer]\nmin_free = 12.5\n").string();
    auto r = run_archctl(s, {"config"});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("archctl: error: cannot read config '" + user + "': line 2: transfer.min_free") != std::string::npos);
    s.write("xdg/archctl/config.toml", "[transfer]\nmin_fre = \"1G\"\n");
    auto w = run_archctl(s, {"config"});
    CHECK(w.exit_code == 0);
    CHECK(w.err.find("archctl: warning: unknown key 'min_fre' in [transfer]") != std::string::npos);
    CHECK(w.err.find("did you mean 'min_free'?") != std::string::npos);
}

TEST_CASE("torrent verify refuses a pad file whose path leaves the save path, and opens nothing there") {
    test::Scratch s;
    // v1, 16 KiB pieces: "a" (100 bytes), a BEP 47 pad of 16284 bytes at root/../../escape, "b".
    // The hashes are never reached: the path rules refuse the torrent first.
    const std::string torrent =
        "d4:infod5:filesl"
        "d6:lengthi100e4:pathl1:aee"
        "d4:attr1:p6:lengthi16284e4:pathl2:..2:..6:escapeee"
        "d6:lengthi50e4:pathl1:bee"
        "e4:name4:root12:piece lengthi16384e6:pieces40:" + std::string(40, 'x') + "ee";
    std::string file = s.write("pad.torrent", torrent).string();
    std::string dir = (s / "save").string();
    s.write("save/root/a", std::string(100, 'a'));
    s.write("save/root/b", std::string(50, 'b'));
    s.write("escape", "outside the save path");
    // inotify reports every open of a file in the directory that holds the escape target.
    int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(::inotify_add_watch(fd, s.path().c_str(), IN_OPEN | IN_ACCESS) >= 0);

    auto r = run_archctl(s, {"torrent", "verify", file, dir});
    std::vector<std::string> opened;
    alignas(inotify_event) char events[8192];
    for (ssize_t n; (n = ::read(fd, events, sizeof events)) > 0;)
        for (ssize_t at = 0; at < n;) {
            const auto* e = reinterpret_cast<const inotify_event*>(events + at);
            if (e->len > 0) opened.emplace_back(e->name);
            at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
        }
    ::close(fd);

    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("archctl: error: unsafe path in torrent 'root': file 'root/../../escape': "
                      "element '..' is not allowed (pad file)\n", 0) == 0);
    CHECK(std::find(opened.begin(), opened.end(), "escape") == opened.end());
    CHECK(std::find(opened.begin(), opened.end(), "pad.torrent") != opened.end());  // the watch works
}
