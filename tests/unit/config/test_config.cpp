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

TEST_CASE("qbittorrent.bt_backup is a clean absolute node path, and optional") {
    test::Scratch s;
    Env env(s);
    std::vector<std::string> w;
    const std::string node = "[nodes.box]\nrole=\"cache\"\nqb_root=\"/a\"\nsync_root=\"/b\"\n[nodes.box.syncthing]\nurl=\"http://y\"\n"
                             "[nodes.box.qbittorrent]\nurl=\"http://x\"\n";
    s.write(".config/archctl/config.toml", node);
    auto plain = load(options_for(s), w);
    REQUIRE(plain.ok());
    CHECK(plain->nodes.at("box").qbittorrent.bt_backup.empty());
    s.write(".config/archctl/config.toml", node + "bt_backup=\"/home/q/.local/share/qBittorrent/BT_backup/\"\n");
    auto set = load(options_for(s), w);
    REQUIRE(set.ok());
    CHECK(set->nodes.at("box").qbittorrent.bt_backup == "/home/q/.local/share/qBittorrent/BT_backup");
    s.write(".config/archctl/config.toml", node + "bt_backup=\"BT_backup\"\n");
    auto relative = load(options_for(s), w);
    REQUIRE_FALSE(relative.ok());
    CHECK(relative.error().message.find("nodes.box.qbittorrent.bt_backup 'BT_backup' is not an absolute path") != std::string::npos);
    s.write(".config/archctl/config.toml", node + "bt_backup=\"/q/../BT_backup\"\n");
    CHECK_FALSE(load(options_for(s), w).ok());
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

TEST_CASE("a node's qBittorrent export timeout: 10m by default, a duration when set, and a bad one names the key") {
    test::Scratch s;
    Env env(s);
    std::string user = s.write(".config/archctl/config.toml", k_node).string();
    ::chmod(user.c_str(), 0600);
    std::vector<std::string> w;
    auto c = load(options_for(s), w);
    REQUIRE(c.ok());
    CHECK(c->node("nas")->qbittorrent.export_timeout == std::chrono::seconds(600));
    CHECK(c->display.at("nodes.nas.qbittorrent.export_timeout") == "10m");
    CHECK(c->origin.at("nodes.nas.qbittorrent.export_timeout") == "default");

    std::string with = std::string(k_node);
    with.insert(with.find("[nodes.nas.syncthing]"), "export_timeout = \"45m\"\n");
    s.write(".config/archctl/config.toml", with);
    auto c2 = load(options_for(s), w);
    REQUIRE(c2.ok());
    CHECK(w.empty());
    CHECK(c2->node("nas")->qbittorrent.export_timeout == std::chrono::seconds(45 * 60));
    CHECK(c2->display.at("nodes.nas.qbittorrent.export_timeout") == "45m");
    CHECK(c2->origin.at("nodes.nas.qbittorrent.export_timeout") == "user:" + user);

    for (const char* bad : {"export_timeout = \"soon\"", "export_timeout = \"0s\"", "export_timeout = -3"}) {
        std::string text = std::string(k_node);
        text.insert(text.find("[nodes.nas.syncthing]"), std::string(bad) + "\n");
        s.write(".config/archctl/config.toml", text);
        auto c3 = load(options_for(s), w);
        REQUIRE_FALSE(c3.ok());
        CHECK(c3.error().code == "CONFIG_INVALID");
        CHECK(c3.error().message.find("nodes.nas.qbittorrent.export_timeout") != std::string::npos);
        CHECK(c3.error().message.find('\n') == std::string::npos);
    }
}

namespace {

const char* k_two_nodes = R"(
[nodes.seedbox]
role = "cache"
qb_root = "/srv/qb"
sync_root = "/srv/sync"
[nodes.seedbox.qbittorrent]
url = "http://127.0.0.1:8080"
[nodes.seedbox.syncthing]
url = "http://127.0.0.1:8384"
[nodes.nas]
role = "archive"
qb_root = "/tank/qb"
sync_root = "/tank/sync"
[nodes.nas.qbittorrent]
url = "http://10.0.0.8:8080"
[nodes.nas.syncthing]
url = "http://10.0.0.8:8384"
)";

const char* k_tier = R"(
[tier.seedbox]
cache = "seedbox"
archive = ["nas"]
keep_free = "200G"
archive_when = { completed_before = "14d", min_ratio = 2, inactive_for = "3d", min_seeding_time = "2w", larger_than = "1G", categories = ["tv", "movies"], tags = ["done"], names = ["Show*"], any = true }
exclude = { categories = ["keep"], tags = ["pinned"], names = ["*sample*"] }
order = "largest"
evict = "always"
)";

