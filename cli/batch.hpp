#pragma once
// Many resources at once (docs/design.md "Many resources and tier policies"): the selection every
// porcelain command shares — several RES and filters over the source node's live torrent list —
// and the commands that plan or run a batch (lib/runs/batch.hpp): one ordinary job per chosen
// resource, unfinished jobs first, under shared budgets, past failures.
//
// One RES and no filter is not a batch: the command then behaves exactly as it always has.

#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/transfer_common.hpp"
#include "lib/config/criteria.hpp"
#include "lib/runs/batch.hpp"

namespace archctl::cli {

// RES... and the filter options. `res_required`: a missing RES with no filter is a usage error
// when the command line is parsed.
void add_select_options(CLI::App& app, SelectOptions& o, bool res_required = true);
[[nodiscard]] bool has_filter(const SelectOptions& o);
// Several RES or any filter: a batch.
[[nodiscard]] bool is_batch(const SelectOptions& o);
// At parse time (CLI11 callbacks): CLI::RequiredError for a missing RES (when required and no
// filter chooses), CLI::ValidationError naming a malformed filter, or file options on a batch.
void validate_selection(const SelectOptions& o, bool res_required);
void validate_transfer(const TransferOptions& o, bool res_required);
// USAGE naming the option and the form it takes.
[[nodiscard]] Result<config::Criteria> criteria_of(const SelectOptions& o);
// The selection as the user would type it again: "--category tv --exclude-tag pinned".
[[nodiscard]] std::string selection_args(const SelectOptions& o);
// "<cmd>: missing RES (…)" when neither RES nor a filter was given (usage, exit 2).
[[nodiscard]] Error missing_res(const std::string& command);

using BatchOp = runs::BatchOp;

struct BatchRequest {
    BatchOp op = BatchOp::archive;
    SelectOptions select;
    std::string from, to;
    bool verify_transit = false;
    bool verify_archive = false;
    bool yes = false;
    std::string confirm;
    BudgetOptions budgets;
};

// archive/unarchive's batch from its options (budgets are set by the caller).
[[nodiscard]] BatchRequest transfer_batch(plan::Operation op, const TransferOptions& o);

// `plan archive|unarchive|evict` over a batch: one line per resource, the totals, one token
// bound to the whole batch. Read-only.
[[nodiscard]] Outcome run_batch_plan(Context& ctx, const BatchRequest& request);
// archive/unarchive/evict over a batch: exit 0 all done, 10 any clean stop with work left, 1 any
// failure (after the others ran).
[[nodiscard]] Outcome run_batch(Context& ctx, const BatchRequest& request);

}  // namespace archctl::cli
