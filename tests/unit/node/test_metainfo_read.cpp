// metainfo_read (lib/node/wire/ops_inspect.hpp) on both transports: a torrent's .torrent in
// qBittorrent's BT_backup read back byte for byte, a missing file or directory answered as not
// found, and everything else a request could make it read refused: a name that is not *.torrent,
// a symlink, a file over max_bytes or over what one protocol line carries, a path outside the
// roots, a max_bytes of 0 or past 256 MiB. A far end's answer that does not decode is PROTOCOL.

#include <filesystem>
#include <functional>
#include <string>

#include "lib/base/base64.hpp"
#include "lib/node/client/ops.hpp"
#include "tests/support/fakes.hpp"
#include "tests/unit/node/node_fixture.hpp"

using namespace archctl;
using namespace archctl::node;
using namespace archctl::node::test;
using nlohmann::json;

namespace {

constexpr std::uint64_t k_asked = std::uint64_t{64} << 20;  // what archctl asks for
const std::string k_id = "0123456789abcdef0123456789abcdef01234567";

// Bytes of every value, 0x00 and 0xff among them, as a .torrent's binary hashes have.
std::string binary_torrent() {
    std::string bytes = "d4:infod6:pieces20:";
    for (int i = 0; i < 20; ++i) bytes += static_cast<char>(i % 2 == 0 ? 0x00 : 0xff);
    bytes += "ee";
    bytes += random_bytes(3001, 7);  // not a multiple of 3: base64's padding
    return bytes;
}

// The bytes of a found result.
std::string read_back(const Result<MetainfoReadResult>& r) {
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().code + " " + r.error().message));
    REQUIRE(r->found);
    CHECK(r->data_b64.empty());  // decoded into data by Ops
    return r->data;
}

bool mentions(const Error& e, const std::string& text) { return e.message.find(text) != std::string::npos; }

// A result as the node wrote it, without the read counters every response carries.
json wire_result(NodeFixture& f, const json& args) {
    json r = f.ok(Op::metainfo_read, args);
    r.erase("io");
    return r;
}

}  // namespace

NODE_TEST(metainfo_read_reads_a_torrent_back_byte_for_byte) {
    const std::string bytes = binary_torrent();
    REQUIRE(bytes.find('\0') != std::string::npos);
    REQUIRE(bytes.find('\xff') != std::string::npos);
    const std::string path = f.write("qb/BT_backup/" + k_id + ".torrent", bytes);
    Ops ops(f.transport());
    CHECK(read_back(ops.metainfo_read({.path = path, .max_bytes = k_asked})) == bytes);
    // Exactly max_bytes is still read.
    CHECK(read_back(ops.metainfo_read({.path = path, .max_bytes = bytes.size()})) == bytes);
    // The wire: found, the bytes in base64, the file's size and stamp, nothing else.
    json whole = wire_result(f, {{"path", path}, {"max_bytes", k_asked}});
    CHECK(whole["stamp"].get<std::string>().find(':') != std::string::npos);
    whole.erase("stamp");
    CHECK(whole == json{{"found", true}, {"data_b64", base64_encode(bytes)}, {"size", bytes.size()}});
    // A part of it.
    json part = wire_result(f, {{"path", path}, {"max_bytes", k_asked}, {"offset", 20}, {"length", 7}});
    CHECK(part["data_b64"] == base64_encode(bytes.substr(20, 7)));
    CHECK(part["size"] == bytes.size());
    json tail = wire_result(f, {{"path", path}, {"max_bytes", k_asked}, {"offset", bytes.size() - 2}, {"length", 7}});
    CHECK(tail["data_b64"] == base64_encode(bytes.substr(bytes.size() - 2)));
    CHECK(f.fails(Op::metainfo_read, {{"path", path}, {"max_bytes", k_asked}, {"offset", bytes.size() + 1}, {"length", 7}}).code ==
          "BAD_REQUEST");
    CHECK(f.fails(Op::metainfo_read, {{"path", path}, {"max_bytes", k_asked}, {"offset", 0}, {"length", k_metainfo_read_line_bytes + 1}})
              .code == "BAD_REQUEST");

    const std::string empty = f.write("qb/BT_backup/empty.torrent", "");
    CHECK(read_back(ops.metainfo_read({.path = empty, .max_bytes = k_asked})).empty());
}