// The two nodes plus `tier` (a whole [tier.x] text) as the user file; the result of loading it.
Result<Config> load_tier(const test::Scratch& s, const std::string& tier, std::vector<std::string>& warnings) {
    s.write(".config/archctl/config.toml", std::string(k_two_nodes) + tier);
    return load(options_for(s), warnings);
}

// A minimal valid [tier.t] with `line` appended (a later key of the same name is a TOML error, so
// the callers replace lines instead).
std::string minimal_tier(const std::string& cache = "cache = \"seedbox\"", const std::string& archive = "archive = [\"nas\"]",
                         const std::string& goal = "keep_free = \"10G\"",
                         const std::string& when = "archive_when = { completed_before = \"14d\" }",
                         const std::string& extra = "") {
    return "\n[tier.t]\n" + cache + "\n" + archive + "\n" + goal + "\n" + when + "\n" + extra + "\n";
}

}  // namespace

TEST_CASE("tier: a full policy with inline tables parses, and config shows every key with its origin") {
    test::Scratch s;
    Env env(s);
    std::vector<std::string> w;
    auto c = load_tier(s, k_tier, w);
    REQUIRE(c.ok());
    CHECK(w.empty());
    REQUIRE(c->tiers.count("seedbox") == 1);
    const TierPolicy& t = c->tiers.at("seedbox");
    CHECK(t.name == "seedbox");
    CHECK(t.cache == "seedbox");
    CHECK(t.archive == std::vector<std::string>{"nas"});
    CHECK(t.keep_free == std::optional<std::uint64_t>(200ull << 30));
    CHECK_FALSE(t.max_used.has_value());
    CHECK(t.order == TierOrder::largest);
    CHECK(t.evict == TierEvict::always);
    const Criteria& a = t.archive_when;
    REQUIRE(a.completed_before.has_value());
    CHECK(a.completed_before->age_s == 14 * 86400);
    CHECK(a.completed_before->text == "14d");
    CHECK(a.min_ratio == std::optional<double>(2.0));
    CHECK(a.inactive_for_s == std::optional<std::int64_t>(3 * 86400));
    CHECK(a.min_seeding_time_s == std::optional<std::int64_t>(14 * 86400));
    CHECK(a.larger_than == std::optional<std::uint64_t>(1ull << 30));
    CHECK(a.categories == std::vector<std::string>{"tv", "movies"});
    CHECK(a.tags == std::vector<std::string>{"done"});
    CHECK(a.names == std::vector<std::string>{"Show*"});
    CHECK(a.any);
    CHECK_FALSE(a.all);
    CHECK(a.exclude_categories == std::vector<std::string>{"keep"});
    CHECK(a.exclude_tags == std::vector<std::string>{"pinned"});
    CHECK(a.exclude_names == std::vector<std::string>{"*sample*"});

    std::string user = "user:" + (s / ".config/archctl/config.toml").string();
    for (const char* key : {"cache", "archive", "keep_free", "order", "evict", "archive_when.completed_before",
                            "archive_when.min_ratio", "archive_when.inactive_for", "archive_when.min_seeding_time",
                            "archive_when.larger_than", "archive_when.categories", "archive_when.tags",
                            "archive_when.names", "archive_when.any", "exclude.categories", "exclude.tags", "exclude.names"}) {
        std::string full = std::string("tier.seedbox.") + key;
        CAPTURE(full);
        REQUIRE(c->display.count(full) == 1);
        CHECK(c->origin.at(full) == user);
    }
    CHECK(c->display.at("tier.seedbox.keep_free") == "200.0 GiB");
    CHECK(c->display.at("tier.seedbox.archive") == "[\"nas\"]");
    CHECK(c->display.at("tier.seedbox.archive_when.min_ratio") == "2.0");
    CHECK(c->display.at("tier.seedbox.archive_when.completed_before") == "14d");
    CHECK(c->display.at("tier.seedbox.order") == "largest");
}

