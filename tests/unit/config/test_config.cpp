#include <doctest/doctest.h>

#include <map>
#include <sys/stat.h>

#include "lib/config/config.hpp"
#include "tests/support/scratch.hpp"

using namespace archctl;
using namespace archctl::config;

namespace {

std::map<std::string, std::string> g_env;
const char* fake_getenv(const char* name) {
    auto it = g_env.find(name);
    return it == g_env.end() ? nullptr : it->second.c_str();
}

struct Env {
    explicit Env(const test::Scratch& s) {
        g_env.clear();
        g_env["HOME"] = s.path().string();
    }
    ~Env() { g_env.clear(); }
};

LoadOptions options_for(const test::Scratch& s) {
    LoadOptions o;
    o.getenv = fake_getenv;
    o.state_dir = (s / "state").string();
    return o;
}

const char* k_node = R"(
[nodes.nas]
role = "archive"
qb_root = "/tank/torrents"
sync_root = "/tank/sync"
exec = ["ssh", "nas", "archctl", "node", "serve"]
[nodes.nas.qbittorrent]
url = "http://10.0.0.8:8080"
username = "ana"
password = "hunter2-distinctive"
[nodes.nas.syncthing]
url = "http://10.0.0.8:8384"
api_key = "apikey-distinctive"
)";

}  // namespace

TEST_CASE("defaults apply with no files") {
    test::Scratch s;
    Env env(s);
    std::vector<std::string> warnings;
    auto c = load(options_for(s), warnings);
    REQUIRE(c.ok());
    CHECK(c->min_free == 2ull << 30);
    CHECK(c->origin.at("transfer.min_free") == "default");
    CHECK(c->route_policy == RoutePolicy::on_demand);
    CHECK(c->provision_timeout_s == 1800);
    CHECK(c->tombstone_days == 30);
    CHECK(c->nodes.empty());
    CHECK(warnings.empty());
}

TEST_CASE("each layer overrides the one below and is named as the origin") {
    test::Scratch s;
    Env env(s);
    std::string user = s.write(".config/archctl/config.toml", "[transfer]\nmin_free = \"5G\"\n[routes]\npolicy = \"eager_mesh\"\nprovision_timeout = \"10m\"\n").string();
    auto o = options_for(s);
    std::vector<std::string> w;
    auto c1 = load(o, w);
    REQUIRE(c1.ok());
    CHECK(c1->min_free == 5ull << 30);
    CHECK(c1->origin.at("transfer.min_free") == "user:" + user);

    std::string state = s.write("state/config.toml", "[transfer]\nmin_free = \"7G\"\n[routes]\nprovision_timeout = \"20m\"\n").string();
    auto c2 = load(o, w);
    CHECK(c2->min_free == 7ull << 30);
    CHECK(c2->origin.at("transfer.min_free") == "state:" + state);
    CHECK(c2->origin.at("routes.policy") == "user:" + user);
    CHECK(c2->provision_timeout_s == 1200);

    g_env["ARCHCTL_MIN_FREE"] = "10G";
    auto c3 = load(o, w);
    CHECK(c3->min_free == 10ull << 30);
    CHECK(c3->origin.at("transfer.min_free") == "env:ARCHCTL_MIN_FREE");

    o.min_free = 0;
    auto c4 = load(o, w);
    CHECK(c4->min_free == 0);
    CHECK(c4->origin.at("transfer.min_free") == "flag");
    CHECK(c4->display.at("transfer.min_free") == "0 (disabled)");
    CHECK(w.empty());
}

TEST_CASE("user file location: --config, ARCHCTL_CONFIG, XDG_CONFIG_HOME, ~/.config") {
    test::Scratch s;
    Env env(s);
    s.write(".config/archctl/config.toml", "[transfer]\nmin_free = \"1G\"\n");
    s.write("xdg/archctl/config.toml", "[transfer]\nmin_free = \"2G\"\n");
    s.write("env.toml", "[transfer]\nmin_free = \"3G\"\n");
    s.write("flag.toml", "[transfer]\nmin_free = \"4G\"\n");
    auto o = options_for(s);
    std::vector<std::string> w;
    CHECK(load(o, w)->min_free == 1ull << 30);
    g_env["XDG_CONFIG_HOME"] = (s / "xdg").string();
    CHECK(load(o, w)->min_free == 2ull << 30);
    g_env["ARCHCTL_CONFIG"] = (s / "env.toml").string();
    CHECK(load(o, w)->min_free == 3ull << 30);
    o.config_file = (s / "flag.toml").string();
    CHECK(load(o, w)->min_free == 4ull << 30);
    o.config_file = (s / "missing.toml").string();
    auto missing = load(o, w);
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().message.find("missing.toml") != std::string::npos);
}

