#include "lib/jobs/core/job_row.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "lib/base/json_member.hpp"
#include "lib/base/lock_file.hpp"
#include "lib/node/client/ops.hpp"

namespace archctl::jobs {

bool JobSummary::finished() const {
    return ledger.state == JobState::done || ledger.state == JobState::cancelled || ledger.state == JobState::failed;
}

namespace {

// A transfer's or an eviction's counts from its definition and stored ledger: bytes and files
// done of the total (an eviction counts what it freed of what it proved).
struct Counts {
    std::uint64_t bytes_done = 0, bytes_total = 0, files_done = 0, files_total = 0;
};

Counts counts_of(const nlohmann::json& def, const nlohmann::json& ledger, JobState state) {
    Counts c;
    const nlohmann::json& l = ledger.is_object() ? ledger : nlohmann::json::object();
    c.files_total = member_or_empty(def, "files").size();
    if (def.value("op", "") == "evict") {
        c.bytes_total = def.value("required_bytes", std::uint64_t{0});
        c.bytes_done = std::min(c.bytes_total, l.value("bytes_freed", std::uint64_t{0}));
        c.files_done = std::min(c.files_total, l.value("files_removed", std::uint64_t{0}));
        return c;
    }
    c.bytes_total = def.value("delta_bytes", std::uint64_t{0});
    bool synced = l.value("synced", false) || state == JobState::done;
    c.bytes_done = synced ? c.bytes_total : std::min(c.bytes_total, l.value("bytes_present", std::uint64_t{0}));
    c.files_done = synced ? c.files_total : 0;
    return c;
}

// The last session's end for a finished job; null while it may still go on.
nlohmann::json ended_at(const nlohmann::json& ledger, bool finished) {
    if (!finished || !ledger.is_object()) return nullptr;
    const auto& sessions = member_or_empty(ledger, "sessions");
    for (auto it = sessions.rbegin(); it != sessions.rend(); ++it)
        if (it->is_object() && !it->value("ended", "").empty()) return it->value("ended", "");
    return nullptr;
}

}  // namespace

JobSummary::Identity JobSummary::identity() const {
    static const nlohmann::json k_none = nlohmann::json::object();
    const nlohmann::json& def = definition.is_object() ? definition : k_none;
    return {def.value("op", ""), def.value("qb_id", ""), def.value("name", ""),
            def.value("source", nlohmann::json::object()).value("node", ""),
            def.value("target", nlohmann::json::object()).value("node", "")};
}

nlohmann::json JobSummary::to_json() const {
    static const nlohmann::json k_none = nlohmann::json::object();
    const nlohmann::json& def = definition.is_object() ? definition : k_none;
    const Identity who = identity();
    Counts c = counts_of(def, stored_ledger, ledger.state);
    double percent = c.bytes_total ? 100.0 * static_cast<double>(c.bytes_done) / static_cast<double>(c.bytes_total)
                                   : (ledger.state == JobState::done ? 100.0 : 0.0);
    nlohmann::json failure = nullptr;
    if (ledger.failure.is_object() && !ledger.failure.empty())
        failure = {{"code", ledger.failure.value("code", "")}, {"message", ledger.failure.value("message", "")}};
    std::string created = def.value("created_at", "");
    bool ended = finished() && !damaged;
    return {{"id", id},
            {"op", who.op},
            {"resource", who.resource},
            {"name", who.name},
            {"source", who.source},
            {"target", who.target},
            {"state", damaged ? std::string("damaged") : to_string(ledger.state)},
            {"step", ledger.step},
            {"bytes_done", c.bytes_done},
            {"bytes_total", c.bytes_total},
            {"files_done", c.files_done},
            {"files_total", c.files_total},
            {"percent", std::round(percent * 10.0) / 10.0},
            {"started", created.empty() ? nlohmann::json(nullptr) : nlohmann::json(created)},
            {"ended", ended_at(stored_ledger, ended)},
            {"pid", running && pid > 0 ? nlohmann::json(pid) : nlohmann::json(nullptr)},
            {"failure", failure},
            {"running", running},
            {"status", status},
            {"needs_attention", needs_attention},
            {"kept", ledger.kept}};
}

void read_lock(const state::JobStore& store, JobSummary& row) {
    auto lock = LockFile::read(store.dir_of(row.id));
    row.running = lock.ok() && lock_holder_alive(lock.value());
    row.pid = row.running ? lock.value().pid : 0;
}

namespace {

// "used by other torrents" for `n` files kept for `code`.
std::string kept_reason_words(const std::string& code, std::size_t n) {
    bool one = n == 1;
    if (code == "referenced") return one ? "used by another torrent" : "used by other torrents";
    if (code == "preexisting") return "there before the job";
    if (code == "replaced") return "replaced since the job placed " + std::string(one ? "it" : "them");
    if (code == "size_changed") return "changed in size since the job placed " + std::string(one ? "it" : "them");
    if (code == "other_links") return one ? "with another hard link" : "with other hard links";
    if (code == "not_regular") return one ? "no longer a regular file" : "no longer regular files";
    return "kept for another reason";
}

std::string files_word(std::size_t n) { return n == 1 ? "file" : "files"; }

}  // namespace

std::string kept_text(const nlohmann::json& kept) {
    std::vector<std::string> parts;
    for (const char* step : {"unmerge", "cleanup"}) {
        std::vector<std::pair<std::string, std::size_t>> by_code;  // in order of first appearance
        std::size_t total = 0;
        for (const auto& k : kept) {
            if (!k.is_object() || k.value("step", "unmerge") != step) continue;
            std::string code = k.value("code", "");
            auto it = std::find_if(by_code.begin(), by_code.end(), [&](const auto& p) { return p.first == code; });
            if (it == by_code.end()) by_code.emplace_back(code, 1);
            else ++it->second;
            ++total;
        }
        if (total == 0) continue;
        std::string who = std::string(step) == "unmerge" ? "compensation" : "cleanup";
        if (by_code.size() == 1) {
            parts.push_back(fmt::format("{} kept {} {} {}", who, total, files_word(total), kept_reason_words(by_code[0].first, total)));
            continue;
        }
        std::vector<std::string> groups;
        for (const auto& [code, n] : by_code) groups.push_back(fmt::format("{} {}", n, kept_reason_words(code, n)));
        parts.push_back(fmt::format("{} kept {} {}: {}", who, total, files_word(total), fmt::join(groups, ", ")));
    }
    return fmt::format("{}", fmt::join(parts, "; "));
}

JobSummary summarize_damaged(const state::JobStore& store, const std::string& id) {
    JobSummary s;
    s.id = id;
    s.definition = nlohmann::json::object();
    s.damaged = true;
    s.needs_attention = true;
    auto l = store.ledger(id);
    s.stored_ledger = l.ok() ? l.value() : nlohmann::json::object();
    if (s.stored_ledger.is_object()) {
        s.ledger.step = s.stored_ledger.value("step", "");
        s.ledger.failure = s.stored_ledger.value("failure", nlohmann::json());
        s.ledger.kept = s.stored_ledger.value("kept", nlohmann::json::array());
    }
    auto def = store.definition(id);
    std::string why = def.ok() ? "its definition is unreadable" : def.error().message;
    auto events = store.events(id);
    if (events.ok())
        for (const auto& e : events.value().records)
            if (e.value("type", "") == "created" && e.contains("staging") && e["staging"].is_array()) s.staging = e["staging"];
    std::vector<std::string> where;
    for (const auto& st : s.staging) where.push_back(fmt::format("{} on '{}'", st.value("path", ""), st.value("node", "")));
    s.status = fmt::format("damaged: {}; nothing can drive it (its events are in 'archctl job show {}'); {}'archctl job rm {}' removes "
                           "{}",
                           why, id, where.empty() ? "" : fmt::format("its staging: {}; ", fmt::join(where, ", ")), id,
                           where.empty() ? "its records" : "its staging and its records");
    return s;
}

Status remove_damaged_staging(Nodes& nodes, const JobSummary& row) {
    Status first;
    for (const auto& st : row.staging) {
        std::string node = st.value("node", ""), path = st.value("path", "");
        if (node.empty() || path.empty()) continue;
        Status s = [&]() -> Status {
            ARCHCTL_TRY_ASSIGN(NodeHandle * handle, nodes.get(node));
            ARCHCTL_TRY_ASSIGN(node::Transport * transport, handle->ops());
            ARCHCTL_TRY_STATUS(node::Ops(*transport).cleanup({.job_dir = path, .referenced = {}, .save_path = std::nullopt, .source_base = std::nullopt, .files = {}, .aux = {}}));
            return {};
        }();
        if (!s.ok() && first.ok())
            first = Error(s.error().code, fmt::format("cannot remove the staging of damaged job {} at {} on '{}': {}", row.id, path, node,
                                                      s.error().message),
                          "the job's records stay so the path stays known; fix that and run 'archctl job rm' again");
    }
    return first;
}

}  // namespace archctl::jobs