TEST_CASE("tier: max_used goal, dotted tables, float ratio, dates, and defaults shown") {
    test::Scratch s;
    Env env(s);
    std::vector<std::string> w;
    auto c = load_tier(s, R"(
[tier.box]
cache = "seedbox"
archive = ["nas"]
max_used = "80%"
[tier.box.archive_when]
completed_before = "2026-01-31T12:00:00Z"
min_ratio = 1.5
[tier.box.exclude]
tags = ["pinned"]
)", w);
    REQUIRE(c.ok());
    CHECK(w.empty());
    const TierPolicy& t = c->tiers.at("box");
    REQUIRE(t.max_used.has_value());
    CHECK(*t.max_used == doctest::Approx(0.8));
    CHECK_FALSE(t.keep_free.has_value());
    CHECK(t.archive_when.completed_before->epoch == 1769860800);
    CHECK(t.archive_when.min_ratio == std::optional<double>(1.5));
    CHECK_FALSE(t.archive_when.any);
    CHECK(t.order == TierOrder::oldest);
    CHECK(t.evict == TierEvict::to_goal);
    CHECK(c->display.at("tier.box.max_used") == "80%");
    CHECK(c->display.at("tier.box.archive_when.min_ratio") == "1.5");
    CHECK(c->display.at("tier.box.order") == "oldest");
    CHECK(c->origin.at("tier.box.order") == "default");
    CHECK(c->display.at("tier.box.evict") == "to_goal");
    CHECK(c->origin.at("tier.box.evict") == "default");
    CHECK(to_string(TierOrder::least_active) == "least_active");
    CHECK(to_string(TierEvict::never) == "never");
}

TEST_CASE("tier: no [tier.*] tables means no tiers") {
    test::Scratch s;
    Env env(s);
    std::vector<std::string> w;
    auto c = load_tier(s, "", w);
    REQUIRE(c.ok());
    CHECK(c->tiers.empty());
}

