#pragma once
// The one confirmation step of every porcelain command that changes something (archive,
// unarchive, evict): --confirm TOKEN from `archctl plan` (spent, bound to the plan's digest),
// --yes, or a question on a terminal after showing the plan; otherwise CONFIRM_REQUIRED.

#include <functional>
#include <optional>
#include <string>

#include "cli/command.hpp"
#include "lib/state/state_dir.hpp"

namespace archctl::cli {

struct ConfirmRequest {
    bool yes = false;                      // --yes (the command's or the global one)
    std::string token;                     // --confirm TOKEN
    std::string plan_digest;               // what the token must be bound to
    std::string request;                   // the command, as the plan that mints tokens names it
    std::string summary;                   // "archive 1838bf9a70c1 seedbox → nas", for messages
    std::function<std::string()> plan;     // the plan, shown on a terminal before the question
    std::string question;                  // "archive 3 files (1.2 GiB) from seedbox to nas?"
    std::string needs;                     // "archive of '1838bf9a70c1' needs confirmation"
    std::string needs_hint;                // "pass --yes, or --confirm TOKEN from 'archctl plan'"
};

// nullopt when confirmed; the refusal (NOT_CONFIRMED, CONFIRM_REQUIRED, a token error) otherwise.
[[nodiscard]] std::optional<Error> confirm(Context& ctx, const state::StateDir& dir, const ConfirmRequest& r);

}  // namespace archctl::cli
