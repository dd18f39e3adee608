#pragma once
// Notifications at a job's end ([notify] in the configuration): the job's --json row (the
// document `job show --json` gives, JobSummary::to_json) plus an "event" field, written to the
// stdin of `[notify] exec = ["/path/hook", "arg"]` and POSTed to `[notify] url`. Secrets are
// never part of a row. A hook that fails, hangs past its timeout or cannot be reached is a
// warning: it never changes how the job ended.
//
//   if (auto event = notify_event(row, outcome)) notify_job_end(settings, notify_document(row, *event), warn);

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/jobs/core/job_row.hpp"

namespace archctl::jobs {

struct NotifySettings {
    std::vector<std::string> exec;          // [notify] exec: argv, no shell
    std::string url;                        // [notify] url: http(s) endpoint for a POST
    std::chrono::milliseconds timeout{10000};  // per hook
    bool empty() const { return exec.empty() && url.empty(); }
};

// The event a job's end is: "done", "failed", "needs_attention" (cleanup required, compensation
// pending, or failed after merging), "cancelled"; nullopt while the job may still go on.
[[nodiscard]] std::optional<std::string> notify_event(const JobSummary& row);

// The document a hook receives: the job row with "event" (and "schema": 1).
[[nodiscard]] nlohmann::json notify_document(const JobSummary& row, const std::string& event);

// Run the exec hook and POST to the url (whichever are set). Each failure is one line passed
// to `warn` (without the "archctl: warning: " prefix).
void notify_job_end(const NotifySettings& settings, const nlohmann::json& document,
                    const std::function<void(const std::string&)>& warn);

}  // namespace archctl::jobs
