// archctl config: every effective setting and the layer that set it.

#include "cli/commands.hpp"
#include "lib/config/config.hpp"
#include "lib/ui/table.hpp"

namespace archctl::cli {

struct ConfigOptions {};

Outcome run_config(Context& ctx, const ConfigOptions&) {
    auto config = ctx.config();
    if (!config.ok()) return Outcome::failed(config.take_error());
    const config::Config& c = *config.value();
    nlohmann::json settings = nlohmann::json::array();
    ui::Table table;
    for (const auto& [key, shown] : c.display) {
        const std::string& origin = c.origin.at(key);
        if (key.size() > 5 && (key.ends_with("password_file") || key.ends_with("api_key_file"))) continue;
        auto list = c.lists.find(key);
        nlohmann::json value = list != c.lists.end() ? nlohmann::json(list->second) : nlohmann::json(shown);
        settings.push_back({{"key", key}, {"value", value}, {"origin", origin}});
        table.add_row({key, shown, origin});
    }
    ctx.out().result(table.render());
    return Outcome::done({{"settings", settings}});
}

Runner register_config(CLI::App& app) {
    auto options = std::make_shared<ConfigOptions>();
    app.footer("Layers, later wins: default, user file, state-dir config.toml, ARCHCTL_* environment, flags.");
    return [options](Context& ctx) { return run_config(ctx, *options); };
}

}  // namespace archctl::cli
