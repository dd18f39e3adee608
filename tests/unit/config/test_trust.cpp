// Who may configure archctl (lib/config/trust.hpp): layers another user owns or others can write
// are refused unless safe.trusted names them; URLs are masked; node roots do not climb.
#include <doctest/doctest.h>

#include <grp.h>
#include <map>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/config/config.hpp"
#include "tests/support/scratch.hpp"

namespace {

using archctl::config::Config;
using archctl::config::Layer;
using archctl::config::LayerKind;
using archctl::config::LoadOptions;
using archctl::config::UnsafeLayers;

std::map<std::string, std::string> g_trust_env;
const char* trust_getenv(const char* name) {
    auto it = g_trust_env.find(name);
    return it == g_trust_env.end() ? nullptr : it->second.c_str();
}

// A scratch directory as HOME, the user file --config'd to <scratch>/user.toml and the state
// directory <scratch>/state.
struct Setup {
    archctl::test::Scratch s;
    LoadOptions options;
    std::string user = (s / "user.toml").string();
    std::string state = (s / "state").string();
    std::vector<std::string> warnings;

    Setup() {
        g_trust_env.clear();
        g_trust_env["HOME"] = s.path().string();
        options.getenv = trust_getenv;
        options.config_file = user;
        options.state_dir = state;
        write(user, "", 0600);
    }
    ~Setup() { g_trust_env.clear(); }

    std::string write(const std::string& path, const std::string& text, mode_t mode) {
        std::string p = s.write(std::filesystem::path(path).lexically_relative(s.path()).string(), text).string();
        ::chmod(p.c_str(), mode);
        return p;
    }
    std::string dir(const std::string& rel, mode_t mode) {
        std::string p = (s / rel).string();
        std::filesystem::create_directories(p);
        ::chmod(p.c_str(), mode);
        return p;
    }
    archctl::Result<Config> load() { return archctl::config::load(options, warnings); }
};

const char* k_hook = "[notify]\nexec = [\"/tmp/evil_hook.sh\"]\n";

bool is_root() { return ::geteuid() == 0; }

void give_to_nobody(const std::string& path) {
    const passwd* nobody = ::getpwnam("nobody");
    REQUIRE(nobody != nullptr);
    REQUIRE(::chown(path.c_str(), nobody->pw_uid, nobody->pw_gid) == 0);
}

std::string me() { return ::getpwuid(::geteuid())->pw_name; }

}  // namespace

TEST_CASE("trust: a state directory others can write is refused with its owner, mode and fix") {
    Setup t;
    t.dir("state", 0777);
    t.write(t.state + "/config.toml", k_hook, 0600);
    auto c = t.load();
    REQUIRE_FALSE(c.ok());
    const std::string& m = c.error().message;
    CHECK(c.error().code == "CONFIG_INVALID");
    CHECK(m.find("refusing state directory '" + t.state + "'") != std::string::npos);
    CHECK(m.find("owner " + me() + ", mode 0777") != std::string::npos);
    CHECK(m.find("others can write it") != std::string::npos);
    CHECK(m.find("chmod go-w '" + t.state + "'") != std::string::npos);
    CHECK(m.find("safe.trusted in '" + t.user + "'") != std::string::npos);
    CHECK(m.find('\n') == std::string::npos);
    CHECK(c.error().hint.empty());
}

TEST_CASE("trust: a state config owned by nobody, mode 0666, is refused (as root too)") {
    if (!is_root()) return;  // only root can give a file away
    Setup t;
    t.dir("state", 0700);
    std::string file = t.write(t.state + "/config.toml", k_hook, 0666);
    give_to_nobody(file);
    auto c = t.load();
    REQUIRE_FALSE(c.ok());
    const std::string& m = c.error().message;
    CHECK(m.find("refusing config '" + file + "' (owner nobody, mode 0666)") != std::string::npos);
    CHECK(m.find("another user (nobody) owns it") != std::string::npos);
    CHECK(m.find("chown root '" + file + "' && chmod go-w '" + file + "'") != std::string::npos);
    // Owned by nobody but writable only by its owner: still another user's file.
    ::chmod(file.c_str(), 0644);
    CHECK_FALSE(t.load().ok());
}

