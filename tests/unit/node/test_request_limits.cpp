// The node checks every request against itself before acting, and nothing a request holds ends
// the server: an error response, then the next request on the same stream. `node serve` refuses
// a line past the limit as soon as it passes it, and reads on.

#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <limits>
#include <thread>

#include <poll.h>

#include "lib/base/fs.hpp"
#include "lib/node/server/server.hpp"
#include "lib/node/wire/ops_pieces.hpp"
#include "tests/unit/node/node_fixture.hpp"

using namespace archctl;
using namespace archctl::node;
using namespace archctl::node::test;
using nlohmann::json;

namespace {

constexpr std::uint64_t k_u64_max = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint32_t k_u32_max = std::numeric_limits<std::uint32_t>::max();
// A v1 torrent of one 5-byte file, a.txt (tests/fuzz/corpus/v1-single.torrent).
constexpr const char* k_one_file_torrent =
    "ZDQ6aW5mb2Q2Omxlbmd0aGk1ZTQ6bmFtZTU6YS50eHQxMjpwaWVjZSBsZW5ndGhpMTYzODRlNjpwaWVjZXMyMDqq9MYd3MXootq+3g87SCzZrqlDTWVl";

// The request seen to end `node serve` with "terminate called without an active exception".
json absurd_build(const NodeFixture& f) {
    return {{"to", f.qb() + "/save/.absurd.parts"},
            {"piece_count", k_u32_max},
            {"piece_size", k_u32_max},
            {"pieces", {{{"piece", 0}, {"length", k_u64_max}, {"ranges", json::array()}}}}};
}

// The node still answers on the same connection.
void still_serves(NodeFixture& f) {
    CHECK_FALSE(f.transport().broken());
    auto info = call_operation(f.transport(), Op::info, json::object());
    CHECK_MESSAGE(info.ok(), (info.ok() ? "" : info.error().message));
}

}  // namespace

NODE_TEST(partfile_build_with_absurd_numbers_is_refused_and_the_node_answers_the_next_request) {
    Error e = f.fails(Op::partfile_build, absurd_build(f));
    CHECK(e.code == "BAD_REQUEST");
    CHECK(e.message.find("piece_count 4294967295 is more than any torrent has") != std::string::npos);
    still_serves(f);
}

NODE_TEST(partfile_build_with_a_huge_piece_count_and_no_pieces_writes_nothing) {
    std::filesystem::create_directories(f.qb() + "/save");
    Error e = f.fails(Op::partfile_build, {{"to", f.qb() + "/save/.huge.parts"}, {"piece_count", 100000000}, {"piece_size", 16384},
                                           {"pieces", json::array()}});
    CHECK(e.code == "BAD_REQUEST");
    CHECK(list_files(f.qb() + "/save").empty());
    // The most pieces a torrent may have are accepted (a header of 32 MiB and 8 bytes, in whole
    // KiB), as a dry run.
    auto dry = f.ok(Op::partfile_build, {{"piece_count", k_max_partfile_pieces}, {"piece_size", 16384}, {"pieces", json::array()},
                                         {"dry_run", true}});
    CHECK(dry.at("file_size") == (std::uint64_t{32} << 20) + 1024);
    still_serves(f);
}

NODE_TEST(partfile_build_ranges_that_overflow_are_refused_before_a_byte_is_read) {
    const std::string file = f.write("qb/save/T/a.bin", std::string(16384, 'a'));
    auto request = [&](std::uint64_t at, std::uint64_t length, std::uint64_t offset) {
        return json{{"to", f.qb() + "/save/T/.t.parts"},
                    {"piece_count", 3},
                    {"piece_size", 16384},
                    {"pieces", {{{"piece", 0}, {"length", 16384},
                                 {"ranges", {{{"at", at}, {"length", length}, {"path", file}, {"offset", offset}, {"keep", true}}}}}}}};
    };
    // at + length wraps to 0: it used to pass, and the piece was assembled past its buffer.
    Error wrap = f.fails(Op::partfile_build, request(1, k_u64_max, 0));
    CHECK(wrap.code == "BAD_REQUEST");
    CHECK(wrap.message.find("ends past the piece's 16384 bytes") != std::string::npos);
    Error past = f.fails(Op::partfile_build, request(16000, 385, 0));
    CHECK(past.code == "BAD_REQUEST");
    Error offset = f.fails(Op::partfile_build, request(0, 100, k_u64_max - 50));
    CHECK(offset.code == "BAD_REQUEST");
    CHECK(offset.message.find("past any file") != std::string::npos);
    Error size = f.fails(Op::partfile_build, {{"to", f.qb() + "/save/T/.t.parts"}, {"piece_count", 3},
                                              {"piece_size", (std::uint64_t{1} << 30) + 1}, {"pieces", json::array()}});
    CHECK(size.code == "BAD_REQUEST");
    CHECK(list_files(f.qb() + "/save/T") == std::vector<std::string>{"a.bin"});
    still_serves(f);
}

