#include "lib/config/trust.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

#include <fmt/format.h>

namespace archctl::config {
namespace {

// A user's name, or "uid N" when the system knows none.
std::string trust_user_name(uid_t uid) {
    std::vector<char> buf(16384);
    passwd pw{};
    passwd* found = nullptr;
    if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found) return found->pw_name;
    return fmt::format("uid {}", uid);
}

// The group is `owner`'s own: its primary group, named as the owner, with no other member.
bool trust_private_group(gid_t gid, uid_t owner) {
    std::vector<char> pbuf(16384), gbuf(65536);
    passwd pw{};
    passwd* pfound = nullptr;
    if (::getpwuid_r(owner, &pw, pbuf.data(), pbuf.size(), &pfound) != 0 || !pfound || pw.pw_gid != gid) return false;
    group gr{};
    group* gfound = nullptr;
    if (::getgrgid_r(gid, &gr, gbuf.data(), gbuf.size(), &gfound) != 0 || !gfound) return false;
    if (std::string(gr.gr_name) != pw.pw_name) return false;
    for (char** m = gr.gr_mem; m && *m; ++m)
        if (std::string(*m) != pw.pw_name) return false;
    return true;
}

bool trust_writable_by_others(const struct stat& st) {
    if (st.st_mode & S_IWOTH) return true;
    return (st.st_mode & S_IWGRP) && !trust_private_group(st.st_gid, st.st_uid);
}

std::string trust_mode(const struct stat& st) { return fmt::format("{:04o}", st.st_mode & 07777); }

std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// `path` made absolute (from the working directory) with repeated '/' and '.' components removed;
// '..' stays (what it means depends on symlinks).
std::string trust_absolute(const std::string& path) {
    std::string full = path;
    if (full.empty() || full[0] != '/') {
        char cwd[PATH_MAX];
        full = std::string(::getcwd(cwd, sizeof cwd) ? cwd : "/") + "/" + full;
    }
    std::string out;
    std::size_t at = 0;
    while (at <= full.size()) {
        std::size_t slash = full.find('/', at);
        std::string part = full.substr(at, slash == std::string::npos ? std::string::npos : slash - at);
        if (!part.empty() && part != ".") out += "/" + part;
        if (slash == std::string::npos) break;
        at = slash + 1;
    }
    return out.empty() ? "/" : out;
}

// The directories above an absolute normalised `path`, nearest first, ending with "/".
std::vector<std::string> trust_parents(const std::string& path) {
    std::vector<std::string> out;
    std::string p = path;
    while (p != "/") {
        std::size_t slash = p.rfind('/');
        p = slash == 0 ? "/" : p.substr(0, slash);
        out.push_back(p);
    }
    return out;
}

std::string trust_realpath(const std::string& path) {
    char* real = ::realpath(path.c_str(), nullptr);
    if (!real) return {};
    std::string out = real;
    std::free(real);
    return out;
}

// What is wrong at one path.
enum class Issue { foreign_owner, writable, creatable, foreign_symlink };

struct Finding {
    Issue issue;
    std::string at;
    struct stat st {};
};

struct Walk {
    uid_t uid;
    std::vector<Finding> findings;
    std::set<std::pair<dev_t, ino_t>> seen;

    bool owner_ok(uid_t owner) const { return owner == uid || owner == 0; }

    // A directory above the layer: changed only by uid or root, or sticky.
    void above(const std::string& dir) {
        struct stat lst {};
        if (::lstat(dir.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode) && !owner_ok(lst.st_uid))
            findings.push_back({Issue::foreign_symlink, dir, lst});
        struct stat st {};
        if (::stat(dir.c_str(), &st) != 0 || !seen.insert({st.st_dev, st.st_ino}).second) return;
        if (!owner_ok(st.st_uid)) findings.push_back({Issue::foreign_owner, dir, st});
        if (trust_writable_by_others(st) && !(st.st_mode & S_ISVTX)) findings.push_back({Issue::writable, dir, st});
    }

