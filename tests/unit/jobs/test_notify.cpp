// The job row of every --json document (JobSummary::to_json) and the job-end notifications
// (jobs/notify.hpp): exec hooks fed the row on stdin, a url POSTed the same, failures as warnings.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "lib/jobs/core/notify.hpp"
#include "lib/jobs/transfer/summary.hpp"
#include "tests/support/scratch.hpp"
#include "tests/unit/clients/canned_server.hpp"

using namespace archctl;
using namespace archctl::jobs;
using namespace archctl::jobs::transfer;
using nlohmann::json;

namespace {

JobSummary transfer_row(JobState state) {
    JobSummary row;
    row.id = "20261203-061500-ab12";
    row.definition = {{"op", "archive"},
                      {"qb_id", "78d5a6edfa4e0000000000000000000000000000"},
                      {"name", "Some.ISO"},
                      {"created_at", "2026-12-03T06:15:00Z"},
                      {"source", {{"node", "seedbox"}}},
                      {"target", {{"node", "nas"}}},
                      {"delta_bytes", 1000},
                      {"files", json::array({json::object(), json::object(), json::object(), json::object()})}};
    Ledger stored;  // the transfer kind's ledger as the job stores it
    stored.state = state;
    stored.step = state == JobState::done ? TransferStep::done : TransferStep::sync;
    stored.bytes_present = 250;
    Session s;
    s.started = "2026-12-03T06:15:01Z";
    s.ended = "2026-12-03T06:16:00Z";
    stored.sessions.push_back(s);
    row.stored_ledger = stored.to_json();
    row.ledger.state = stored.state;
    row.ledger.step = std::string(to_string(stored.step));
    row.ledger.bytes_present = stored.bytes_present;
    return row;
}

std::string read_file(const std::filesystem::path& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::string script(const test::Scratch& s, const std::string& name, const std::string& body) {
    auto path = s.write(name, "#!/bin/sh\n" + body + "\n");
    ::chmod(path.c_str(), 0755);
    return path.string();
}

}  // namespace

TEST_CASE("a job row gives numbers as numbers, timestamps, and null where nothing is known") {
    JobSummary row = transfer_row(JobState::running);
    json j = row.to_json();
    CHECK(j["id"] == row.id);
    CHECK(j["op"] == "archive");
    CHECK(j["resource"] == "78d5a6edfa4e0000000000000000000000000000");
    CHECK(j["source"] == "seedbox");
    CHECK(j["target"] == "nas");
    CHECK(j["state"] == "running");
    CHECK(j["step"] == "sync");
    CHECK(j["bytes_done"] == 250);
    CHECK(j["bytes_total"] == 1000);
    CHECK(j["files_done"] == 0);
    CHECK(j["files_total"] == 4);
    CHECK(j["percent"].is_number());
    CHECK(j["percent"].get<double>() == doctest::Approx(25.0));
    CHECK(j["started"] == "2026-12-03T06:15:00Z");
    CHECK(j["ended"].is_null());  // it may still go on
    CHECK(j["pid"].is_null());
    CHECK(j["failure"].is_null());
    CHECK(j["status"].is_string());
    CHECK(j["kept"].is_array());

    row.running = true;
    row.pid = 4242;
    CHECK(row.to_json()["pid"] == 4242);
}

TEST_CASE("a finished job's row has its end and its failure code") {
    JobSummary done = transfer_row(JobState::done);
    json d = done.to_json();
    CHECK(d["bytes_done"] == 1000);
    CHECK(d["files_done"] == 4);
    CHECK(d["percent"].get<double>() == doctest::Approx(100.0));
    CHECK(d["ended"] == "2026-12-03T06:16:00Z");

    JobSummary failed = transfer_row(JobState::failed);
    failed.ledger.failure = {{"code", "VERIFY_FAILED"}, {"message", "recheck found 2 files incomplete"}, {"step", "verify"}};
    json f = failed.to_json();
    CHECK(f["failure"] == json({{"code", "VERIFY_FAILED"}, {"message", "recheck found 2 files incomplete"}}));
    CHECK(f["ended"] == "2026-12-03T06:16:00Z");
}

TEST_CASE("an eviction's row counts what it freed of what it proved") {
    JobSummary row;
    row.id = "20261203-061500-ev01";
    row.definition = {{"op", "evict"},          {"qb_id", "aa"},
                      {"name", "x"},            {"source", {{"node", "seedbox"}}},
                      {"target", {{"node", ""}}}, {"required_bytes", 400},
                      {"files", json::array({json::object(), json::object()})}};
    row.ledger.state = JobState::done;
    row.ledger.step = "done";
    row.stored_ledger = {{"state", "done"}, {"files_removed", 2}, {"bytes_freed", 400},
                         {"sessions", json::array({{{"started", "a"}, {"ended", "2026-12-03T07:00:00Z"}}})}};
    json j = row.to_json();
    CHECK(j["op"] == "evict");
    CHECK(j["bytes_done"] == 400);
    CHECK(j["bytes_total"] == 400);
    CHECK(j["files_done"] == 2);
    CHECK(j["files_total"] == 2);
    CHECK(j["target"] == "");
    CHECK(j["started"].is_null());
    CHECK(j["ended"] == "2026-12-03T07:00:00Z");
}

TEST_CASE("the notify event of a job's end") {
    CHECK(notify_event(transfer_row(JobState::done)) == "done");
    CHECK(notify_event(transfer_row(JobState::failed)) == "failed");
    CHECK(notify_event(transfer_row(JobState::cancelled)) == "cancelled");
    CHECK(notify_event(transfer_row(JobState::cleanup_required)) == "needs_attention");
    CHECK(notify_event(transfer_row(JobState::compensating)) == "needs_attention");
    JobSummary merged = transfer_row(JobState::failed);
    merged.needs_attention = true;
    CHECK(notify_event(merged) == "needs_attention");
    CHECK_FALSE(notify_event(transfer_row(JobState::running)));
}

TEST_CASE("an exec hook gets the row with its event on stdin") {
    test::Scratch s;
    auto out = s / "got.json";
    NotifySettings settings;
    settings.exec = {script(s, "hook.sh", "cat > \"$1\""), out.string()};
    std::vector<std::string> warnings;
    notify_job_end(settings, notify_document(transfer_row(JobState::done), "done"), [&](const std::string& w) { warnings.push_back(w); });
    CHECK(warnings.empty());
    json got = json::parse(read_file(out));
    CHECK(got["event"] == "done");
    CHECK(got["schema"] == 1);
    CHECK(got["id"] == "20261203-061500-ab12");
    CHECK(got["bytes_done"] == 1000);
}

TEST_CASE("a failing, missing or hanging hook is one warning and returns") {
    test::Scratch s;
    auto doc = notify_document(transfer_row(JobState::failed), "failed");
    std::vector<std::string> warnings;
    auto warn = [&](const std::string& w) { warnings.push_back(w); };

    NotifySettings failing;
    failing.exec = {script(s, "fail.sh", "cat >/dev/null; exit 3")};
    notify_job_end(failing, doc, warn);
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("exited with status 3") != std::string::npos);

