#include "lib/state/tokens.hpp"

#include <cerrno>
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/base/clock.hpp"
#include "lib/base/crash_point.hpp"
#include "lib/base/fs.hpp"
#include "lib/base/hash.hpp"

namespace archctl::state {

Result<std::string> mint_token(const StateDir& dir, const TokenRequest& request) {
    auto expires = system_now() + request.ttl;
    nlohmann::json j = {{"plan_digest", request.plan_digest}, {"summary", request.summary},
                        {"request", request.request},
                        {"created_at", format_rfc3339(system_now())}, {"expires_at", format_rfc3339(expires)}};
    for (int attempt = 0; attempt < 16; ++attempt) {
        std::string token = random_hex(6);
        Status s = write_file_exclusive(dir.tokens() + "/" + token + ".json", j.dump() + "\n", 0600);
        if (s.ok()) return token;
        if (!s.error().is(ErrorCode::EXISTS)) return s.take_error();
    }
    return Error(ErrorCode::IO, "cannot mint a confirmation token: too many collisions");
}

Status spend_token(const StateDir& dir, const std::string& token, const TokenUse& use) {
    if (token.size() < 6 || token.size() > 16 || !is_hex(token))
        return Error(ErrorCode::TOKEN_UNKNOWN, fmt::format("unknown confirmation token '{}'", token), "run 'archctl plan …' again");
    std::string live = dir.tokens() + "/" + token + ".json";
    std::string spent = dir.tokens() + "/" + token + ".spent";
    auto text = read_file(live);
    if (!text.ok()) {
        if (path_exists(spent))
            return Error(ErrorCode::TOKEN_SPENT, fmt::format("confirmation token '{}' was already used", token), "run 'archctl plan …' again");
        return Error(ErrorCode::TOKEN_UNKNOWN, fmt::format("unknown confirmation token '{}'", token), "run 'archctl plan …' again");
    }
    auto j = nlohmann::json::parse(text.value(), nullptr, false);
    SystemTime expires{};
    if (j.is_discarded() || !parse_rfc3339(j.value("expires_at", ""), expires))
        return Error(ErrorCode::TOKEN_UNKNOWN, fmt::format("unreadable confirmation token '{}'", token));
    if (system_now() > expires)
        return Error(ErrorCode::TOKEN_EXPIRED, fmt::format("confirmation token '{}' expired at {}", token, j.value("expires_at", "")),
                     "run 'archctl plan …' again");
    // A token shown for another command is not "the live state changed": say what it was for.
    // (A record without a request predates it and is judged by its digest alone.)
    const std::string minted_for = j.value("request", "");
    if (!minted_for.empty() && minted_for != use.request)
        return Error(ErrorCode::TOKEN_MISMATCH,
                     fmt::format("confirmation token '{}' was shown for '{}', not for this command ('{}')", token,
                                 j.value("summary", minted_for), use.summary),
                     "run 'archctl plan …' for this command and confirm with the token it prints");
    if (j.value("plan_digest", "") != use.plan_digest)
        return Error(ErrorCode::TOKEN_MISMATCH,
                     fmt::format("confirmation token '{}' was for a different plan: the live state changed since it was shown", token),
                     "run 'archctl plan …' again and review the new plan");
    // rename() is atomic: exactly one spender moves the record.
    if (std::rename(live.c_str(), spent.c_str()) != 0) {
        if (errno == ENOENT)
            return Error(ErrorCode::TOKEN_SPENT, fmt::format("confirmation token '{}' was already used", token), "run 'archctl plan …' again");
        return errno_error("cannot spend token", live, errno);
    }
    crash_point("token.spent");
    return fsync_dir(dir.tokens());
}

}  // namespace archctl::state
