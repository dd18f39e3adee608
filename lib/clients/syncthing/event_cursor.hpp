#pragma once
// EventCursor: the `since` bookkeeping for one Syncthing event subscription (one event mask).
//
// Syncthing numbers events per subscription (`id`), so each distinct mask needs its own cursor.
// After a Syncthing restart the ids start again at 1 while our `since` is large: a batch whose
// ids are not above `since`, or a changed system startTime, resets the cursor to 0. A jump in
// ids (first id > since + 1 once the cursor has started) means the 1000-event buffer overflowed
// and events were lost: the caller must resync from REST state.

#include <cstdint>
#include <string>
#include <vector>

#include "lib/clients/syncthing/types.hpp"

namespace archctl::clients::syncthing {

struct EventBatch {
    std::vector<Event> events;  // new events, ascending id
    bool restarted = false;     // Syncthing restarted; the cursor was reset (events are from the new run)
    bool gap = false;           // events were lost between the previous batch and this one
};

class EventCursor {
public:
    // `types`: the event types of the mask (empty = Syncthing's default set).
    explicit EventCursor(std::vector<std::string> types = {});

    // The `events=` parameter value ("A,B"), "" for the default set.
    [[nodiscard]] const std::string& mask() const { return m_mask; }
    [[nodiscard]] std::int64_t since() const { return m_since; }

    // Take the batch Syncthing returned for since(); advance the cursor.
    [[nodiscard]] EventBatch accept(std::vector<Event> batch);

    // Compare Syncthing's startTime with the last one seen. On a change (a restart) the cursor
    // resets to 0 and true is returned. The first observation only records the value.
    bool observe_start_time(const std::string& start_time);

    void reset() { m_since = 0; }

private:
    std::string m_mask;
    std::int64_t m_since = 0;
    std::string m_start_time;
};

// Join event types into a mask string.
[[nodiscard]] std::string mask_of(const std::vector<std::string>& types);

}  // namespace archctl::clients::syncthing
