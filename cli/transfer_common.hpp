#pragma once
// What plan, archive, unarchive and resume share: the transfer options, budgets, and rendering
// of plans and run results.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "lib/jobs/transfer/planner.hpp"

namespace archctl::cli {

// RES... and the filters as typed (cli/batch.hpp parses them, so errors name the option).
struct SelectOptions {
    std::vector<std::string> res;
    bool all = false;
    std::vector<std::string> categories, tags, names, exclude_categories, exclude_tags;
    std::string completed_before, inactive_for, min_seeding_time, larger_than, min_ratio;
};

struct TransferOptions {
    SelectOptions select;
    std::string res;                          // the one RES when not a batch
    std::string from, to;
    std::vector<std::string> file_paths, dir_paths;
    std::string files;
    bool verify_transit = false;
    bool yes = false;
    std::string confirm;
};

struct BudgetOptions {
    double max_gb = 0;
    std::string max_bytes;
    double max_minutes = 0;
    std::string min_free;
    bool no_wait = false;
};

void add_transfer_options(CLI::App& app, TransferOptions& o, bool res_required = true);
void add_budget_options(CLI::App& app, BudgetOptions& o);

Result<jobs::transfer::TransferRequest> to_request(plan::Operation op, const TransferOptions& o);
Result<jobs::Budgets> to_budgets(const BudgetOptions& o, const config::Config& config);

// The command a confirmation token confirms, and its words for messages: `plan` mints with
// these and archive/unarchive spend with the same, so a token shown for one command is refused
// by another naming what it was for.
std::string token_request(plan::Operation op, const jobs::transfer::Prepared& p, const TransferOptions& o);
std::string token_summary(plan::Operation op, const jobs::transfer::Prepared& p, const TransferOptions& o);

// The plan as docs/design.md "What the user sees" describes it (without the confirmation line).
std::string render_plan(const jobs::transfer::Prepared& p);
// A run result as an Outcome: done 0, stopped 10 with reason and hint, failed 1.
Outcome run_outcome(Context& ctx, const jobs::RunResult& r, const std::string& rerun_hint, nlohmann::json result);

// A run that found its job driven by another archctl (LOCKED): not a failure — says "job X is
// being driven by another archctl (pid N)" and exits 10 (the job goes on there).
Outcome driven_elsewhere(Context& ctx, const std::string& job_id, nlohmann::json result);

// archive / unarchive: prepare → confirm → create → run.
Outcome run_transfer(Context& ctx, plan::Operation op, const TransferOptions& o, const BudgetOptions& b);

}  // namespace archctl::cli
