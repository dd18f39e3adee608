// archctl archive RES: move a resource from a cache node to an archive node.
#include "cli/commands.hpp"
#include "cli/transfer_common.hpp"

namespace archctl::cli {

struct ArchiveOptions {
    TransferOptions transfer;
    BudgetOptions budgets;
};

Runner register_archive(CLI::App& app) {
    auto o = std::make_shared<ArchiveOptions>();
    add_transfer_options(app, o->transfer);
    add_budget_options(app, o->budgets);
    app.add_flag("--yes", o->transfer.yes, "do not ask for confirmation");
    app.add_option("--confirm", o->transfer.confirm, "confirmation token from 'archctl plan archive'")->type_name("TOKEN");
    return [o](Context& ctx) { return run_transfer(ctx, plan::Operation::archive, o->transfer, o->budgets); };
}

Runner register_unarchive(CLI::App& app) {
    auto o = std::make_shared<ArchiveOptions>();
    add_transfer_options(app, o->transfer);
    add_budget_options(app, o->budgets);
    app.add_flag("--yes", o->transfer.yes, "do not ask for confirmation");
    app.add_option("--confirm", o->transfer.confirm, "confirmation token from 'archctl plan unarchive'")->type_name("TOKEN");
    return [o](Context& ctx) { return run_transfer(ctx, plan::Operation::unarchive, o->transfer, o->budgets); };
}

}  // namespace archctl::cli
