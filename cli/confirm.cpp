#include "cli/confirm.hpp"

#include <cstdio>
#include <iostream>
#include <unistd.h>

#include "lib/base/text.hpp"
#include "lib/state/tokens.hpp"

namespace archctl::cli {
namespace {

bool ask(const std::string& question) {
    std::fprintf(stderr, "%s [y/N] ", terminal_text(question).c_str());
    std::fflush(stderr);
    std::string answer;
    if (!std::getline(std::cin, answer)) return false;
    return answer == "y" || answer == "Y" || answer == "yes";
}

}  // namespace

std::optional<Error> confirm(Context& ctx, const state::StateDir& dir, const ConfirmRequest& r) {
    if (!r.token.empty()) {
        Status spent = state::spend_token(dir, r.token, {r.plan_digest, r.request, r.summary});
        if (!spent.ok()) return spent.take_error();
        return std::nullopt;
    }
    if (r.yes || ctx.global().yes) return std::nullopt;
    if (::isatty(0) && ::isatty(2)) {
        if (r.plan) ctx.out().info(r.plan());
        if (ask(r.question)) return std::nullopt;
        return Error(ErrorCode::NOT_CONFIRMED, "nothing done: not confirmed");
    }
    return Error(ErrorCode::CONFIRM_REQUIRED, r.needs, r.needs_hint);
}

}  // namespace archctl::cli
