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
                        {"created_at", format_rfc3339(system_now())}, {"expires_at", format_rfc3339(expires)}};
    for (int attempt = 0; attempt < 16; ++attempt) {
        std::string token = random_hex(6);
        Status s = write_file_exclusive(dir.tokens() + "/" + token + ".json", j.dump() + "\n", 0600);
        if (s.ok()) return token;
        if (!s.error().is(ErrorCode::EXISTS)) return s.take_error();
    }
    return Error(ErrorCode::IO, "cannot mint a confirmation token: too many collisions");
}

Status spend_token(const StateDir& dir, const std::string& token, const std::string& plan_digest) {
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
    if (j.value("plan_digest", "") != plan_digest)
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
