// archctl config: every effective setting and the layer that set it, then each file layer and the
// state directory with its owner, mode and problems (lib/config/trust.hpp).

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "lib/config/config.hpp"
#include "lib/ui/table.hpp"

namespace archctl::cli {

struct ConfigOptions {};

constexpr std::size_t k_value_column = 40;

// The user file, the state directory and its config.toml: path, owner, mode and what is wrong.
std::string layers_text(const std::vector<config::Layer>& layers, nlohmann::json& json) {
    std::vector<std::array<std::string, 4>> rows;
    std::size_t widths[3] = {0, 0, 0};
    for (const config::Layer& layer : layers) {
        std::string owner = layer.exists ? fmt::format("{} {:04o}", layer.owner, layer.mode) : "absent";
        std::string verdict = layer.problems.empty() ? "ok" : layer.trusted ? "trusted (safe.trusted)" : "refused";
        std::string problems;
        for (const std::string& p : layer.problems) problems += (problems.empty() ? ": " : "; ") + p;
        if (layer.refused()) problems += "; fix: " + layer.fix;
        rows.push_back({config::to_string(layer.kind), layer.path, owner, verdict + problems});
        for (std::size_t i = 0; i < 3; ++i) widths[i] = std::max(widths[i], ui::display_width(rows.back()[i]));
        nlohmann::json row = {{"layer", config::to_string(layer.kind)}, {"path", layer.path}, {"exists", layer.exists},
                              {"owner", nullptr}, {"uid", nullptr}, {"mode", nullptr}, {"problems", layer.problems},
                              {"trusted", layer.trusted}, {"refused", layer.refused()}};
        if (layer.exists) {
            row["owner"] = layer.owner;
            row["uid"] = layer.uid;
            row["mode"] = fmt::format("{:04o}", layer.mode);
        }
        json.push_back(row);
    }
    std::string text = "layers:";
    for (const auto& row : rows) {
        text += "\n  ";
        for (std::size_t i = 0; i < 3; ++i) text += row[i] + std::string(widths[i] - ui::display_width(row[i]) + 2, ' ');
        text += row[3];
    }
    return text;
}

Outcome run_config(Context& ctx, const ConfigOptions&) {
    // Loaded here rather than through ctx.config(): a refused layer is left out and shown with
    // every other layer's problems before the command fails.
    config::LoadOptions options;
    options.config_file = ctx.global().config_file;
    options.state_dir = ctx.global().state_dir;
    options.unsafe = config::UnsafeLayers::skip;
    std::vector<std::string> warnings;
    auto config = config::load(options, warnings);
    for (const auto& w : warnings) ctx.out().warn(w);
    if (!config.ok()) return Outcome::failed(config.take_error());
    const config::Config& c = config.value();
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
    nlohmann::json layers = nlohmann::json::array();
    text += "\n\n" + layers_text(c.layers, layers);
    ctx.out().result(text);
    nlohmann::json result = {{"settings", settings}, {"layers", layers}};
    Status refused = config::refusal(c);
    if (!refused.ok()) return Outcome::failed(refused.take_error(), result);
    return Outcome::done(result);
}

Runner register_config(CLI::App& app) {
    auto options = std::make_shared<ConfigOptions>();
    app.footer("Layers, later wins: default, user file, state-dir config.toml, ARCHCTL_* environment, flags.\n"
               "A layer another user owns or others can write is refused unless safe.trusted names it.");
    return [options](Context& ctx) { return run_config(ctx, *options); };
}

}  // namespace archctl::cli