TEST_CASE("trust: a user config others can write, or that another user owns, is refused and cannot trust itself") {
    Setup t;
    t.write(t.user, std::string("[safe]\ntrusted = [\"*\"]\n") + k_hook, 0666);
    auto c = t.load();
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message.find("refusing config '" + t.user + "' (owner " + me() + ", mode 0666): others can write it; fix: chmod go-w '" +
                                 t.user + "'") != std::string::npos);
    CHECK(c.error().message.find("safe.trusted") == std::string::npos);
    if (!is_root()) return;
    ::chmod(t.user.c_str(), 0644);
    give_to_nobody(t.user);
    c = t.load();
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message.find("(owner nobody, mode 0644): another user (nobody) owns it") != std::string::npos);
}

TEST_CASE("trust: a directory above a layer that others can write is named, unless it is sticky") {
    Setup t;
    t.dir("shared", 0777);
    std::string shared = (t.s / "shared").string();
    t.options.config_file = t.write(shared + "/user.toml", "", 0600);
    auto c = t.load();
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message.find("'" + shared + "' above it (owner " + me() + ", mode 0777) can be written by others") != std::string::npos);
    CHECK(c.error().message.find("chmod go-w '" + shared + "'") != std::string::npos);
    // Sticky (as /tmp): nobody else can replace what the user owns there.
    ::chmod(shared.c_str(), 01777);
    CHECK(t.load().ok());
}

TEST_CASE("trust: a state directory is never created in a directory others can write, sticky or not") {
    Setup t;
    std::string tmp = t.dir("tmp", 01777);
    t.options.state_dir = tmp + "/state";
    auto c = t.load();
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message.find("it does not exist and would be created in '" + tmp + "' (owner " + me() + ", mode 1777)") !=
          std::string::npos);
    CHECK(c.error().message.find("mkdir -m 700 '" + tmp + "/state'") != std::string::npos);
    // Created by the user, it is theirs and the sticky directory keeps it so.
    REQUIRE(::mkdir((tmp + "/state").c_str(), 0700) == 0);
    CHECK(t.load().ok());
    // Not yet created in a directory of the user's own: fine (the default case).
    t.options.state_dir = t.state;
    CHECK(t.load().ok());
    // In a non-sticky shared directory the fix is the directory's mode.
    std::string open_dir = t.dir("open", 0777);
    t.options.state_dir = open_dir + "/state";
    c = t.load();
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message.find("chmod go-w '" + open_dir + "'") != std::string::npos);
}

TEST_CASE("trust: safe.trusted in the user config accepts what it names; problems are still listed") {
    Setup t;
    t.dir("state", 0777);
    std::string file = t.write(t.state + "/config.toml", k_hook, 0666);
    t.write(t.user, "[safe]\ntrusted = [\"" + t.state + "\"]\n", 0600);
    auto c = t.load();
    REQUIRE_FALSE(c.ok());  // the directory is trusted, the file in it is not
    CHECK(c.error().message.find("refusing config '" + file + "'") != std::string::npos);
    CHECK(c.error().message.find("can be written by others") == std::string::npos);  // its directory is trusted
    t.write(t.user, "[safe]\ntrusted = [\"" + t.state + "\", \"" + t.state + "/*\"]\n", 0600);
    c = t.load();
    REQUIRE(c.ok());
    CHECK(c->notify_exec == std::vector<std::string>{"/tmp/evil_hook.sh"});
    REQUIRE(c->layers.size() == 3);
    CHECK(c->layers[0].kind == LayerKind::user);
    CHECK(c->layers[0].problems.empty());
    CHECK(c->layers[1].kind == LayerKind::state_dir);
    CHECK(c->layers[1].trusted);
    CHECK(c->layers[1].mode == 0777);
    CHECK_FALSE(c->layers[1].problems.empty());
    CHECK(c->layers[2].trusted);
    CHECK(c->layers[2].mode == 0666);
    CHECK(c->origin.at("safe.trusted") == "user:" + t.user);
    t.write(t.user, "[safe]\ntrusted = [\"*\"]\n", 0600);
    CHECK(t.load().ok());
}

