#pragma once
// How a batch is shown: the plan table and totals, its --json document, and a line on stderr
// for each step of its run (cli/batch.cpp runs it; lib/runs/batch.hpp is the batch itself).

#include <string>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/services.hpp"
#include "lib/runs/batch.hpp"

namespace archctl::cli {

// The action column: "archive to nas", "continue job …", "nothing to do: …", "refused: …".
[[nodiscard]] std::string action_text(const runs::BatchItem& it, runs::BatchOp op);
// One line per resource, the totals and what the filters passed over.
[[nodiscard]] std::string render_batch(const runs::Planned& planned, runs::BatchOp op);
// The "batch" document of --json; `run`: with each resource's outcome and run, and the run's totals.
[[nodiscard]] nlohmann::json batch_json(const runs::Planned& planned, runs::BatchOp op, bool run);
// One line on stderr as the run creates, continues, settles or drives an item (the progress
// panel is finished first when a job's turn ended).
void say_batch_step(Context& ctx, Services& s, runs::BatchOp op, const runs::BatchEvent& e);

}  // namespace archctl::cli