NODE_TEST(metainfo_read_reads_a_large_torrent_in_parts) {
    // Over two parts and a bit: no line carries the whole file; the bytes come back whole.
    const std::string bytes = random_bytes(static_cast<std::size_t>(2 * k_metainfo_read_part_bytes + 12345), 11);
    const std::string path = f.write("qb/BT_backup/" + k_id + ".torrent", bytes);
    Ops ops(f.transport());
    CHECK(read_back(ops.metainfo_read({.path = path, .max_bytes = k_asked})) == bytes);
    // A file over max_bytes is refused before its parts are read.
    auto over = ops.metainfo_read({.path = path, .max_bytes = bytes.size() - 1});
    REQUIRE_FALSE(over.ok());
    CHECK(over.error().code == "TOO_LARGE");
}

NODE_TEST(metainfo_read_answers_a_missing_file_or_directory_as_not_found) {
    f.write("qb/BT_backup/other.torrent", "d4:infodee");
    Ops ops(f.transport());
    for (const std::string& path : {f.qb() + "/BT_backup/" + k_id + ".torrent", f.qb() + "/no_such_dir/" + k_id + ".torrent",
                                    f.sync() + "/a/b/c/" + k_id + ".torrent"}) {
        CAPTURE(path);
        auto r = ops.metainfo_read({.path = path, .max_bytes = k_asked});
        REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
        CHECK_FALSE(r->found);
        CHECK(r->data_b64.empty());
        CHECK(wire_result(f, {{"path", path}, {"max_bytes", k_asked}}) == json{{"found", false}});
    }
    // Nothing was created on the way.
    CHECK_FALSE(std::filesystem::exists(f.qb() + "/no_such_dir"));
    CHECK_FALSE(std::filesystem::exists(f.sync() + "/a"));
}

NODE_TEST(metainfo_read_reads_torrent_files_only) {
    const std::string secret = f.write("qb/save/T/a.bin", "not a torrent");
    f.write("qb/BT_backup/" + k_id + ".fastresume", "d4:infodee");
    for (const std::string& path : {secret, f.qb() + "/BT_backup/" + k_id + ".fastresume", f.qb() + "/BT_backup/" + k_id + ".torrent.bak",
                                    f.qb() + "/BT_backup/" + k_id + ".TORRENT", f.qb() + "/BT_backup/missing.txt"}) {
        CAPTURE(path);
        Error e = f.fails(Op::metainfo_read, {{"path", path}, {"max_bytes", k_asked}});
        CHECK(e.code == "BAD_REQUEST");
        CHECK(mentions(e, "'" + path + "'"));
        CHECK(mentions(e, ".torrent files only"));
    }
    // A directory named like a .torrent is not a file.
    std::filesystem::create_directories(f.qb() + "/BT_backup/dir.torrent");
    CHECK(f.fails(Op::metainfo_read, {{"path", f.qb() + "/BT_backup/dir.torrent"}, {"max_bytes", k_asked}}).code == "NOT_REGULAR");
    // A root itself is no file either.
    CHECK(f.fails(Op::metainfo_read, {{"path", f.qb()}, {"max_bytes", k_asked}}).code == "BAD_REQUEST");
}

NODE_TEST(metainfo_read_never_follows_a_symlink) {
    const std::string target = f.write("outside/secret.torrent", "d4:infodee");
    f.write("qb/BT_backup/real.torrent", "d4:infodee");
    std::filesystem::create_symlink(target, f.qb() + "/BT_backup/" + k_id + ".torrent");
    std::filesystem::create_symlink("real.torrent", f.qb() + "/BT_backup/inside.torrent");
    std::filesystem::create_directory_symlink(f.outside(), f.qb() + "/linked");
    for (const std::string& path : {f.qb() + "/BT_backup/" + k_id + ".torrent", f.qb() + "/BT_backup/inside.torrent",
                                    f.qb() + "/linked/secret.torrent"}) {
        CAPTURE(path);
        Error e = f.fails(Op::metainfo_read, {{"path", path}, {"max_bytes", k_asked}});
        CHECK(e.code == "PATH_SYMLINK");
        CHECK(mentions(e, "'" + f.qb() + "/"));  // the path, or its component that is a symlink
    }
}

NODE_TEST(metainfo_read_refuses_a_file_over_max_bytes) {
    const std::string path = f.write("qb/BT_backup/" + k_id + ".torrent", std::string(101, 'x'));
    Error e = f.fails(Op::metainfo_read, {{"path", path}, {"max_bytes", 100}});
    CHECK(e.code == "TOO_LARGE");
    CHECK(mentions(e, "'" + path + "'"));
    CHECK(mentions(e, "101 bytes"));
    CHECK(e.hint.empty());
    Ops ops(f.transport());
    CHECK(ops.metainfo_read({.path = path, .max_bytes = 100}).error().code == "TOO_LARGE");
    CHECK(read_back(ops.metainfo_read({.path = path, .max_bytes = 101})).size() == 101);
}

