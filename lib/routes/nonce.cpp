#include "lib/routes/nonce.hpp"

#include <fmt/format.h>

#include "lib/base/clock.hpp"
#include "lib/node/client/ops.hpp"
#include "lib/routes/naming.hpp"
#include "lib/state/state_dir.hpp"

namespace archctl::routes {
namespace {

std::string full_path(const NonceFile& n) { return n.folder_path + "/" + n.name; }

}  // namespace

NonceFile make_nonce(const std::string& route_id, const std::string& writer, const std::string& folder_path) {
    NonceFile n;
    n.folder_path = folder_path;
    n.name = fmt::format(".archctl-nonce-{}", id_component(writer));
    n.content = fmt::format("archctl route nonce\nroute {}\nwriter {}\nat {}\nvalue {}\n", route_id, writer,
                            format_rfc3339(system_now()), state::random_hex(32));
    return n;
}

Status write_nonce(session::NodeSession& link, const NonceFile& n) {
    ARCHCTL_TRY_ASSIGN(node::Transport * t, link.ops());
    ARCHCTL_TRY_STATUS(node::Ops(*t).nonce_write({.path = full_path(n), .content = n.content, .create_parents = false}));
    return ok_status();
}

Result<bool> observe_nonce(session::NodeSession& link, const NonceFile& n) {
    ARCHCTL_TRY_ASSIGN(node::Transport * t, link.ops());
    ARCHCTL_TRY_ASSIGN(node::NonceObserveResult seen, node::Ops(*t).nonce_observe({.path = full_path(n)}));
    return seen.present && seen.content == n.content;
}

}  // namespace archctl::routes
