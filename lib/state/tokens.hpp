#pragma once
// Confirmation tokens: `archctl plan` mints one bound to the plan's digest; `--confirm TOKEN`
// spends it. Single use (spending renames the record, so two spenders cannot both win), with an
// expiry, and refused when the live recomputed plan's digest differs.

#include <chrono>
#include <string>

#include "lib/base/result.hpp"
#include "lib/state/state_dir.hpp"

namespace archctl::state {

struct TokenRequest {
    std::string plan_digest;          // digest of the plan the user saw
    std::string summary;              // "archive 1838bf9a70c1 seedbox → nas", for messages
    std::string request;              // the command it confirms (operation, full id, nodes, selection)
    std::chrono::seconds ttl{3600};
};

// What a command that spends a token recomputed: the live plan's digest and its own request, in
// the form the plan that minted the token used.
struct TokenUse {
    std::string plan_digest;
    std::string request;
    std::string summary;              // this command, for the message when the requests differ
};

// Mint a token (6 hex chars is what users type; collisions are retried).
Result<std::string> mint_token(const StateDir& dir, const TokenRequest& request);

// Spend `token` for the command `use` describes. Errors: TOKEN_UNKNOWN, TOKEN_SPENT,
// TOKEN_EXPIRED, TOKEN_MISMATCH (minted for another command, or the plan changed since it was
// shown; the message says which).
Status spend_token(const StateDir& dir, const std::string& token, const TokenUse& use);

}  // namespace archctl::state
