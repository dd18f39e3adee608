#pragma once
// The command interface every cli/<cmd>.cpp implements (docs/style.md "Practices" 1, 2, 5).
//
// A command file defines an options struct, `Runner register_<cmd>(CLI::App& app)` that adds its
// options/subcommands to `app` and returns the runner bound to them, and `run_<cmd>(Context&,
// const Options&)` that calls one library function and renders. The command table
// (command_table.cpp) lists every command once; help, completions and the man-page check read it.

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/output.hpp"
#include "lib/base/result.hpp"

namespace archctl::config { struct Config; }
namespace archctl::state { class StateDir; }

namespace archctl::cli {

// Flags common to every command (docs/design.md "Configuration").
struct GlobalOptions {
    std::string config_file;  // --config: replaces the user-file layer
    std::string state_dir;    // --state
    bool json = false;        // --json
    bool quiet = false;       // -q
    int verbose = 0;          // -v (repeatable)
    bool yes = false;         // --yes, where a command asks
};

// What a command ended with. main.cpp maps it to an exit code in one place:
// done 0, partial 10, error 1, usage 2.
enum class ExitKind { done, partial, error, usage };

struct Outcome {
    ExitKind kind = ExitKind::done;
    nlohmann::json result = nlohmann::json::object();  // merged into the --json document
    std::optional<Error> error;                        // set for error/usage
    std::string stop_reason;                           // set for partial: why it stopped
    std::string resume_hint;                           // set for partial: how to continue
    // Members of the --json document too large to hold as one JSON value (a million-entry file
    // list): each function writes its member's value to the stream as the document's dump(2)
    // would at nesting level 1. main.cpp writes them in key order among the others.
    std::map<std::string, std::function<void(std::FILE*)>> streamed;

    static Outcome done(nlohmann::json result = nlohmann::json::object());
    static Outcome failed(Error error, nlohmann::json result = nlohmann::json::object());
    static Outcome usage(Error error);
    static Outcome partial(std::string reason, std::string hint,
                           nlohmann::json result = nlohmann::json::object());
};

// What a command needs set up before it runs: the command table's "needs" column. Each level
// includes the ones before it; main.cpp sets them up (and reports their errors) before the
// runner starts, so a runner only parses, calls the library and renders.
enum class Needs {
    nothing,  // plumbing that runs without a configuration (node, torrent, config itself)
    config,   // the effective configuration
    state,    // and the state directory
    nodes,    // and the configured nodes with the transfer planner, the evictor and the job driver
};

struct Services;  // cli/services.hpp

// Per-invocation services handed to a runner.
class Context {
public:
    Context(const GlobalOptions& global, Output& out);
    ~Context();

    const GlobalOptions& global() const { return m_global; }
    Output& out() { return m_out; }

    // The effective configuration (all layers), loaded once on first use. Warnings go to stderr.
    Result<const config::Config*> config();
    // A command's --min-free flag: the flag layer of transfer.min_free. Set before config().
    void set_flag_min_free(std::uint64_t bytes) { m_flag_min_free = bytes; }
    // The state directory, opened once on first use.
    Result<const state::StateDir*> state();
    // Nodes, progress, transfer planner, evictor and driver, built once on first use.
    Result<Services*> services();
    // Set up what `needs` names (main.cpp, before the runner).
    [[nodiscard]] Status prepare(Needs needs);

private:
    const GlobalOptions& m_global;
    Output& m_out;
    std::shared_ptr<const config::Config> m_config;
    std::optional<std::uint64_t> m_flag_min_free;
    std::unique_ptr<state::StateDir> m_state;
    std::unique_ptr<Services> m_services;
};

using Runner = std::function<Outcome(Context&)>;

}  // namespace archctl::cli