NODE_TEST(metainfo_read_answers_no_more_than_one_protocol_line_carries) {
    // Sparse files: the size is refused before a byte is read.
    const std::string over = f.qb() + "/BT_backup/over.torrent";
    f.write("qb/BT_backup/over.torrent", "");
    std::filesystem::resize_file(over, k_metainfo_read_line_bytes + 1);
    Error e = f.fails(Op::metainfo_read, {{"path", over}, {"max_bytes", k_asked}});
    CHECK(e.code == "TOO_LARGE");
    CHECK(mentions(e, "'" + over + "'"));
    CHECK(mentions(e, std::to_string(k_metainfo_read_line_bytes + 1) + " bytes"));
    CHECK(e.hint.find("one protocol line") != std::string::npos);
    // The largest one it answers reaches the caller whole through a line of the exec transport
    // (the local one has no line to fit, and ~5 s of the sanitizer build would prove nothing more).
    if (f.kind() != Kind::exec) return;
    const std::string largest = f.qb() + "/BT_backup/largest.torrent";
    f.write("qb/BT_backup/largest.torrent", "");
    std::filesystem::resize_file(largest, k_metainfo_read_line_bytes);
    Ops ops(f.transport());
    const std::string bytes = read_back(ops.metainfo_read({.path = largest, .max_bytes = k_asked}));
    CHECK(bytes.size() == k_metainfo_read_line_bytes);
    CHECK(bytes.find_first_not_of('\0') == std::string::npos);
}

NODE_TEST(metainfo_read_refuses_a_path_outside_the_roots) {
    const std::string outside = f.write("outside/" + k_id + ".torrent", "d4:infodee");
    for (const std::string& path : {outside, f.qb() + "/../outside/" + k_id + ".torrent", "BT_backup/" + k_id + ".torrent",
                                    std::string("/etc/") + k_id + ".torrent"}) {
        CAPTURE(path);
        CHECK(f.fails(Op::metainfo_read, {{"path", path}, {"max_bytes", k_asked}}).code == "PATH_OUTSIDE_ROOT");
    }
}

NODE_TEST(metainfo_read_refuses_a_max_bytes_of_0_or_past_256_MiB) {
    const std::string path = f.write("qb/BT_backup/" + k_id + ".torrent", "d4:infodee");
    for (std::uint64_t max : {std::uint64_t{0}, k_metainfo_read_max_bytes + 1, ~std::uint64_t{0}}) {
        CAPTURE(max);
        Error e = f.fails(Op::metainfo_read, {{"path", path}, {"max_bytes", max}});
        CHECK(e.code == "BAD_REQUEST");
        CHECK(mentions(e, "'" + path + "'"));
        CHECK(mentions(e, "max_bytes"));
    }
    CHECK(f.ok(Op::metainfo_read, {{"path", path}, {"max_bytes", k_metainfo_read_max_bytes}})["found"] == true);
    // A request without its keys does not read.
    CHECK(f.fails(Op::metainfo_read, {{"path", path}}).code == "BAD_REQUEST");
    CHECK(f.fails(Op::metainfo_read, {{"max_bytes", k_asked}}).code == "BAD_REQUEST");
    CHECK(f.fails(Op::metainfo_read, {{"path", path}, {"max_bytes", -1}}).code == "BAD_REQUEST");
}

TEST_CASE("metainfo_read: request and result travel under their keys") {
    json request = MetainfoReadRequest{.path = "/srv/qb/BT_backup/x.torrent", .max_bytes = 5};
    CHECK(request == json{{"path", "/srv/qb/BT_backup/x.torrent"}, {"max_bytes", 5}});
    CHECK(request.get<MetainfoReadRequest>().max_bytes == 5);
    json part = MetainfoReadRequest{.path = "/x.torrent", .max_bytes = 5, .offset = 2, .length = 3};
    CHECK(part == json{{"path", "/x.torrent"}, {"max_bytes", 5}, {"offset", 2}, {"length", 3}});
    CHECK(part.get<MetainfoReadRequest>().offset == 2);
    CHECK(part.get<MetainfoReadRequest>().length == 3);
    CHECK(json(MetainfoReadResult{}) == json{{"found", false}});
    json found = MetainfoReadResult{true, "AP8=", std::nullopt, "", "\x00\xff"};  // data is not on the wire
    CHECK(found == json{{"found", true}, {"data_b64", "AP8="}});
    CHECK(found.get<MetainfoReadResult>().data_b64 == "AP8=");
    CHECK_FALSE(found.get<MetainfoReadResult>().size);
    json sized = MetainfoReadResult{true, "AP8=", 9, "7:1", ""};
    CHECK(sized == json{{"found", true}, {"data_b64", "AP8="}, {"size", 9}, {"stamp", "7:1"}});
    CHECK(sized.get<MetainfoReadResult>().size == 9u);
    CHECK_THROWS_AS(json({{"found", true}}).get<MetainfoReadResult>(), json::exception);
    CHECK(k_metainfo_read_line_bytes == 50'328'576);
}

