#pragma once
// Who may configure archctl (docs/design.md "Configuration"), as git's `safe.directory` and ssh's
// StrictModes: a config file or a state directory counts only when nobody but the user running
// archctl (or root) can change it.
//
// A path is *safe* for the user U when
//   - it is owned by U or by root (root itself accepts only root: a file another user owns is
//     theirs to change, whoever runs archctl);
//   - nobody else can write it: no write bit for others, and no group write bit unless the group
//     is the owner's own private group (its name is the owner's, no other member; the umask 002
//     set-ups of Debian/Ubuntu users);
//   - every directory above it (along the path as named and along its real path, symlinks
//     resolved) is owned by U or root and writable by nobody else, or sticky (/tmp: others may
//     write there but cannot rename or replace what U or root owns), and every symlink on the
//     way is owned by U or root;
//   - for a state directory that does not exist yet, the directory it would be created in is
//     writable by nobody else, sticky or not (anyone could create the name first).
// A config file that does not exist is simply absent: nothing is read from it.
//
// A path listed in the user config's `safe.trusted` (an absolute path, "DIR/*" for everything
// below DIR, or "*" for everything) is used despite its problems and those of the directories
// above it. Only the user config can trust: the state layer is what it would vouch for, and a
// user config cannot trust itself.

#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include "lib/base/result.hpp"

namespace archctl::config {

// The layers archctl reads configuration from or keeps its state in.
enum class LayerKind { user, state_dir, state };
// "user", "state_dir", "state": the layer's name in `archctl config`.
std::string to_string(LayerKind kind);

// One layer as checked: the path, its owner and mode, and what makes it unsafe.
struct Layer {
    LayerKind kind = LayerKind::user;
    std::string path;                   // as named (the config file or the state directory)
    bool exists = false;
    std::string owner;                  // user name (or "uid N") of the path; empty when absent
    unsigned uid = 0;
    unsigned mode = 0;                  // permission bits, e.g. 0644, 01777
    // One sentence each: "owned by nobody, not by root", "'/srv' (owner root, mode 0777) can be
    // written by others"; empty when the layer is safe.
    std::vector<std::string> problems;
    std::vector<std::string> untrusted;  // the problems safe.trusted does not accept
    std::string fix;                    // shell commands that make it safe ("chmod go-w '/x'")
    bool trusted = false;               // has problems, all accepted by safe.trusted
    std::string user_config;            // where safe.trusted would be set (for the message)
    unsigned long long dev = 0, ino = 0;  // the file checked, for read_checked

    // Has problems and is not trusted: archctl does not read or use it.
    bool refused() const { return !untrusted.empty(); }
    // The one-line error for a refused layer: the path, its owner and mode, the problem and the
    // fix ("refusing config '/s/config.toml' (owner nobody, mode 0666): ...; fix: ...").
    Error error() const;
};

// Checks paths for one user against one trust list.
class TrustCheck {
public:
    // `uid`: who archctl runs as; `trusted`: the entries of safe.trusted (validated by
    // validate_trusted); `user_config`: the user config's path, named in the fix.
    TrustCheck(uid_t uid, std::vector<std::string> trusted, std::string user_config);

    // Check `path` as the layer `kind` (a config file for user/state, a directory for state_dir).
    Layer check(LayerKind kind, const std::string& path) const;

private:
    bool trusts(const std::string& target, const std::string& at) const;

    uid_t m_uid;
    std::vector<std::string> m_trusted;
    std::string m_user_config;
};

// safe.trusted's entries, each an absolute path, "DIR/*" or "*", lexically normalised (no
// repeated or trailing '/'); an entry of another form is a CONFIG_INVALID error naming it.
Result<std::vector<std::string>> validate_trusted(const std::vector<std::string>& entries, const std::string& origin);

// The content of the config file `layer` checked, read through one descriptor that must still be
// the file checked (same device and inode) and a regular file or a pipe (`--config <(...)`): a
// file swapped after the check is an error, never read.
Result<std::string> read_checked(const Layer& layer);

}  // namespace archctl::config