TEST_CASE("trust: safe.trusted is read from the user config only, and its entries are absolute") {
    Setup t;
    t.dir("state", 0700);
    t.write(t.state + "/config.toml", "[safe]\ntrusted = [\"*\"]\n", 0600);
    auto c = t.load();
    REQUIRE(c.ok());
    CHECK(c->trusted.empty());
    REQUIRE(t.warnings.size() == 1);
    CHECK(t.warnings[0].find("'safe.trusted' in '" + t.state + "/config.toml' is ignored") != std::string::npos);
    t.write(t.user, "[safe]\ntrusted = [\"relative/dir\"]\n", 0600);
    c = t.load();
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message.find("safe.trusted entry 'relative/dir' is not an absolute path") != std::string::npos);
    t.write(t.user, "[safe]\ntrusted = [\"/srv//x/\", \"/srv/y/*\"]\n", 0600);
    c = t.load();
    REQUIRE(c.ok());
    CHECK(c->trusted == std::vector<std::string>{"/srv/x", "/srv/y/*"});
}

TEST_CASE("trust: UnsafeLayers::skip leaves a refused layer's values out and reports every layer") {
    Setup t;
    t.dir("state", 0777);
    t.write(t.state + "/config.toml", k_hook, 0666);
    t.options.unsafe = UnsafeLayers::skip;
    auto c = t.load();
    REQUIRE(c.ok());
    CHECK(c->notify_exec.empty());
    CHECK(c->origin.count("notify.exec") == 0);
    REQUIRE(c->layers.size() == 3);
    CHECK_FALSE(c->layers[0].refused());
    CHECK(c->layers[1].refused());
    CHECK(c->layers[2].refused());
    CHECK(c->layers[2].exists);
    CHECK(c->layers[2].mode == 0666);
    auto refused = archctl::config::refusal(c.value());
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.take_error().message.find("refusing state directory") != std::string::npos);
}

TEST_CASE("trust: a symlinked config is checked along its real path too") {
    Setup t;
    std::string open_dir = t.dir("open", 0777);
    std::string real = t.write(open_dir + "/real.toml", "", 0600);
    std::string link = (t.s / "link.toml").string();
    REQUIRE(::symlink(real.c_str(), link.c_str()) == 0);
    t.options.config_file = link;
    auto c = t.load();
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message.find("refusing config '" + link + "'") != std::string::npos);
    CHECK(c.error().message.find("'" + open_dir + "' above it") != std::string::npos);
}

TEST_CASE("trust: group write is accepted only for the owner's private group") {
    if (!is_root()) return;  // chgrp to an arbitrary group needs root
    Setup t;
    // root's own group ("root", gid 0, no other member) is private on Debian.
    const group* root_group = ::getgrgid(0);
    bool private_root = root_group && std::string(root_group->gr_name) == "root" && root_group->gr_mem[0] == nullptr;
    ::chmod(t.user.c_str(), 0660);
    if (private_root) CHECK(t.load().ok());
    const group* other = ::getgrnam("nogroup");
    if (!other) other = ::getgrnam("users");
    REQUIRE(other != nullptr);
    REQUIRE(::chown(t.user.c_str(), 0, other->gr_gid) == 0);
    auto c = t.load();
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message.find("mode 0660): others can write it") != std::string::npos);
}

