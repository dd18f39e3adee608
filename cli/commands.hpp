#pragma once
// Registration functions of the commands this build has (see command_table.cpp).

#include "cli/command.hpp"

namespace archctl::cli {

Runner register_config(CLI::App& app);

#if ARCHCTL_HAVE_STATUS
Runner register_status(CLI::App& app);
#define ARCHCTL_REGISTER_STATUS register_status
#else
#define ARCHCTL_REGISTER_STATUS nullptr
#endif

#if ARCHCTL_HAVE_NODE
Runner register_node(CLI::App& app);
#define ARCHCTL_REGISTER_NODE register_node
#else
#define ARCHCTL_REGISTER_NODE nullptr
#endif

#if ARCHCTL_HAVE_TORRENT
Runner register_torrent(CLI::App& app);
#define ARCHCTL_REGISTER_TORRENT register_torrent
#else
#define ARCHCTL_REGISTER_TORRENT nullptr
#endif

}  // namespace archctl::cli