TEST_CASE("state dir: flag beats ARCHCTL_STATE beats the user file's state_dir beats XDG_STATE_HOME") {
    test::Scratch s;
    Env env(s);
    auto o = options_for(s);
    o.state_dir.clear();
    std::vector<std::string> w;
    CHECK(load(o, w)->state_dir == (s / ".local/state/archctl").string());
    g_env["XDG_STATE_HOME"] = "/xdg-state";
    CHECK(load(o, w)->state_dir == "/xdg-state/archctl");
    s.write(".config/archctl/config.toml", "state_dir = \"/var/lib/archctl\"\n");
    CHECK(load(o, w)->state_dir == "/var/lib/archctl");
    g_env["ARCHCTL_STATE"] = "/env-state";
    auto c = load(o, w);
    CHECK(c->state_dir == "/env-state");
    CHECK(c->origin.at("state_dir") == "env:ARCHCTL_STATE");
    o.state_dir = "/flag-state";
    CHECK(load(o, w)->state_dir == "/flag-state");
}

TEST_CASE("unknown key warns with the closest known key; unknown table is ignored") {
    test::Scratch s;
    Env env(s);
    std::string user = s.write(".config/archctl/config.toml", "[transfer]\nmin_fre = \"10G\"\n[future]\nx = 1\n").string();
    std::vector<std::string> w;
    auto c = load(options_for(s), w);
    REQUIRE(c.ok());
    REQUIRE(w.size() == 1);
    CHECK(w[0] == "unknown key 'min_fre' in [transfer] of '" + user + "' (did you mean 'min_free'?)");
    CHECK(c->min_free == 2ull << 30);
}

TEST_CASE("a malformed value is an error naming file, line and key") {
    test::Scratch s;
    Env env(s);
    std::string user = s.write(".config/archctl/config.toml",
                               "[transfer]\nmin_free = \"lots\"\n").string();
    std::vector<std::string> w;
    auto c = load(options_for(s), w);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().code == "CONFIG_INVALID");
    CHECK(c.error().message.find("'" + user + "': line 2: transfer.min_free") != std::string::npos);

    s.write(".config/archctl/config.toml", std::string(k_node) + "\n[nodes.nas.qbittorrent.x]\n");
    s.write(".config/archctl/config.toml", "[nodes.nas]\nrole = 3\n");
    auto c2 = load(options_for(s), w);
    REQUIRE_FALSE(c2.ok());
    CHECK(c2.error().message.find("line 2: nodes.nas.role: expected a string") != std::string::npos);

    s.write(".config/archctl/config.toml", "[transfer\nmin_free = 1\n");
    auto c3 = load(options_for(s), w);
    REQUIRE_FALSE(c3.ok());
    CHECK(c3.error().message.find("line 1") != std::string::npos);
}

TEST_CASE("nodes: schema, validation and secrets") {
    test::Scratch s;
    Env env(s);
    std::string user = s.write(".config/archctl/config.toml", k_node).string();
    ::chmod(user.c_str(), 0600);
    std::vector<std::string> w;
    auto c = load(options_for(s), w);
    REQUIRE(c.ok());
    const NodeConfig* nas = c->node("nas");
    REQUIRE(nas);
    CHECK(nas->role == Role::archive);
    CHECK(nas->exec.size() == 5);
    CHECK_FALSE(nas->local());
    CHECK(nas->qbittorrent.username == "ana");
    CHECK(nas->qbittorrent.password.value == "hunter2-distinctive");
    CHECK(c->display.at("nodes.nas.qbittorrent.password") == "<set>");
    CHECK(c->display.at("nodes.nas.syncthing.api_key") == "<set>");
    for (const auto& [k, v] : c->display) CHECK(v.find("distinctive") == std::string::npos);
    CHECK(w.empty());

    ::chmod(user.c_str(), 0644);
    CHECK(load(options_for(s), w).ok());
    REQUIRE(w.size() == 1);
    CHECK(w[0].find("holds secrets and is readable by others") != std::string::npos);
}

TEST_CASE("secrets from files are read, masked and checked for permissions") {
    test::Scratch s;
    Env env(s);
    std::string pw = s.write("nas.qb", "from-file-secret\n").string();
    std::string key = s.write("nas.st", "key-secret").string();
    ::chmod(pw.c_str(), 0600);
    ::chmod(key.c_str(), 0644);
    s.write(".config/archctl/config.toml",
            "[nodes.nas]\nrole=\"cache\"\nqb_root=\"/a\"\nsync_root=\"/b\"\n"
            "[nodes.nas.qbittorrent]\nurl=\"http://x\"\npassword_file=\"" + pw + "\"\n"
            "[nodes.nas.syncthing]\nurl=\"http://y\"\napi_key_file=\"" + key + "\"\n");
    std::vector<std::string> w;
    auto c = load(options_for(s), w);
    REQUIRE(c.ok());
    CHECK(c->node("nas")->qbittorrent.password.value == "from-file-secret");
    CHECK(c->display.at("nodes.nas.qbittorrent.password") == "<set, from password_file " + pw + ">");
    REQUIRE(w.size() == 1);
    CHECK(w[0].find("'" + key + "' is readable by others") != std::string::npos);
}

