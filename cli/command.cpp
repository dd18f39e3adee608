#include "cli/command.hpp"

#include "lib/config/config.hpp"

namespace archctl::cli {

Outcome Outcome::done(nlohmann::json result) {
    Outcome o;
    o.result = std::move(result);
    return o;
}

Outcome Outcome::failed(Error error, nlohmann::json result) {
    Outcome o;
    o.kind = ExitKind::error;
    o.error = std::move(error);
    o.result = std::move(result);
    return o;
}

Outcome Outcome::usage(Error error) {
    Outcome o;
    o.kind = ExitKind::usage;
    o.error = std::move(error);
    return o;
}

Outcome Outcome::partial(std::string reason, std::string hint, nlohmann::json result) {
    Outcome o;
    o.kind = ExitKind::partial;
    o.stop_reason = std::move(reason);
    o.resume_hint = std::move(hint);
    o.result = std::move(result);
    return o;
}

Result<const config::Config*> Context::config() {
    if (m_config) return m_config.get();
    config::LoadOptions options;
    options.config_file = m_global.config_file;
    options.state_dir = m_global.state_dir;
    options.min_free = m_flag_min_free;
    std::vector<std::string> warnings;
    auto loaded = config::load(options, warnings);
    for (const auto& w : warnings) m_out.warn(w);
    if (!loaded.ok()) return loaded.take_error();
    m_config = std::make_shared<const config::Config>(std::move(loaded).value());
    return m_config.get();
}

}  // namespace archctl::cli
