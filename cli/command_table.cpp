#include "cli/command_table.hpp"

#include "cli/commands.hpp"

namespace archctl::cli {

const std::vector<CommandSpec>& command_table() {
    static const std::vector<CommandSpec> table = {
        {"plan", Group::porcelain, "show what archive/unarchive/evict would do, with a confirmation token", register_plan, Needs::nodes},
        {"archive", Group::porcelain, "move a resource from a cache node to an archive node", register_archive, Needs::nodes},
        {"unarchive", Group::porcelain, "move a resource from an archive node back to a cache node", register_unarchive, Needs::nodes},
        {"evict", Group::porcelain, "remove a cache copy once archive copies are proven", register_evict, Needs::nodes},
        {"tier", Group::porcelain, "keep a cache node below a free-space goal: archive, prove, evict (config [tier.NAME])", register_tier, Needs::nodes},
        {"resume", Group::porcelain, "drive every unfinished job under this run's budgets", register_resume, Needs::nodes},
        {"status", Group::porcelain, "nodes, routes, placements and jobs", register_status, Needs::config},
        {"route", Group::porcelain, "list, check, provision and remove Syncthing routes", register_route, Needs::state},
        {"job", Group::porcelain, "list, show, cancel, clear and remove jobs", register_job, Needs::state},
        {"config", Group::porcelain, "print every effective setting and the layer that set it", register_config, Needs::nothing},
        {"node", Group::plumbing, "node operations (the exec transport's far end)", register_node, Needs::nothing},
        {"torrent", Group::plumbing, "show, verify and create .torrent files", register_torrent, Needs::nothing},
        {"completion", Group::plumbing, "print the bash, zsh or fish completion script", register_completion, Needs::nothing},
    };
    return table;
}

}  // namespace archctl::cli