    NotifySettings missing;
    missing.exec = {(s / "no-such-hook").string()};
    notify_job_end(missing, doc, warn);
    CHECK(warnings.size() == 2);

    NotifySettings hanging;
    hanging.exec = {script(s, "hang.sh", "sleep 30")};  // never reads its stdin either
    hanging.timeout = std::chrono::milliseconds(500);
    auto started = std::chrono::steady_clock::now();
    notify_job_end(hanging, doc, warn);
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
    REQUIRE(warnings.size() == 3);
    CHECK(warnings[2].find("did not finish within 1 s") != std::string::npos);
}

TEST_CASE("a url hook receives the same document as a JSON POST; an error status is a warning") {
    std::string body;
    std::string type;
    test::CannedServer server([&](const test::SeenRequest& r) {
        body = r.body;
        type = r.headers.count("content-type") ? r.headers.at("content-type") : "";
        return test::CannedReply(r.path == "/hook" ? 204 : 500);
    });
    NotifySettings settings;
    settings.url = server.url() + "/hook";
    std::vector<std::string> warnings;
    auto doc = notify_document(transfer_row(JobState::done), "done");
    notify_job_end(settings, doc, [&](const std::string& w) { warnings.push_back(w); });
    CHECK(warnings.empty());
    CHECK(json::parse(body) == doc);
    CHECK(type == "application/json");

    settings.url = server.url() + "/broken";
    notify_job_end(settings, doc, [&](const std::string& w) { warnings.push_back(w); });
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("500") != std::string::npos);

    settings.url = "http://127.0.0.1:1/nothing-listens";
    notify_job_end(settings, doc, [&](const std::string& w) { warnings.push_back(w); });
    CHECK(warnings.size() == 2);
}
