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
    std::chrono::seconds ttl{3600};
};

// Mint a token (6 hex chars is what users type; collisions are retried).
Result<std::string> mint_token(const StateDir& dir, const TokenRequest& request);

// Spend `token` for a plan whose live digest is `plan_digest`. Errors: TOKEN_UNKNOWN,
// TOKEN_SPENT, TOKEN_EXPIRED, TOKEN_MISMATCH (the plan changed since it was shown).
Status spend_token(const StateDir& dir, const std::string& token, const std::string& plan_digest);

}  // namespace archctl::state
