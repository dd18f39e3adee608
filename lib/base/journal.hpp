#pragma once
// Append-only JSON-lines journal (docs/style.md "Practices" 8).
//
// Line 1 is a version record {"journal": <kind>, "version": N}; every later line is one JSON
// record. Appends use O_APPEND; durability follows the sync policy: every record, batched by count
// (each record written at once, fsynced per batch), or buffered (records kept in memory and
// written with one write and one fsync per batch: a crash, even of the process alone, loses the
// unwritten batch, so only records the caller can rebuild from evidence may use it). Reading drops a torn last line (a crash mid-append) with a warning and reports every
// complete record; opening for append cuts that torn line off first, so the next record starts on
// a line of its own. Folding records into a ledger is the caller's atomic rewrite at a step boundary.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/fs.hpp"
#include "lib/base/result.hpp"

namespace archctl {

enum class SyncPolicy { every_record, batched, buffered };

struct JournalContents {
    int version = 0;
    std::vector<nlohmann::json> records;
    std::vector<std::string> warnings;  // e.g. "dropped a torn last line in '<path>'"
};

class JournalWriter {
public:
    // Opens (creating with its version line if absent) the journal at `path`.
    static Result<JournalWriter> open(const std::string& path, const std::string& kind, int version,
                                      SyncPolicy policy = SyncPolicy::every_record,
                                      unsigned batch_records = 64);

    JournalWriter(JournalWriter&&) noexcept = default;
    JournalWriter& operator=(JournalWriter&&) noexcept = default;
    ~JournalWriter();

    // Append one record (one line). Durable on return under every_record; under batched and
    // buffered, after the batch fills or flush().
    [[nodiscard]] Status append(const nlohmann::json& record);
    // The same for a record the caller serialized itself: one JSON object, no newline.
    [[nodiscard]] Status append_line(std::string_view json_line);
    // Writes what is buffered and fsyncs everything appended so far.
    [[nodiscard]] Status flush();

    const std::string& path() const { return m_path; }

private:
    JournalWriter(std::string path, UniqueFd fd, SyncPolicy policy, unsigned batch);

    std::string m_path;
    UniqueFd m_fd;
    SyncPolicy m_policy = SyncPolicy::every_record;
    unsigned m_batch = 64;
    unsigned m_pending = 0;
    std::string m_buffer;  // buffered policy: complete lines not yet written
};

// Read a journal. NOT_FOUND if absent; CORRUPT if a line other than the last is not JSON or the
// version line is missing or of another kind.
Result<JournalContents> read_journal(const std::string& path, const std::string& kind);

}  // namespace archctl
