#include "cli/command_table.hpp"

#include "cli/commands.hpp"

namespace archctl::cli {

const std::vector<CommandSpec>& command_table() {
    static const std::vector<CommandSpec> table = {
        {"plan", Group::porcelain, "show what archive/unarchive/evict would do, with a confirmation token", ARCHCTL_REGISTER_PLAN},
        {"archive", Group::porcelain, "move a resource from a cache node to an archive node", ARCHCTL_REGISTER_ARCHIVE},
        {"unarchive", Group::porcelain, "move a resource from an archive node back to a cache node", ARCHCTL_REGISTER_UNARCHIVE},
        {"evict", Group::porcelain, "remove a cache copy once archive copies are proven", ARCHCTL_REGISTER_EVICT},
        {"resume", Group::porcelain, "drive every unfinished job under this run's budgets", ARCHCTL_REGISTER_RESUME},
        {"status", Group::porcelain, "nodes, routes, placements and jobs", ARCHCTL_REGISTER_STATUS},
        {"route", Group::porcelain, "list, check and provision Syncthing routes", ARCHCTL_REGISTER_ROUTE},
        {"job", Group::porcelain, "list, show, cancel, clear and remove jobs", ARCHCTL_REGISTER_JOB},
        {"config", Group::porcelain, "print every effective setting and the layer that set it", register_config},
        {"node", Group::plumbing, "node operations (the exec transport's far end)", ARCHCTL_REGISTER_NODE},
        {"torrent", Group::plumbing, "show, verify and create .torrent files", ARCHCTL_REGISTER_TORRENT},
    };
    return table;
}

}  // namespace archctl::cli