NODE_TEST(partfile_build_that_would_not_fit_in_the_free_space_is_refused_without_a_floor) {
    const std::string file = f.write("qb/save/T/a.bin", std::string(16384, 'a'));
    struct statvfs vfs {};
    REQUIRE(::statvfs(f.qb().c_str(), &vfs) == 0);
    const std::uint64_t free = std::uint64_t{vfs.f_bavail} * vfs.f_frsize;
    // Slots of 1 GiB kept each, one more than the free space holds; min_free absent (0). The
    // check comes before a byte is read, so the file it names need not be that long.
    const std::uint64_t gib = std::uint64_t{1} << 30;
    const std::uint64_t pieces = free / gib + 2;
    REQUIRE(pieces < 100000);
    json list = json::array();
    for (std::uint64_t p = 0; p < pieces; ++p) {
        json kept = {{"at", 0}, {"length", gib}, {"path", file}, {"offset", 0}, {"keep", true}};
        list.push_back({{"piece", p}, {"length", gib}, {"ranges", json::array({kept})}});
    }
    Error e = f.fails(Op::partfile_build,
                      {{"to", f.qb() + "/save/T/.t.parts"}, {"piece_count", pieces}, {"piece_size", gib}, {"pieces", list}});
    CHECK(e.code == "DISK_INSUFFICIENT");
    CHECK(e.message.find("cannot build part file") != std::string::npos);
    CHECK(list_files(f.qb() + "/save/T") == std::vector<std::string>{"a.bin"});
    still_serves(f);
}

NODE_TEST(no_request_ends_the_server) {
    const std::string job = f.sync() + "/.archctl/jobs/j1";
    const std::string victim = f.write("outside/victim", "not the node's");
    const std::vector<std::pair<std::string, json>> hostile = {
        {"partfile_build", absurd_build(f)},
        {"partfile_build", {{"piece_count", "many"}}},
        {"partfile_build", {{"piece_count", 1}, {"piece_size", 1}, {"dry_run", true},
                            {"pieces", {{{"piece", 0}, {"length", 1}, {"sha1", "zz"}, {"ranges", json::array()}}}}}},
        {"partfile_read", {{"path", f.qb()}, {"expect_pieces", k_u32_max}, {"expect_piece_size", k_u32_max}}},
        {"partfile_copy", {{"from", f.qb() + "/none"}, {"to", f.qb() + "/x"}, {"min_free", k_u64_max}}},
        {"stage", {{"job_dir", job}, {"source_base", f.qb()}, {"budget_bytes", k_u64_max}, {"min_free", k_u64_max},
                   {"files", {{{"index", k_u32_max}, {"path", "a"}, {"size", k_u64_max}}}}}},
        {"receive_check", {{"job_dir", job}, {"files", {{{"index", k_u32_max}, {"path", "a"}, {"size", k_u64_max}}}}}},
        {"merge", {{"job_dir", job}, {"save_path", f.qb() + "/save"}, {"min_free", k_u64_max},
                   {"files", {{{"index", k_u32_max}, {"path", "a"}, {"size", k_u64_max}}}}}},
        {"adopt_incomplete", {{"job_dir", job}, {"save_path", f.qb() + "/save"}, {"suffix", ".!qB"}, {"indices", {k_u32_max}}}},
        {"verify_pieces", {{"save_path", f.qb()}, {"torrent_b64", "!!!!"}, {"files", "0-4294967295"}}},
        {"verify_pieces", {{"save_path", f.qb()}, {"torrent_b64", k_one_file_torrent}, {"files", "0-4294967295"}}},
        // A file index of 2^32-1 used to wrap the table's size to 0 and write past it.
        {"verify_pieces", {{"save_path", f.qb()}, {"torrent_b64", k_one_file_torrent}, {"paths", {{k_u32_max, "x"}}}}},
        {"tree", {{"base", f.qb()}, {"paths", {"../../../..", std::string(5000, 'a'), ""}}}},
        {"unlink_owned", {{"paths", {victim, f.qb() + "/../outside/victim"}}, {"stop_at", "/"}}},
        {"nonce_write", {{"path", f.qb() + "/../outside/nonce"}, {"content", std::string(100000, 'n')}, {"create_parents", true}}},
        {"nonce_write", {{"path", f.qb() + "/n"}, {"content", 12}}},
        {"space", {{"path", std::string(70000, '/')}}},
        {"info", {{"probe_dirs", {f.outside(), "relative", ""}}}},
        {"open_roots", {{"roots", {"/"}}}},
        {"no_such_operation", json::object()},
    };
    for (const auto& [op, args] : hostile) {
        CAPTURE(op);
        auto r = call_operation(f.transport(), op, args);
        if (!r.ok()) {
            CHECK(r.error().code != "NODE_UNREACHABLE");
            CHECK(r.error().code != "PROTOCOL");
        }
        still_serves(f);
    }
    CHECK(lstat_path(victim).exists);
    CHECK_FALSE(lstat_path(f.outside() + "/nonce").exists);
}

