#include "lib/clients/syncthing/event_cursor.hpp"

#include <algorithm>

namespace archctl::clients::syncthing {

std::string mask_of(const std::vector<std::string>& types) {
    std::string out;
    for (const auto& t : types) {
        if (!out.empty()) out.push_back(',');
        out += t;
    }
    return out;
}

EventCursor::EventCursor(std::vector<std::string> types) : m_mask(mask_of(types)) {}

EventBatch EventCursor::accept(std::vector<Event> batch) {
    EventBatch out;
    if (batch.empty()) return out;
    std::sort(batch.begin(), batch.end(), [](const Event& a, const Event& b) { return a.id < b.id; });
    if (batch.front().id <= m_since) {
        // Ids went backwards: a new Syncthing run. Everything in the batch belongs to it.
        out.restarted = true;
        m_since = 0;
    } else if (m_since > 0 && batch.front().id > m_since + 1) {
        out.gap = true;
    }
    m_since = batch.back().id;
    out.events = std::move(batch);
    return out;
}

bool EventCursor::observe_start_time(const std::string& start_time) {
    if (start_time.empty()) return false;
    if (m_start_time.empty()) {
        m_start_time = start_time;
        return false;
    }
    if (start_time == m_start_time) return false;
    m_start_time = start_time;
    m_since = 0;
    return true;
}

}  // namespace archctl::clients::syncthing