TEST_CASE("tier: each invalid policy is refused with a message naming the key and the fix") {
    test::Scratch s;
    Env env(s);
    std::vector<std::string> w;
    std::string user = (s / ".config/archctl/config.toml").string();
    auto error_of = [&](const std::string& tier) {
        auto c = load_tier(s, tier, w);
        REQUIRE_FALSE(c.ok());
        CHECK(c.error().code == "CONFIG_INVALID");
        return c.error();
    };
    REQUIRE(load_tier(s, minimal_tier(), w).ok());

    Error e = error_of(minimal_tier("# no cache"));
    CHECK(e.message == "invalid config: tier 't' has no 'cache'");
    CHECK(e.hint == "set tier.t.cache to a cache node's name (cache nodes: seedbox)");
    e = error_of(minimal_tier("cache = \"ghost\""));
    CHECK(e.message == "invalid config: tier.t.cache 'ghost' names 'ghost', which is not a configured node (user:" + user + ")");
    CHECK(e.hint == "set tier.t.cache to a cache node's name (cache nodes: seedbox)");
    e = error_of(minimal_tier("cache = \"nas\""));
    CHECK(e.message == "invalid config: tier.t.cache 'nas' names 'nas', which is an archive node, not a cache node (user:" + user + ")");

    e = error_of(minimal_tier("cache = \"seedbox\"", "archive = []"));
    CHECK(e.message == "invalid config: tier 't' has no 'archive'");
    CHECK(e.hint == "set tier.t.archive = [\"NODE\"] to archive nodes (archive nodes: nas)");
    e = error_of(minimal_tier("cache = \"seedbox\"", "archive = [\"nas\", \"seedbox\"]"));
    CHECK(e.message == "invalid config: tier.t.archive [\"nas\", \"seedbox\"] names 'seedbox', which is a cache node, not an archive node (user:" + user + ")");
    CHECK(e.hint == "set tier.t.archive to an archive node's name (archive nodes: nas)");
    e = error_of(minimal_tier("cache = \"seedbox\"", "archive = \"nas\""));
    CHECK(e.message == "cannot read config '" + user + "': line 21: tier.t.archive: expected an array of strings");

    e = error_of(minimal_tier("cache = \"seedbox\"", "archive = [\"nas\"]", "# no goal"));
    CHECK(e.message == "invalid config: tier 't' has no goal");
    CHECK(e.hint == "set exactly one of tier.t.keep_free = \"200G\" or tier.t.max_used = \"80%\"");
    e = error_of(minimal_tier("cache = \"seedbox\"", "archive = [\"nas\"]", "keep_free = \"1G\"\nmax_used = \"50%\""));
    CHECK(e.message == "invalid config: tier 't' sets both keep_free and max_used");
    for (const char* bad : {"100%", "0%", "80", "-5%", "eighty%"}) {
        CAPTURE(bad);
        e = error_of(minimal_tier("cache = \"seedbox\"", "archive = [\"nas\"]", std::string("max_used = \"") + bad + "\""));
        CHECK(e.message == std::string("invalid config: tier.t.max_used '") + bad + "' is not a percentage between 0% and 100% (user:" + user + ")");
        CHECK(e.hint == "set tier.t.max_used to a percentage such as \"80%\"");
    }

    std::string when_empty = "invalid config: tier.t.archive_when selects nothing; set e.g. completed_before = \"14d\"";
    e = error_of(minimal_tier("cache = \"seedbox\"", "archive = [\"nas\"]", "keep_free = \"1G\"", "# no archive_when"));
    CHECK(e.message == when_empty);
    e = error_of(minimal_tier("cache = \"seedbox\"", "archive = [\"nas\"]", "keep_free = \"1G\"",
                              "archive_when = { any = true }\nexclude = { categories = [\"keep\"] }"));
    CHECK(e.message == when_empty);
    e = error_of(minimal_tier("cache = \"seedbox\"", "archive = [\"nas\"]", "keep_free = \"1G\"",
                              "archive_when = { completed_before = \"last week\" }"));
    CHECK(e.message == "invalid config: tier.t.archive_when.completed_before 'last week' is not an age or a date (user:" + user + ")");
    CHECK(e.hint == "set tier.t.archive_when.completed_before to an age such as \"14d\" or a UTC date such as \"2026-01-31\"");
    e = error_of(minimal_tier("cache = \"seedbox\"", "archive = [\"nas\"]", "keep_free = \"1G\"",
                              "archive_when = { min_ratio = \"2\" }"));
    CHECK(e.message == "cannot read config '" + user + "': line 23: tier.t.archive_when.min_ratio: expected a number such as 2 or 1.5");
    e = error_of(minimal_tier("cache = \"seedbox\"", "archive = [\"nas\"]", "keep_free = \"1G\"",
                              "archive_when = { min_ratio = -1.0 }"));
    CHECK(e.message == "invalid config: tier.t.archive_when.min_ratio '-1.0' is not a ratio of 0 or more (user:" + user + ")");
    CHECK(e.hint == "set tier.t.archive_when.min_ratio to a ratio such as 2.0");
    e = error_of(minimal_tier("cache = \"seedbox\"", "archive = [\"nas\"]", "keep_free = \"1G\"",
                              "archive_when = { min_ratio = nan }"));
    CHECK(e.message.find("min_ratio 'nan' is not a ratio of 0 or more") != std::string::npos);

    e = error_of(minimal_tier("cache = \"seedbox\"", "archive = [\"nas\"]", "keep_free = \"1G\"",
                              "archive_when = { completed_before = \"14d\" }", "order = \"newest\""));
    CHECK(e.message == "invalid config: tier.t.order 'newest' is not one of oldest, largest, least_active (user:" + user + ")");
    CHECK(e.hint == "set tier.t.order to one of oldest, largest, least_active");
    e = error_of(minimal_tier("cache = \"seedbox\"", "archive = [\"nas\"]", "keep_free = \"1G\"",
                              "archive_when = { completed_before = \"14d\" }", "evict = \"sometimes\""));
    CHECK(e.message == "invalid config: tier.t.evict 'sometimes' is not one of to_goal, always, never (user:" + user + ")");
}

