#pragma once
// The one command table (docs/style.md "Practices" 2): every command of docs/design.md "Commands", its group, its
// one-line summary and its registration function. Help, completions and the man-page check all
// read it, so a command exists in one place.

#include <string>
#include <vector>

#include "cli/command.hpp"

namespace archctl::cli {

enum class Group { porcelain, plumbing };

struct CommandSpec {
    const char* name;
    Group group;
    const char* summary;
    // Adds options/subcommands to the (already created) subcommand and returns its runner.
    Runner (*register_fn)(CLI::App& app);
    // What is set up before the runner starts.
    Needs needs;
};

const std::vector<CommandSpec>& command_table();

}  // namespace archctl::cli
