#pragma once
// What evict shares with plan: its options and `plan evict`.

#include <string>

#include "cli/command.hpp"
#include "cli/transfer_common.hpp"

namespace archctl::cli {

struct EvictOptions {
    SelectOptions select;
    std::string res;  // the one RES when not a batch
    std::string from;
    bool verify_archive = false;
    bool yes = false;
    std::string confirm;
};

// `archctl plan evict RES --from CACHE`: the coverage table and a token, or the refusal (exit 1).
Outcome run_plan_evict(Context& ctx, const EvictOptions& o);

}  // namespace archctl::cli
