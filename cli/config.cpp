// archctl config: every effective setting and the layer that set it.

#include <algorithm>
#include <array>

#include "cli/commands.hpp"
#include "lib/config/config.hpp"
#include "lib/ui/table.hpp"

namespace archctl::cli {

struct ConfigOptions {};

constexpr std::size_t k_value_column = 40;

Outcome run_config(Context& ctx, const ConfigOptions&) {
    auto config = ctx.config();
    if (!config.ok()) return Outcome::failed(config.take_error());
    const config::Config& c = *config.value();
    nlohmann::json settings = nlohmann::json::array();
    std::vector<std::array<std::string, 3>> rows;
    std::size_t key_width = 0, value_width = 0;
    for (const auto& [key, shown] : c.display) {
        const std::string& origin = c.origin.at(key);
        if (key.size() > 5 && (key.ends_with("password_file") || key.ends_with("api_key_file"))) continue;
        auto list = c.lists.find(key);
        nlohmann::json value = list != c.lists.end() ? nlohmann::json(list->second) : nlohmann::json(shown);
        settings.push_back({{"key", key}, {"value", value}, {"origin", origin}});
        rows.push_back({key, shown, origin});
        key_width = std::max(key_width, ui::display_width(key));
        value_width = std::max(value_width, ui::display_width(shown));
    }
    // Values are aligned up to a width; a longer one (a path, a secret's file) pushes only its own
    // row's origin to the right, never every row.
    value_width = std::min<std::size_t>(value_width, k_value_column);
    std::string text;
    for (const auto& [key, value, origin] : rows) {
        if (!text.empty()) text += '\n';
        text += key + std::string(key_width - ui::display_width(key) + 2, ' ') + value;
        std::size_t w = ui::display_width(value);
        text += std::string(w < value_width ? value_width - w + 2 : 2, ' ') + origin;
    }
    ctx.out().result(text);
    return Outcome::done({{"settings", settings}});
}

Runner register_config(CLI::App& app) {
    auto options = std::make_shared<ConfigOptions>();
    app.footer("Layers, later wins: default, user file, state-dir config.toml, ARCHCTL_* environment, flags.");
    return [options](Context& ctx) { return run_config(ctx, *options); };
}

}  // namespace archctl::cli