namespace {

// Reads one line from `fd` within `limit` (empty on timeout or end).
std::string read_line_within(int fd, std::string& buffer, std::chrono::seconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        if (auto nl = buffer.find('\n'); nl != std::string::npos) {
            std::string line = buffer.substr(0, nl);
            buffer.erase(0, nl + 1);
            return line;
        }
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return {};
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
        char chunk[65536];
        ssize_t n = ::read(fd, chunk, sizeof chunk);
        if (n <= 0) return {};
        buffer.append(chunk, static_cast<std::size_t>(n));
    }
}

bool write_everything(int fd, std::string_view data) {
    while (!data.empty()) {
        ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

}  // namespace

NODE_TEST(a_number_that_is_not_an_integer_is_refused_before_any_field_is_read) {
    // Found by fuzz_node: 2.2e32 as a file size is undefined behaviour in the JSON library's
    // conversion to an integer field.
    std::filesystem::create_directories(f.qb() + "/save");
    Error e = f.fails(Op::partfile_build, {{"to", f.qb() + "/save/.x.parts"}, {"piece_count", 2.2222e32}, {"piece_size", 16384},
                                           {"pieces", json::array()}});
    CHECK(e.code == "BAD_REQUEST");
    CHECK(e.message.find("a number that is not an integer") != std::string::npos);
    CHECK(f.fails(Op::tree, {{"base", f.qb()}, {"paths", {"a"}}, {"deep", {{"x", {0.5}}}}}).code == "BAD_REQUEST");
    still_serves(f);
}

TEST_CASE("node serve refuses a line past the limit before the line ends, and one nested a million deep, then answers the next request") {
    archctl::test::Scratch scratch;
    std::filesystem::create_directories(scratch.path() / "root");
    auto roots = RootSet::open({(scratch.path() / "root").string()});
    REQUIRE(roots.ok());
    Server server(std::move(roots).value());
    int in[2], out[2];
    REQUIRE(::pipe(in) == 0);
    REQUIRE(::pipe(out) == 0);
    auto served = std::async(std::launch::async, [&] { return server.serve(in[0], out[1]); });
    std::string buffer;
    CHECK(read_line_within(out[0], buffer, std::chrono::seconds(30)).find("\"hello\"") != std::string::npos);

    // More than the limit and no newline yet: the refusal must not wait for the line's end.
    std::atomic<bool> more{false};
    auto writer = std::async(std::launch::async, [&] {
        const std::string block(1u << 20, 'x');
        bool ok = write_everything(in[1], "{\"type\":\"request\",\"id\":3,\"op\":\"info\",\"args\":{\"x\":\"");
        for (std::size_t i = 0; ok && i < (k_max_line_bytes >> 20) + 1; ++i) ok = write_everything(in[1], block);
        while (ok && !more) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        for (int i = 0; ok && i < 8; ++i) ok = write_everything(in[1], block);
        ok = ok && write_everything(in[1], "\"}}\n{\"type\":\"request\",\"id\":4,\"op\":\"info\",\"args\":{}}\n");
        // Nested a million deep: refused, not a stack overflow.
        ok = ok && write_everything(in[1], "{\"type\":\"request\",\"id\":5,\"op\":\"info\",\"args\":{\"a\":" +
                                               std::string(1000000, '[') + std::string(1000000, ']') + "}}\n");
        ok = ok && write_everything(in[1], "{\"type\":\"request\",\"id\":6,\"op\":\"info\",\"args\":{}}\n");
        ::close(in[1]);
        return ok;
    });
    std::string refusal = read_line_within(out[0], buffer, std::chrono::seconds(120));
    more = true;
    auto refused = decode(refusal);
    REQUIRE(refused.ok());
    auto* r = std::get_if<Response>(&refused.value());
    REQUIRE(r);
    CHECK_FALSE(r->ok);
    CHECK(r->error.code == "PROTOCOL");
    CHECK(r->error.message.find("longer than 64.0 MiB") != std::string::npos);
    CHECK(r->error.message.find("{\"type\":\"request\",\"id\":3") != std::string::npos);
    CHECK(writer.get());
    // Request 4 is answered by the worker, the deep line refused by the reader as it is read:
    // either may be written first.
    std::vector<Response> two;
    for (int i = 0; i < 2; ++i) {
        auto message = decode(read_line_within(out[0], buffer, std::chrono::seconds(60)));
        REQUIRE(message.ok());
        REQUIRE(std::get_if<Response>(&message.value()));
        two.push_back(std::get<Response>(message.value()));
    }
    if (two[0].id != 4) std::swap(two[0], two[1]);
    const Response& answer = two[0];
    const Response& deep_refused = two[1];
    CHECK(answer.id == 4);
    CHECK(answer.ok);
    CHECK_FALSE(deep_refused.ok);
    CHECK(deep_refused.error.message.find("nested deeper than 64 levels") != std::string::npos);
    auto last = decode(read_line_within(out[0], buffer, std::chrono::seconds(60)));
    REQUIRE(last.ok());
    REQUIRE(std::get_if<Response>(&last.value()));
    CHECK(std::get<Response>(last.value()).id == 6);
    CHECK(std::get<Response>(last.value()).ok);
    CHECK(served.get().ok());
    ::close(in[0]);
    ::close(out[0]);
    ::close(out[1]);
}
