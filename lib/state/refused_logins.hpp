#pragma once
// Logins a node's qBittorrent refused, remembered across commands (docs/design.md "Credentials
// fail once"): qBittorrent bans an address after a few failed logins (WebUI\MaxAuthenticationFailCount,
// 5 by default), and that ban locks out every other WebUI client on the host too. After one
// refusal archctl does not send the same credentials again until they change or the user asks
// (`archctl node check NODE`).
//
//   <state>/logins/<node>.json   {"salt": hex, "digest": hex, "refused_at": RFC 3339}
//
// The credentials are never stored: the record holds a salted PBKDF2-HMAC-SHA256 digest of the
// username and password, enough to tell "the same credentials" from "changed".
//
//   RefusedLogins logins(dir);
//   if (logins.refused("cache1", user, password)) …;   // refused before: do not send them
//   logins.remember("cache1", user, password);          // durable: temp, fsync, rename, fsync dir
//   logins.forget("cache1");                            // a login succeeded, or the user asked

#include <string>

#include "lib/base/result.hpp"
#include "lib/state/state_dir.hpp"

namespace archctl::state {

class RefusedLogins {
public:
    explicit RefusedLogins(const StateDir& dir) : m_dir(dir) {}

    // Whether `node`'s qBittorrent refused exactly these credentials (no record, an unreadable
    // one or other credentials: false — a record that cannot be read never blocks a login).
    [[nodiscard]] bool refused(const std::string& node, const std::string& username, const std::string& password) const;
    // Record that `node` refused these credentials (replaces an older record).
    [[nodiscard]] Status remember(const std::string& node, const std::string& username, const std::string& password) const;
    // Drop `node`'s record; no record is fine.
    [[nodiscard]] Status forget(const std::string& node) const;
    [[nodiscard]] std::string path_of(const std::string& node) const;

private:
    StateDir m_dir;
};

}  // namespace archctl::state
