#pragma once
// Registration functions of every command (see command_table.cpp).

#include "cli/command.hpp"

namespace archctl::cli {

Runner register_plan(CLI::App& app);
Runner register_archive(CLI::App& app);
Runner register_unarchive(CLI::App& app);
Runner register_evict(CLI::App& app);
Runner register_resume(CLI::App& app);
Runner register_tier(CLI::App& app);
Runner register_status(CLI::App& app);
Runner register_route(CLI::App& app);
Runner register_job(CLI::App& app);
Runner register_config(CLI::App& app);
Runner register_node(CLI::App& app);
Runner register_torrent(CLI::App& app);
Runner register_completion(CLI::App& app);

}  // namespace archctl::cli
