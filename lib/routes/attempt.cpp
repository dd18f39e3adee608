#include "lib/routes/attempt.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/base/fs.hpp"
#include "lib/base/retry.hpp"
#include "lib/routes/health.hpp"
#include "lib/routes/naming.hpp"
#include "lib/routes/nonce.hpp"

namespace archctl::routes {
namespace {

namespace st = clients::syncthing;
using nlohmann::json;

constexpr auto k_poll = std::chrono::milliseconds(500);
constexpr auto k_nonce_poll = std::chrono::milliseconds(200);

// Transport-level failures (connection refused, timeout) are worth waiting out; anything
// Syncthing answered with is not.
bool transient(const Error& e) { return e.code.rfind("HTTP_", 0) == 0 || e.is(ErrorCode::NODE_UNREACHABLE); }

st::Folder planned_folder(const std::string& id, const std::string& path, const std::string& own,
                          const std::string& peer) {
    st::Folder f;
    f.id = id;
    f.label = id;
    f.path = path;
    f.type = "sendreceive";
    f.devices = {own, peer};
    f.paused = false;
    f.ignore_perms = true;  // permission bits never travel across a route
    f.fs_watcher_enabled = true;
    f.fs_watcher_delay_s = 1;
    f.rescan_interval_s = 3600;
    // The valve (docs/routes.md): no versioning, so deleted staging never lingers in
    // .stversions; the far side's deletes are applied. (syncOwnership and syncXattrs are off by
    // default on the Syncthings that know them; 1.19 does not.)
    f.versioning_type = "";
    f.raw["ignoreDelete"] = false;
    return f;
}

}  // namespace

Result<std::optional<json>> read_object(session::NodeSession& link, ObjectKind kind, const std::string& id) {
    if (kind == ObjectKind::device) {
        ARCHCTL_TRY_ASSIGN(auto d, link.st().device(id));
        if (!d) return std::optional<json>();
        return std::optional<json>(d->raw);
    }
    ARCHCTL_TRY_ASSIGN(auto f, link.st().folder(id));
    if (!f) return std::optional<json>();
    return std::optional<json>(f->raw);
}

Attempt::SideRef Attempt::side(config::Role role) {
    if (role == config::Role::cache) return {m_r.cache, m_r.archive, &m_r.cache_path, &m_r.cache_device, &m_r.archive_device};
    return {m_r.archive, m_r.cache, &m_r.archive_path, &m_r.archive_device, &m_r.cache_device};
}

Status Attempt::set_step(const std::string& step) {
    if (m_r.step == step) return ok_status();
    m_r.step = step;
    m_r.step_started_at = now_text();
    m_r.seen.clear();
    m_s.say(fmt::format("route {}: {}", m_r.id, step));
    return m_s.store().save(m_r, "step");
}

Status Attempt::set_seen(const std::string& seen) {
    if (m_r.seen == seen) return ok_status();
    m_r.seen = seen;
    return m_s.store().save(m_r, "seen");
}

Error Attempt::give_up(WaitEnd end, const std::string& what) {
    if (end == WaitEnd::not_waiting)
        return clean_stop_error(end, fmt::format("route '{}' is not ready at step '{}': {}", m_r.id, m_r.step, m_r.seen.empty() ? what : m_r.seen));
    if (end != WaitEnd::timed_out) return clean_stop_error(end, what);
    const std::string message = fmt::format("route '{}' not ready after {} s at step '{}': {}", m_r.id, m_d.timeout_s,
                                            m_r.step, m_r.seen.empty() ? what : m_r.seen);
    if (!m_r.verified_at.empty()) {
        m_r.last_check_at = now_text();
        m_r.last_check = message;
        (void)m_s.store().save(m_r, "check.recorded");
    } else {
        m_r.state = RouteState::timed_out;
        m_r.error = message;
        (void)m_s.store().save(m_r, "timed_out");
    }
    return Error(ErrorCode::ROUTE_TIMEOUT, message,
                 fmt::format("see 'archctl route show {}'; fix the cause and rerun, or undo with "
                             "'archctl route ensure --rollback {}'",
                             m_r.id, m_r.id));
}

Error Attempt::fail(Error error) {
    if (!m_r.verified_at.empty()) return error;  // a verified route is never rolled back
    m_r.state = RouteState::failed;
    m_r.error = error.message;
    (void)m_s.store().save(m_r, "failed");
    auto rolled = rollback_record(m_s, m_r);
    if (rolled.ok() && !rolled->complete) error.hint = fmt::format("some config was kept; see 'archctl route show {}'", m_r.id);
    if (!rolled.ok()) error.hint = "rollback failed: " + rolled.error().message;
    m_r.state = RouteState::failed;  // rollback_record marks it rolled_back when complete
    m_r.error = error.message;
    (void)m_s.store().save(m_r, "failed");
    return error;
}

Status Attempt::provision() {
    if (m_r.state != RouteState::provisioning) {
        m_r.state = RouteState::provisioning;
        m_r.error.clear();
        ARCHCTL_TRY_STATUS(m_s.store().save(m_r, "resumed"));
    }
    ARCHCTL_TRY_STATUS(configure(config::Role::cache));
    ARCHCTL_TRY_STATUS(configure(config::Role::archive));
    return verify();
}

Status Attempt::configure(config::Role role) {
    const SideRef s = side(role);
    ARCHCTL_TRY_STATUS(set_step("configure " + s.node));
    std::string seen;
    Down down;  // the Syncthing that did not answer: the side's, or its peer's
    auto done = retry_through_outage(
        [&]() -> Result<bool> {
            seen.clear();
            down = {};
            auto r = try_configure(s, seen, down);
            if (!r.ok() && !transient(r.error())) return fail(r.take_error());
            return r;
        },
        [](const Result<bool>& r) { return r.ok() ? !r.value() : transient(r.error()); },
        [&](const Result<bool>& r) -> std::optional<Result<bool>> {
            if (!r.ok()) {
                seen = r.error().message;
                down = {s.node, seen};
            }
            ARCHCTL_TRY_STATUS(set_seen(seen));
            if (auto end = wait_end(m_d); end != WaitEnd::keep_waiting) return give_up(end, "configuring " + s.node);
            if (auto over = outage_end(down)) return *over;
            nap(m_d, k_poll);
            return std::nullopt;
        });
    if (!done.ok()) return done.take_error();
    return ok_status();
}

std::optional<Error> Attempt::outage_end(const Down& down) {
    if (down.node.empty()) return std::nullopt;
    const std::string hint = m_r.verified_at.empty()
                                 ? fmt::format("rerun when it answers: the attempt continues under route ID '{}' ('archctl route show {}')",
                                               m_r.id, m_r.id)
                                 : "rerun when it answers";
    return m_s.outage_seen(down.node, down.why, fmt::format("route '{}' was at step '{}'", m_r.id, m_r.step), hint);
}

Attempt::Down Attempt::syncthing_down() {
    for (const std::string* node : {&m_r.cache, &m_r.archive}) {
        auto link = m_s.link(*node);
        if (!link.ok()) continue;
        auto status = (*link)->st().status();
        if (!status.ok() && transient(status.error())) return {*node, status.error().message};
    }
    return {};
}

Result<bool> Attempt::try_configure(const SideRef& s, std::string& seen, Down& down) {
    ARCHCTL_TRY_ASSIGN(session::NodeSession * link, m_s.link(s.node));
    ARCHCTL_TRY_ASSIGN(session::NodeSession * peer, m_s.link(s.peer));
    auto status = link->st().status();
    if (!status.ok()) {
        seen = fmt::format("{}: Syncthing unreachable: {}", s.node, status.error().message);
        down = {s.node, status.error().message};
        return false;
    }
    if (s.device->empty()) *s.device = status->my_id;
    if (*s.device != status->my_id)
        return Error(ErrorCode::ROUTE_CONFLICT, fmt::format("Syncthing of '{}' has device ID {}, this route recorded {}", s.node,
                                                   status->my_id, *s.device));
    std::vector<std::string> addresses = peer->config().syncthing.addresses;
    if (s.peer_device->empty() || addresses.empty()) {
        auto snap = read_snapshot(peer->st(), peer->config());
        if (!snap.reachable) {
            seen = fmt::format("{}: Syncthing unreachable (needed for its device ID and addresses): {}", s.peer, snap.error);
            down = {s.peer, snap.error};
            return false;
        }
        if (s.peer_device->empty()) *s.peer_device = snap.device_id;
        if (addresses.empty()) addresses = dialable_addresses(snap.listen_addresses, peer->config().syncthing.url);
    }
    ARCHCTL_TRY_ASSIGN(bool device_done, ensure_device(*link, s, addresses));
    if (!device_done) return false;
    return ensure_folder(*link, s);
}

Result<bool> Attempt::ensure_device(session::NodeSession& link, const SideRef& s, std::vector<std::string> addresses) {
    const std::string& id = *s.peer_device;
    ARCHCTL_TRY_ASSIGN(auto existing, link.st().device(id));
    CreatedObject* entry = m_r.find_created(s.node, ObjectKind::device, id);
    if (existing) {
        // Present: either configured before this attempt (left exactly as it is) or created by
        // it just before a crash (adopted: it was recorded as intended before the PUT).
        if (entry && entry->status == ObjectStatus::intended) {
            entry->fingerprint = config_fingerprint(existing->raw);
            entry->status = ObjectStatus::created;
            entry->at = now_text();
            ARCHCTL_TRY_STATUS(m_s.store().save(m_r, "device.recorded"));
        }
        return true;
    }
    if (!entry) {
        m_r.created.push_back({s.node, ObjectKind::device, id, "", ObjectStatus::intended, now_text(), ""});
        entry = &m_r.created.back();
    }
    entry->status = ObjectStatus::intended;
    entry->fingerprint.clear();
    entry->at = now_text();
    ARCHCTL_TRY_STATUS(m_s.store().save(m_r, "device.intent"));
    st::Device d;
    d.device_id = id;
    d.name = s.peer;
    d.addresses = std::move(addresses);
    ARCHCTL_TRY_STATUS(link.st().put_device(d));
    crash_point("route.device.put");
    ARCHCTL_TRY_ASSIGN(auto created, link.st().device(id));
    if (!created)
        return Error(ErrorCode::ROUTE_CONFIG_REFUSED, fmt::format("Syncthing of '{}' did not keep device {} after adding it", s.node,
                                                         id.substr(0, 7)));
    entry = m_r.find_created(s.node, ObjectKind::device, id);
    entry->fingerprint = config_fingerprint(created->raw);
    entry->status = ObjectStatus::created;
    entry->at = now_text();
    ARCHCTL_TRY_STATUS(m_s.store().save(m_r, "device.recorded"));
    return true;
}

Result<bool> Attempt::ensure_folder(session::NodeSession& link, const SideRef& s) {
    ARCHCTL_TRY_ASSIGN(auto existing, link.st().folder(m_r.id));
    CreatedObject* entry = m_r.find_created(s.node, ObjectKind::folder, m_r.id);
    if (existing) {
        if (strip_trailing_slashes(existing->path) != *s.path)
            return Error(ErrorCode::ROUTE_CONFLICT, fmt::format("folder '{}' on '{}' has path {}, this route expects {}", m_r.id,
                                                       s.node, existing->path, *s.path));
        if (entry && entry->status == ObjectStatus::intended) {
            entry->fingerprint = config_fingerprint(existing->raw);
            entry->status = ObjectStatus::created;
            entry->at = now_text();
            ARCHCTL_TRY_STATUS(m_s.store().save(m_r, "folder.recorded"));
        }
        return true;
    }
    if (!entry) {
        m_r.created.push_back({s.node, ObjectKind::folder, m_r.id, "", ObjectStatus::intended, now_text(), ""});
        entry = &m_r.created.back();
    }
    entry->status = ObjectStatus::intended;
    entry->fingerprint.clear();
    entry->at = now_text();
    ARCHCTL_TRY_STATUS(m_s.store().save(m_r, "folder.intent"));
    ARCHCTL_TRY_STATUS(link.st().put_folder(planned_folder(m_r.id, *s.path, *s.device, *s.peer_device)));
    crash_point("route.folder.put");
    ARCHCTL_TRY_ASSIGN(auto created, link.st().folder(m_r.id));
    if (!created)
        return Error(ErrorCode::ROUTE_CONFIG_REFUSED, fmt::format("Syncthing of '{}' did not keep folder '{}' after adding it", s.node, m_r.id));
    entry = m_r.find_created(s.node, ObjectKind::folder, m_r.id);
    entry->fingerprint = config_fingerprint(created->raw);
    entry->status = ObjectStatus::created;
    entry->at = now_text();
    ARCHCTL_TRY_STATUS(m_s.store().save(m_r, "folder.recorded"));
    return true;
}

Status Attempt::wait_healthy() {
    ARCHCTL_TRY_STATUS(set_step("wait healthy"));
    ARCHCTL_TRY_ASSIGN(session::NodeSession * cache, m_s.link(m_r.cache));
    ARCHCTL_TRY_ASSIGN(session::NodeSession * archive, m_s.link(m_r.archive));
    for (;;) {
        auto ct = cache->ops();
        auto at = archive->ops();
        SideFacts c = probe_side(cache->st(), ct.ok() ? ct.value() : nullptr, m_r.cache, m_r.id, m_r.cache_path,
                                 m_r.archive_device);
        SideFacts a = probe_side(archive->st(), at.ok() ? at.value() : nullptr, m_r.archive, m_r.id,
                                 m_r.archive_path, m_r.cache_device);
        if (!ct.ok()) c.marker_error = ct.error().message;
        if (!at.ok()) a.marker_error = at.error().message;
        Health h = judge_health(c, a);
        if (h.healthy) return ok_status();
        ARCHCTL_TRY_STATUS(set_seen(h.summary()));
        if (h.blocker) return fail(*h.blocker);  // no wait fixes it
        if (auto end = wait_end(m_d); end != WaitEnd::keep_waiting) return give_up(end, "waiting for route health");
        const Down down = !c.reachable ? Down{c.node, c.error} : !a.reachable ? Down{a.node, a.error} : Down{};
        if (auto over = outage_end(down)) return *over;
        nap(m_d, k_poll);
    }
}

Status Attempt::observe(session::NodeSession& reader, const std::string& reader_name, const NonceFile& nonce,
                        const std::string& what) {
    auto next_probe = std::chrono::steady_clock::now() + k_poll;
    for (;;) {
        auto seen = observe_nonce(reader, nonce);
        if (seen.ok() && seen.value()) return ok_status();
        if (!seen.ok() && !transient(seen.error())) return seen.take_error();
        ARCHCTL_TRY_STATUS(set_seen(seen.ok() ? fmt::format("{}: nonce {} not there yet", reader_name, nonce.name)
                                              : seen.error().message));
        if (auto end = wait_end(m_d); end != WaitEnd::keep_waiting) return give_up(end, what);
        // A nonce cannot travel while a Syncthing is down: that wait is an outage (asked twice a
        // second at most, not at every look).
        if (std::chrono::steady_clock::now() >= next_probe) {
            next_probe = std::chrono::steady_clock::now() + k_poll;
            if (auto over = outage_end(syncthing_down())) return *over;
        }
        nap(m_d, k_nonce_poll);
    }
}

Status Attempt::exchange(config::Role from) {
    const SideRef w = side(from);
    ARCHCTL_TRY_STATUS(set_step(fmt::format("nonce {} -> {}", w.node, w.peer)));
    ARCHCTL_TRY_ASSIGN(session::NodeSession * writer, m_s.link(w.node));
    ARCHCTL_TRY_ASSIGN(session::NodeSession * reader, m_s.link(w.peer));
    const NonceFile nonce = make_nonce(m_r.id, w.node, *w.path);
    const std::string reader_path = from == config::Role::cache ? m_r.archive_path : m_r.cache_path;
    ARCHCTL_TRY_STATUS(write_nonce(*writer, nonce));
    // --no-wait: a healthy route gets the moment a nonce needs to travel, no more.
    if (m_d.no_wait_after) m_d.no_wait_after = std::max(*m_d.no_wait_after, std::chrono::steady_clock::now() + k_no_wait_nonce_grace);
    crash_point("route.nonce.written");
    (void)writer->st().scan(m_r.id, {nonce.name});  // no waiting for the watcher
    NonceFile expected = nonce;
    expected.folder_path = reader_path;
    Status seen = observe(*reader, w.peer, expected, fmt::format("waiting for the nonce from {} on {}", w.node, w.peer));
    if (seen.ok()) crash_point("route.nonce.observed");
    return seen;
}

Status Attempt::verify() {
    const auto started = std::chrono::steady_clock::now();
    ARCHCTL_TRY_STATUS(wait_healthy());
    for (config::Role from : {config::Role::cache, config::Role::archive}) {
        Status done = exchange(from);
        if (!done.ok()) {
            Error e = done.take_error();
            if (e.is(ErrorCode::ROUTE_TIMEOUT) || is_clean_stop(e)) return e;
            m_r.last_check_at = now_text();
            m_r.last_check = e.message;
            (void)m_s.store().save(m_r, "check.recorded");
            return Error(ErrorCode::ROUTE_CHECK_FAILED, fmt::format("nonce check of route '{}' failed: {}", m_r.id, e.message));
        }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    m_r.state = RouteState::ready;
    m_r.verified_at = now_text();
    m_r.last_check_at = m_r.verified_at;
    m_r.last_check = "ok";
    m_r.last_check_seconds = seconds;
    m_r.step = "ready";
    m_r.step_started_at = m_r.verified_at;
    m_r.seen.clear();
    m_r.error.clear();
    return m_s.store().save(m_r, "ready");
}

}  // namespace archctl::routes
