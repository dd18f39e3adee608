// Context's set-up of configuration, state and nodes (the command table's "needs" column).

#include "cli/services.hpp"

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include <fmt/format.h>

#include "cli/command.hpp"
#include "lib/base/clock.hpp"
#include "lib/node/wire/ops_transfer.hpp"
#include "lib/state/refused_logins.hpp"

namespace archctl::cli {
namespace {

class StateLoginRecords final : public clients::qbittorrent::LoginRecords {
public:
    StateLoginRecords(const state::StateDir& dir, std::function<void(const std::string&)> warn) : m_logins(dir), m_warn(std::move(warn)) {}

    bool refused(const std::string& node, const std::string& username, const std::string& password) const override {
        return m_logins.refused(node, username, password);
    }
    void remember(const std::string& node, const std::string& username, const std::string& password) const override {
        if (Status s = m_logins.remember(node, username, password); !s.ok() && m_warn)
            m_warn(fmt::format("archctl: warning: the refused login of '{}' was not recorded: {}", node, s.error().message));
    }
    void forget(const std::string& node) const override {
        if (Status s = m_logins.forget(node); !s.ok() && m_warn)
            m_warn(fmt::format("archctl: warning: the refused login of '{}' could not be forgotten: {}", node, s.error().message));
    }

private:
    state::RefusedLogins m_logins;
    std::function<void(const std::string&)> m_warn;
};

// ARCHCTL_TEST_* switches (tests/README.md): read here, never in the library.
Result<jobs::TestSwitches> test_switches() {
    jobs::TestSwitches t;
    if (const char* m = std::getenv("ARCHCTL_TEST_STAGE_METHOD"); m && *m) {
        auto method = node::parse_method_choice(m);
        if (!method)
            return Error(ErrorCode::BAD_VALUE, fmt::format("invalid ARCHCTL_TEST_STAGE_METHOD '{}'", m), "use auto, hardlink, reflink or copy");
        t.stage_method = *method;
    }
    if (const char* b = std::getenv("ARCHCTL_TEST_UNLINK_BATCH"); b && *b) {
        long n = std::strtol(b, nullptr, 10);
        if (n > 0) t.unlink_batch = static_cast<std::size_t>(n);
    }
    return t;
}

}  // namespace

Context::Context(const GlobalOptions& global, Output& out) : m_global(global), m_out(out) {}
Context::~Context() = default;

Result<const state::StateDir*> Context::state() {
    if (m_state) return m_state.get();
    ARCHCTL_TRY_ASSIGN(const config::Config* config, this->config());
    ARCHCTL_TRY_ASSIGN(auto dir, state::StateDir::open(config->state_dir));
    m_state = std::make_unique<state::StateDir>(std::move(dir));
    return m_state.get();
}

Result<Services*> Context::services() {
    if (m_services) return m_services.get();
    auto s = std::make_unique<Services>();
    ARCHCTL_TRY_ASSIGN(s->config, config());
    if (s->config->nodes.empty())
        return Error(ErrorCode::CONFIG_INVALID, "no nodes are configured", "add [nodes.<name>] tables to the config; see 'archctl config'");
    ARCHCTL_TRY_ASSIGN(s->state, state());
    clients::Tuning tuning;
    Output* out = &m_out;
    tuning.logins = login_records(*s->state, [out](const std::string& line) { out->warn(line); });
    // -vv: one line per HTTP request (service, node, method, endpoint, status, time; redacted).
    if (out->verbose() > 1) tuning.log = [out](const std::string& line) { out->debug(line); };
    s->nodes = std::make_unique<jobs::Nodes>(*s->config, tuning);
    ui::ProgressMode mode = ui::choose_mode(s->config->progress, ::isatty(2) != 0);
    if (out->quiet()) mode = ui::ProgressMode::none;
    s->progress = ui::make_renderer(mode, stderr, real_clock());
    ui::ProgressRenderer* renderer = s->progress.get();
    s->io.log = [renderer, out](const std::string& line) {
        if (!out->quiet()) renderer->log(line);
    };
    s->io.progress = renderer;
    ARCHCTL_TRY_ASSIGN(s->io.test, test_switches());
    s->transfers = std::make_unique<jobs::transfer::TransferPlanner>(*s->config, *s->state, *s->nodes, s->io);
    s->evictor = std::make_unique<jobs::evict::Evictor>(*s->config, *s->state, *s->nodes, s->io);
    s->driver = std::make_unique<jobs::Driver>(*s->config, *s->state, *s->nodes, s->io);
    m_services = std::move(s);
    return m_services.get();
}

Status Context::prepare(Needs needs) {
    switch (needs) {
        case Needs::nothing: return {};
        case Needs::config: {
            auto c = config();
            if (!c.ok()) return c.take_error();
            return {};
        }
        case Needs::state: {
            auto s = state();
            if (!s.ok()) return s.take_error();
            return {};
        }
        case Needs::nodes: {
            auto s = services();
            if (!s.ok()) return s.take_error();
            return {};
        }
    }
    return {};
}

std::shared_ptr<const clients::qbittorrent::LoginRecords> login_records(const state::StateDir& dir,
                                                                      std::function<void(const std::string&)> warn) {
    return std::make_shared<StateLoginRecords>(dir, std::move(warn));
}

}  // namespace archctl::cli