TEST_CASE("tier: an unknown key warns with the closest known key") {
    test::Scratch s;
    Env env(s);
    std::vector<std::string> w;
    std::string user = (s / ".config/archctl/config.toml").string();
    auto c = load_tier(s, minimal_tier("cache = \"seedbox\"", "archive = [\"nas\"]", "keep_free = \"1G\"",
                                       "archive_when = { completed_befor = \"14d\", min_ratio = 2 }", "ordr = \"oldest\""), w);
    REQUIRE(c.ok());
    REQUIRE(w.size() == 2);
    CHECK(w[0] == "unknown key 'completed_befor' in [tier.t.archive_when] of '" + user + "' (did you mean 'completed_before'?)");
    CHECK(w[1] == "unknown key 'ordr' in [tier.t] of '" + user + "' (did you mean 'order'?)");
}

TEST_CASE("parse_time_bound: ages and UTC dates") {
    auto age = parse_time_bound("14d");
    REQUIRE(age.ok());
    CHECK(age->age_s == 14 * 86400);
    CHECK(age->epoch == -1);
    CHECK(age->set());
    CHECK(age->text == "14d");
    CHECK(age->resolve(1'000'000'000) == 1'000'000'000 - 14 * 86400);
    CHECK(parse_time_bound("12h")->age_s == 12 * 3600);
    CHECK(parse_time_bound("30m")->age_s == 1800);
    CHECK(parse_time_bound("2w")->age_s == 14 * 86400);
    CHECK(parse_time_bound("90")->age_s == 90);

    auto date = parse_time_bound("2026-01-31");
    REQUIRE(date.ok());
    CHECK(date->epoch == 1769817600);
    CHECK(date->age_s == -1);
    CHECK(date->resolve(5) == 1769817600);
    CHECK(parse_time_bound("2026-01-31T12:00:00Z")->epoch == 1769860800);
    CHECK(parse_time_bound("1970-01-01")->epoch == 0);
    CHECK(parse_time_bound("2024-02-29")->epoch == 1709164800);

    for (const char* bad : {"", "soon", "14y", "2026-02-30", "2026-13-01", "2026-1-31", "2026-01-31T12:00:00",
                            "2026-01-31 12:00:00Z", "2026-01-31T25:00:00Z", "-3d"}) {
        CAPTURE(bad);
        auto r = parse_time_bound(bad);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().message == std::string("invalid time '") + bad +
                                       "': expected an age such as 14d, 12h or 30m, or a UTC date such as 2026-01-31 or "
                                       "2026-01-31T12:00:00Z");
    }
    TimeBound none;
    CHECK_FALSE(none.set());
}

TEST_CASE("Criteria::empty: exclusions alone select nothing") {
    Criteria c;
    CHECK(c.empty());
    c.exclude_categories = {"keep"};
    c.any = true;
    CHECK(c.empty());
    c.all = true;
    CHECK_FALSE(c.empty());
    Criteria r;
    r.min_ratio = 1.0;
    CHECK_FALSE(r.empty());
}

TEST_CASE("a size in a config file needs its unit; 0 and unit-bearing strings are accepted") {
    test::Scratch s;
    Env env(s);
    std::vector<std::string> w;
    for (const char* bare : {"[transfer]\nmin_free = 5\n", "[transfer]\nmin_free = \"5\"\n"}) {
        s.write(".config/archctl/config.toml", bare);
        auto c = load(options_for(s), w);
        REQUIRE_FALSE(c.ok());
        CHECK(c.error().message.find("line 2: transfer.min_free: a size needs a unit") != std::string::npos);
        CHECK(c.error().message.find("\"5B\" for 5 bytes") != std::string::npos);
    }
    s.write(".config/archctl/config.toml", "[transfer]\nmin_free = 0\n");
    CHECK(load(options_for(s), w)->min_free == 0);
    s.write(".config/archctl/config.toml", "[transfer]\nmin_free = \"5B\"\n");
    CHECK(load(options_for(s), w)->min_free == 5);
    s.write(".config/archctl/config.toml", "[transfer]\nmin_free = \"1G\"\n");
    CHECK(load(options_for(s), w)->min_free == 1ull << 30);
}