TEST_CASE("a node missing a required key is named") {
    test::Scratch s;
    Env env(s);
    s.write(".config/archctl/config.toml", "[nodes.box]\nrole=\"cache\"\nqb_root=\"/a\"\nsync_root=\"/b\"\n[nodes.box.qbittorrent]\nurl=\"http://x\"\n");
    std::vector<std::string> w;
    auto c = load(options_for(s), w);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message == "invalid config: node 'box' has no 'syncthing.url'");
    s.write(".config/archctl/config.toml", "[nodes.box]\nrole=\"mirror\"\nqb_root=\"/a\"\nsync_root=\"/b\"\n[nodes.box.qbittorrent]\nurl=\"http://x\"\n[nodes.box.syncthing]\nurl=\"http://y\"\n");
    CHECK(load(options_for(s), w).error().message.find("role 'mirror'") != std::string::npos);
    s.write(".config/archctl/config.toml", "[nodes.box]\nrole=\"cache\"\nqb_root=\"rel\"\nsync_root=\"/b\"\n[nodes.box.qbittorrent]\nurl=\"http://x\"\n[nodes.box.syncthing]\nurl=\"http://y\"\n");
    CHECK(load(options_for(s), w).error().message.find("not an absolute path") != std::string::npos);
    s.write(".config/archctl/config.toml", "[nodes.box]\nrole=\"cache\"\nqb_root=\"/a\"\nsync_root=\"/b\"\nexec=\"ssh box\"\n");
    CHECK(load(options_for(s), w).error().message.find("nodes.box.exec: expected an array of strings") != std::string::npos);
}

TEST_CASE("a bad environment value is an error, never a fallback") {
    test::Scratch s;
    Env env(s);
    g_env["ARCHCTL_MIN_FREE"] = "plenty";
    std::vector<std::string> w;
    auto c = load(options_for(s), w);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message.find("ARCHCTL_MIN_FREE='plenty'") != std::string::npos);
    g_env["ARCHCTL_MIN_FREE"] = "1G";
    g_env["ARCHCTL_PROGRESS"] = "fancy";
    CHECK_FALSE(load(options_for(s), w).ok());
    g_env["ARCHCTL_PROGRESS"] = "line";
    auto ok = load(options_for(s), w);
    REQUIRE(ok.ok());
    CHECK(ok->progress == "line");
    CHECK(ok->origin.at("progress") == "env:ARCHCTL_PROGRESS");
}

TEST_CASE("a node's exec timeout: 20s by default, a duration when set, and a bad one names the key") {
    test::Scratch s;
    Env env(s);
    std::string user = s.write(".config/archctl/config.toml", k_node).string();
    ::chmod(user.c_str(), 0600);
    std::vector<std::string> w;
    auto c = load(options_for(s), w);
    REQUIRE(c.ok());
    CHECK(c->node("nas")->timeout == std::chrono::seconds(20));
    CHECK(c->display.at("nodes.nas.timeout") == "20s");
    CHECK(c->origin.at("nodes.nas.timeout") == "default");

    std::string with = std::string(k_node);
    with.insert(with.find("[nodes.nas.qbittorrent]"), "timeout = \"2m\"\n");
    s.write(".config/archctl/config.toml", with);
    auto c2 = load(options_for(s), w);
    REQUIRE(c2.ok());
    CHECK(c2->node("nas")->timeout == std::chrono::seconds(120));
    CHECK(c2->display.at("nodes.nas.timeout") == "2m");
    CHECK(c2->origin.at("nodes.nas.timeout") == "user:" + user);

    for (const char* bad : {"timeout = \"soon\"", "timeout = \"1s\"", "timeout = -3"}) {
        std::string text = std::string(k_node);
        text.insert(text.find("[nodes.nas.qbittorrent]"), std::string(bad) + "\n");
        s.write(".config/archctl/config.toml", text);
        auto c3 = load(options_for(s), w);
        REQUIRE_FALSE(c3.ok());
        CHECK(c3.error().code == "CONFIG_INVALID");
        CHECK(c3.error().message.find("nodes.nas.timeout") != std::string::npos);
        CHECK(c3.error().message.find('\n') == std::string::npos);
    }
}
