#pragma once
// What commands that reach nodes work with, built once per invocation by Context::services():
// the configured nodes (one connection set per node for the whole run), the progress panel, the
// planners (TransferPlanner for archive/unarchive, Evictor for evict) and the job driver.

#include <functional>
#include <memory>
#include <string>

#include "lib/clients/qbittorrent/client.hpp"
#include "lib/config/config.hpp"
#include "lib/jobs/core/driver.hpp"
#include "lib/jobs/transfer/planner.hpp"
#include "lib/jobs/evict/evictor.hpp"
#include "lib/jobs/core/nodes.hpp"
#include "lib/state/state_dir.hpp"
#include "lib/ui/progress.hpp"

namespace archctl::cli {

struct Services {
    const config::Config* config = nullptr;
    const state::StateDir* state = nullptr;
    std::unique_ptr<jobs::Nodes> nodes;
    std::unique_ptr<ui::ProgressRenderer> progress;
    jobs::JobIo io;
    std::unique_ptr<jobs::transfer::TransferPlanner> transfers;
    std::unique_ptr<jobs::evict::Evictor> evictor;
    std::unique_ptr<jobs::Driver> driver;
};

// qBittorrent's refused logins, remembered in the state directory's logins/ for every command
// that reaches nodes (state/refused_logins.hpp); a record that cannot be written is `warn`ed.
[[nodiscard]] std::shared_ptr<const clients::qbittorrent::LoginRecords> login_records(const state::StateDir& dir,
                                                                                     std::function<void(const std::string&)> warn);

}  // namespace archctl::cli
