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

#if ARCHCTL_HAVE_ROUTE
Runner register_route(CLI::App& app);
#define ARCHCTL_REGISTER_ROUTE register_route
#else
#define ARCHCTL_REGISTER_ROUTE nullptr
#endif

#if ARCHCTL_HAVE_JOBS
Runner register_plan(CLI::App& app);
Runner register_archive(CLI::App& app);
Runner register_unarchive(CLI::App& app);
Runner register_resume(CLI::App& app);
Runner register_job(CLI::App& app);
#define ARCHCTL_REGISTER_PLAN register_plan
#define ARCHCTL_REGISTER_ARCHIVE register_archive
#define ARCHCTL_REGISTER_UNARCHIVE register_unarchive
#define ARCHCTL_REGISTER_RESUME register_resume
#define ARCHCTL_REGISTER_JOB register_job
#else
#define ARCHCTL_REGISTER_PLAN nullptr
#define ARCHCTL_REGISTER_ARCHIVE nullptr
#define ARCHCTL_REGISTER_UNARCHIVE nullptr
#define ARCHCTL_REGISTER_RESUME nullptr
#define ARCHCTL_REGISTER_JOB nullptr
#endif

#if ARCHCTL_HAVE_EVICT
Runner register_evict(CLI::App& app);
#define ARCHCTL_REGISTER_EVICT register_evict
#else
#define ARCHCTL_REGISTER_EVICT nullptr
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