TEST_CASE("metainfo_read: a far end's answer that does not decode is PROTOCOL") {
    archctl::fakes::FakeTransport far("hostile");
    Ops ops(far);
    auto answer = [&far](json result) {
        far.handlers[Op::metainfo_read] = [result](const json&) -> Result<json> { return result; };
    };
    auto protocol = [](const Result<MetainfoReadResult>& r, const char* says) {
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().code == "PROTOCOL");
        CHECK_MESSAGE(r.error().message.find(says) != std::string::npos, r.error().message);
    };
    const MetainfoReadRequest request{.path = "/srv/qb/BT_backup/x.torrent", .max_bytes = 4};
    answer({{"found", true}, {"data_b64", "not base64!"}});
    protocol(ops.metainfo_read(request), "not base64");
    answer({{"found", true}});
    protocol(ops.metainfo_read(request), "data_b64");
    answer({{"found", true}, {"data_b64", 7}});
    protocol(ops.metainfo_read(request), "metainfo_read");
    answer({{"found", "yes"}, {"data_b64", "AP8="}});
    protocol(ops.metainfo_read(request), "metainfo_read");
    answer({{"found", true}, {"data_b64", base64_encode("12345")}});
    protocol(ops.metainfo_read(request), "5 bytes, more than max_bytes 4");
    answer({{"found", true}, {"data_b64", "AP8="}});
    CHECK(read_back(ops.metainfo_read(request)) == std::string("\x00\xff", 2));
    answer({{"found", false}});
    auto absent = ops.metainfo_read(request);
    REQUIRE(absent.ok());
    CHECK_FALSE(absent->found);

    // In parts: a part larger than asked, a part that is empty before the end, a file whose
    // stamp or size changes between parts, a size over max_bytes.
    const MetainfoReadRequest large{.path = "/srv/qb/BT_backup/x.torrent", .max_bytes = 3 * k_metainfo_read_part_bytes};
    const std::string part(static_cast<std::size_t>(k_metainfo_read_part_bytes), 'p');
    auto parts = [&far](std::uint64_t size, std::function<json(std::uint64_t offset, std::uint64_t length)> at) {
        far.handlers[Op::metainfo_read] = [size, at](const json& args) -> Result<json> {
            json r = at(args.value("offset", std::uint64_t{0}), args.value("length", std::uint64_t{0}));
            r["found"] = true;
            if (!r.contains("size")) r["size"] = size;
            if (!r.contains("stamp")) r["stamp"] = "1:1";
            return r;
        };
    };
    const std::uint64_t size = k_metainfo_read_part_bytes + 3;
    parts(size, [&](std::uint64_t offset, std::uint64_t) {
        return json{{"data_b64", base64_encode(offset == 0 ? part : "abc")}};
    });
    CHECK(read_back(ops.metainfo_read(large)) == part + "abc");
    parts(size, [&](std::uint64_t, std::uint64_t) { return json{{"data_b64", base64_encode(part + "x")}}; });
    protocol(ops.metainfo_read(large), "more than the part's");
    parts(size, [&](std::uint64_t offset, std::uint64_t) { return json{{"data_b64", base64_encode(offset == 0 ? part : "")}}; });
    protocol(ops.metainfo_read(large), "no bytes at offset");
    parts(size, [&](std::uint64_t offset, std::uint64_t) {
        return json{{"data_b64", base64_encode(offset == 0 ? part : "abc")}, {"stamp", offset == 0 ? "1:1" : "2:1"}};
    });
    auto changed = ops.metainfo_read(large);
    REQUIRE_FALSE(changed.ok());
    CHECK(changed.error().code == "IO");
    CHECK(mentions(changed.error(), "changed while it was read"));
    parts(large.max_bytes + 1, [&](std::uint64_t, std::uint64_t) { return json{{"data_b64", base64_encode(part)}}; });
    protocol(ops.metainfo_read(large), "more than max_bytes");
}