    // Every directory above `lexical` and above its real path.
    void all_above(const std::string& lexical) {
        for (const std::string& dir : trust_parents(lexical)) above(dir);
        std::string real = trust_realpath(lexical);
        if (!real.empty())
            for (const std::string& dir : trust_parents(real)) above(dir);
    }
};

std::string problem_text(const Finding& f, const std::string& target) {
    std::string who = fmt::format("(owner {}, mode {})", trust_user_name(f.st.st_uid), trust_mode(f.st));
    bool self = f.at == target;
    switch (f.issue) {
        case Issue::foreign_owner:
            return self ? fmt::format("another user ({}) owns it", trust_user_name(f.st.st_uid))
                        : fmt::format("'{}' above it {} belongs to another user", f.at, who);
        case Issue::writable:
            return self ? "others can write it" : fmt::format("'{}' above it {} can be written by others", f.at, who);
        case Issue::creatable:
            return fmt::format("it does not exist and would be created in '{}' {}, which others can write", f.at, who);
        case Issue::foreign_symlink:
            return fmt::format("the symlink '{}' on its path belongs to another user ({})", f.at, trust_user_name(f.st.st_uid));
    }
    return {};
}

std::string fix_text(const Finding& f, const std::string& target, const std::string& me) {
    bool self = f.at == target;
    switch (f.issue) {
        case Issue::foreign_owner:
            return self ? fmt::format("chown {} {}", me, shell_quote(f.at))
                        : fmt::format("move it out of {}", shell_quote(f.at));
        case Issue::writable: return fmt::format("chmod go-w {}", shell_quote(f.at));
        case Issue::creatable:
            return (f.st.st_mode & S_ISVTX) ? fmt::format("mkdir -m 700 {}", shell_quote(target))
                                            : fmt::format("chmod go-w {}", shell_quote(f.at));
        case Issue::foreign_symlink: return fmt::format("replace the symlink {}", shell_quote(f.at));
    }
    return {};
}

bool trust_matches(const std::string& entry, const std::string& path) {
    if (entry == "*") return true;
    if (entry.size() >= 2 && entry.compare(entry.size() - 2, 2, "/*") == 0) {
        std::string dir = entry.substr(0, entry.size() - 2);
        std::string prefix = dir.empty() ? "/" : dir + "/";
        return path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0;
    }
    return entry == path;
}

}  // namespace

std::string to_string(LayerKind kind) {
    switch (kind) {
        case LayerKind::user: return "user";
        case LayerKind::state_dir: return "state_dir";
        case LayerKind::state: return "state";
    }
    return "user";
}

Error Layer::error() const {
    std::string noun = kind == LayerKind::state_dir ? "state directory" : "config";
    std::string seen = exists ? fmt::format("owner {}, mode {:04o}", owner, mode) : "absent";
    std::string problem;
    for (const std::string& p : untrusted) problem += (problem.empty() ? "" : "; ") + p;
    std::string how = fix;
    if (kind != LayerKind::user)
        how += fmt::format(", or add '{}' to safe.trusted in '{}' if you trust whoever can change it", path, user_config);
    return Error(ErrorCode::CONFIG_INVALID, fmt::format("refusing {} '{}' ({}): {}; fix: {}", noun, path, seen, problem, how));
}

TrustCheck::TrustCheck(uid_t uid, std::vector<std::string> trusted, std::string user_config)
    : m_uid(uid), m_trusted(std::move(trusted)), m_user_config(std::move(user_config)) {}

bool TrustCheck::trusts(const std::string& target, const std::string& at) const {
    // An entry vouches for the path it names and for the directories above it: it trusts a
    // finding at `at` when it names `target` or a directory between `at` and `target`.
    for (const std::string& entry : m_trusted) {
        for (const std::string& path : {trust_absolute(target), trust_realpath(target)}) {
            if (path.empty()) continue;
            if (trust_matches(entry, path)) return true;
            for (const std::string& dir : trust_parents(path)) {
                if (dir.size() < at.size()) break;
                if (trust_matches(entry, dir) && dir.compare(0, at.size(), at) == 0) return true;
            }
        }
    }
    return false;
}

