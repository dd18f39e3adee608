#include "lib/state/tier_store.hpp"

#include <fmt/format.h>

#include "lib/base/fs.hpp"

namespace archctl::state {

nlohmann::json TierRecord::to_json() const {
    nlohmann::json j = {{"policy", policy},           {"outcome", outcome},         {"resumed", resumed},
                        {"archived", archived},       {"evicted", evicted},         {"failed", failed},
                        {"blocked", blocked},         {"free_before", free_before}, {"free_after", free_after},
                        {"want_free", want_free},     {"goal", goal},               {"goal_met", goal_met}};
    if (stop) j["stop"] = *stop;
    if (error) j["error"] = {{"code", error->code}, {"message", error->message}};
    if (!started.empty()) j["started"] = started;
    if (!ended.empty()) j["ended"] = ended;
    return j;
}

Result<TierRecord> TierRecord::from_json(const nlohmann::json& j) {
    if (!j.is_object()) return Error(ErrorCode::CORRUPT, "a tier record is not a JSON object");
    TierRecord r;
    try {  // nlohmann throws on a field of the wrong type
        r.policy = j.value("policy", "");
        r.outcome = j.value("outcome", "");
        r.resumed = j.value("resumed", std::size_t{0});
        r.archived = j.value("archived", std::size_t{0});
        r.evicted = j.value("evicted", std::size_t{0});
        r.failed = j.value("failed", std::size_t{0});
        r.blocked = j.value("blocked", std::size_t{0});
        r.free_before = j.value("free_before", std::uint64_t{0});
        r.free_after = j.value("free_after", std::uint64_t{0});
        r.want_free = j.value("want_free", std::uint64_t{0});
        r.goal = j.value("goal", "");
        r.goal_met = j.value("goal_met", false);
        if (j.contains("stop")) r.stop = j.at("stop").get<std::string>();
        if (j.contains("error")) {
            const auto& e = j.at("error");
            r.error = Failure{e.value("code", ""), e.value("message", "")};
        }
        r.started = j.value("started", "");
        r.ended = j.value("ended", "");
    } catch (const nlohmann::json::exception& e) {
        return Error(ErrorCode::CORRUPT, fmt::format("a tier record has a field of the wrong type: {}", e.what()));
    }
    return r;
}

std::string TierStore::path_of(const std::string& policy) const { return m_dir.tiers() + "/" + policy + ".json"; }

Status TierStore::write(const TierRecord& record) const {
    return write_file_atomic(path_of(record.policy), record.to_json().dump(2) + "\n", 0600);
}

Result<std::optional<TierRecord>> TierStore::read(const std::string& policy) const {
    const std::string path = path_of(policy);
    auto text = read_file(path);
    if (!text.ok()) {
        if (text.error().is(ErrorCode::NOT_FOUND)) return std::optional<TierRecord>();
        return text.take_error();
    }
    auto j = nlohmann::json::parse(text.value(), nullptr, false);
    auto record = TierRecord::from_json(j);
    if (!record.ok()) return Error(ErrorCode::CORRUPT, fmt::format("corrupt tier record '{}': {}", path, record.error().message));
    return std::optional<TierRecord>(std::move(record.value()));
}

}  // namespace archctl::state