TEST_CASE("a credential inside a URL is masked in what config shows") {
    using archctl::config::mask_url;
    CHECK(mask_url("http://admin:pw@host:8080") == "http://admin:<set>@host:8080");
    CHECK(mask_url("https://u:p@h/x?token=abc&a=1#f") == "https://u:<set>@h/x?token=<set>&a=<set>#f");
    CHECK(mask_url("http://admin@host/") == "http://admin@host/");
    CHECK(mask_url("http://127.0.0.1:8080") == "http://127.0.0.1:8080");
    CHECK(mask_url("http://h/p@q") == "http://h/p@q");
    Setup t;
    t.write(t.user,
            "[nodes.n]\nrole = \"cache\"\nqb_root = \"/q\"\nsync_root = \"/s\"\n"
            "[nodes.n.qbittorrent]\nurl = \"http://admin:pw-distinctive@host:8080\"\n"
            "[nodes.n.syncthing]\nurl = \"https://k:st-distinctive@host:8384\"\n"
            "[notify]\nurl = \"https://hooks.example/x?key=notify-distinctive\"\n",
            0600);
    auto c = t.load();
    REQUIRE(c.ok());
    CHECK(c->display.at("nodes.n.qbittorrent.url") == "http://admin:<set>@host:8080");
    CHECK(c->display.at("nodes.n.syncthing.url") == "https://k:<set>@host:8384");
    CHECK(c->display.at("notify.url") == "https://hooks.example/x?key=<set>");
    CHECK(c->node("n")->qbittorrent.url == "http://admin:pw-distinctive@host:8080");  // used as written
    t.write(t.user, "[notify]\nurl = \"ftp://u:pw-distinctive@h/\"\n", 0600);
    c = t.load();
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message.find("pw-distinctive") == std::string::npos);
}

TEST_CASE("a node root with a '.' or '..' component is refused at load, naming the key and the fix") {
    Setup t;
    auto node = [&](const std::string& qb_root) {
        t.write(t.user,
                "[nodes.n]\nrole = \"cache\"\nqb_root = \"" + qb_root + "\"\nsync_root = \"/s/\"\n"
                "[nodes.n.qbittorrent]\nurl = \"http://h:1\"\n[nodes.n.syncthing]\nurl = \"http://h:2\"\n",
                0600);
        return t.load();
    };
    auto c = node("/srv/q/../../etc");
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message ==
          "invalid config: nodes.n.qb_root '/srv/q/../../etc' has a '..' component (user:" + t.user +
              "); write the path without it, e.g. '/etc'");
    c = node("/srv/./q");
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message.find("nodes.n.qb_root '/srv/./q' has a '.' component") != std::string::npos);
    c = node("srv/q");
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message.find("nodes.n.qb_root 'srv/q' is not an absolute path") != std::string::npos);
    c = node("/srv/q/");
    REQUIRE(c.ok());
    CHECK(c->node("n")->qb_root == "/srv/q");
    CHECK(c->node("n")->sync_root == "/s");
}

TEST_CASE("trust: a config read from a pipe of the user's own (--config <(...)) is read to its end") {
    Setup t;
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const std::string text = "[transfer]\nmin_free = \"1G\"\n";
    REQUIRE(::write(fds[1], text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    ::close(fds[1]);
    t.options.config_file = "/proc/self/fd/" + std::to_string(fds[0]);
    auto c = t.load();
    ::close(fds[0]);
    REQUIRE(c.ok());
    CHECK(c->min_free == 1ull << 30);
}

TEST_CASE("trust: another user accepts layers root owns, and refuses one a third user owns") {
    if (!is_root()) return;  // the scratch files must belong to root, and one to nobody
    Setup t;
    t.options.uid = 4242;  // archctl run by a user who is not root
    t.dir("state", 0700);
    t.write(t.state + "/config.toml", "", 0644);
    CHECK(t.load().ok());
    give_to_nobody(t.state + "/config.toml");
    auto c = t.load();
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message.find("another user (nobody) owns it; fix: chown 4242 '" + t.state + "/config.toml'") != std::string::npos);
}