Layer TrustCheck::check(LayerKind kind, const std::string& path) const {
    Layer layer;
    layer.kind = kind;
    layer.path = path;
    layer.user_config = m_user_config;
    std::string lexical = trust_absolute(path);
    Walk walk{m_uid, {}, {}};
    struct stat st {};
    if (::stat(lexical.c_str(), &st) == 0) {
        layer.exists = true;
        layer.uid = st.st_uid;
        layer.owner = trust_user_name(st.st_uid);
        layer.mode = st.st_mode & 07777;
        layer.dev = st.st_dev;
        layer.ino = st.st_ino;
        walk.seen.insert({st.st_dev, st.st_ino});
        if (!walk.owner_ok(st.st_uid)) walk.findings.push_back({Issue::foreign_owner, lexical, st});
        if (trust_writable_by_others(st)) walk.findings.push_back({Issue::writable, lexical, st});
        struct stat lst {};
        if (::lstat(lexical.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode) && !walk.owner_ok(lst.st_uid))
            walk.findings.push_back({Issue::foreign_symlink, lexical, lst});
        walk.all_above(lexical);
    } else if (kind == LayerKind::state_dir) {
        // Created on first use: the directory it would be created in must let nobody else in.
        for (const std::string& dir : trust_parents(lexical)) {
            struct stat parent {};
            if (::stat(dir.c_str(), &parent) != 0) continue;
            walk.seen.insert({parent.st_dev, parent.st_ino});
            if (!walk.owner_ok(parent.st_uid)) walk.findings.push_back({Issue::foreign_owner, dir, parent});
            if (trust_writable_by_others(parent)) walk.findings.push_back({Issue::creatable, dir, parent});
            walk.all_above(dir);
            break;
        }
    }
    std::string me = trust_user_name(m_uid);
    if (me.rfind("uid ", 0) == 0) me = std::to_string(m_uid);  // what chown takes for a user without a name
    std::vector<std::string> fixes;
    for (const Finding& f : walk.findings) {
        // Named as the layer's path when the finding is the layer itself.
        Finding shown = f;
        if (f.at == lexical) shown.at = path;
        layer.problems.push_back(problem_text(shown, path));
        if (kind != LayerKind::user && trusts(lexical, f.at)) continue;
        layer.untrusted.push_back(layer.problems.back());
        std::string fix = fix_text(shown, path, me);
        if (std::find(fixes.begin(), fixes.end(), fix) == fixes.end()) fixes.push_back(fix);
    }
    for (const std::string& fix : fixes) layer.fix += (layer.fix.empty() ? "" : " && ") + fix;
    layer.trusted = !layer.problems.empty() && layer.untrusted.empty();
    return layer;
}

Result<std::vector<std::string>> validate_trusted(const std::vector<std::string>& entries, const std::string& origin) {
    std::vector<std::string> out;
    for (const std::string& entry : entries) {
        if (entry == "*") {
            out.push_back(entry);
            continue;
        }
        if (entry.empty() || entry[0] != '/')
            return Error(ErrorCode::CONFIG_INVALID,
                         fmt::format("invalid config: safe.trusted entry '{}' is not an absolute path ({}); write a path such as "
                                     "\"/srv/archctl\", \"/srv/archctl/*\" for everything below it, or \"*\"",
                                     entry, origin));
        bool below = entry.size() >= 2 && entry.compare(entry.size() - 2, 2, "/*") == 0;
        std::string base = trust_absolute(below ? entry.substr(0, entry.size() - 2) : entry);
        out.push_back(below ? (base == "/" ? "/*" : base + "/*") : base);
    }
    return out;
}

Result<std::string> read_checked(const Layer& layer) {
    int fd = ::open(layer.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return Error(ErrorCode::CONFIG_INVALID, fmt::format("cannot read config '{}': {}", layer.path, std::strerror(errno)));
    struct stat st {};
    std::string content;
    Status status;
    if (::fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))) {
        status = Error(ErrorCode::CONFIG_INVALID, fmt::format("cannot read config '{}': not a regular file", layer.path),
                       "point the config at a regular file");
    } else if (static_cast<unsigned long long>(st.st_dev) != layer.dev || static_cast<unsigned long long>(st.st_ino) != layer.ino) {
        status = Error(ErrorCode::CONFIG_INVALID,
                       fmt::format("cannot read config '{}': it was replaced while archctl checked it; run the command again", layer.path));
    } else {
        // Opened without blocking (a FIFO without a writer would hang the open); a pipe such as
        // `--config <(...)` is then read to its end.
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        char buf[65536];
        for (;;) {
            ssize_t n = ::read(fd, buf, sizeof buf);
            if (n > 0) {
                content.append(buf, static_cast<std::size_t>(n));
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0)
                status = Error(ErrorCode::CONFIG_INVALID, fmt::format("cannot read config '{}': {}", layer.path, std::strerror(errno)));
            break;
        }
    }
    ::close(fd);
    if (!status.ok()) return status.take_error();
    return content;
}

}  // namespace archctl::config
