#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lib/torrent/creator.hpp"
#include "lib/torrent/file_model.hpp"
#include "lib/torrent/metainfo.hpp"
#include "lib/torrent/verifier.hpp"
#include "tests/support/scratch.hpp"
#include "tests/unit/torrent/torrent_builder.hpp"

using namespace archctl::torrent;
using archctl::test::Scratch;
namespace fs = std::filesystem;

namespace {

void make_tree(const Scratch& s) {
    s.write("payload/top.txt", "0123456789");
    s.write("payload/empty.bin", "");
    s.write("payload/sub/dir/deep.dat", test::random_bytes(70000, 1));
    s.write("payload/sub/small.txt", "small!");
    s.write("payload/ünïcödé.txt", test::random_bytes(16, 2));
    s.write("payload/big.bin", test::random_bytes(200000, 3));
    ::chmod((s.path() / "payload/sub/small.txt").c_str(), 0755);
}

Metainfo created(const fs::path& source, CreateOptions o) {
    auto bytes = create_torrent(source, o);
    REQUIRE_MESSAGE(bytes.ok(), (bytes.ok() ? "" : bytes.error().message));
    auto m = parse_metainfo(*bytes, "c.torrent");
    REQUIRE(m.ok());
    return *m;
}

}  // namespace

TEST_CASE("creator: automatic piece length follows libtorrent") {
    CHECK(auto_piece_length(1) == 16384);
    CHECK(auto_piece_length(2684355) == 16384);
    CHECK(auto_piece_length(2684356) == 32768);
    CHECK(auto_piece_length(7 << 20) == 32768);
    CHECK(auto_piece_length(10737418) == 32768);
    CHECK(auto_piece_length(10737419) == 65536);
    CHECK(auto_piece_length(std::int64_t{1} << 30) == 524288);
    CHECK(auto_piece_length(std::int64_t{4} << 30) == 1048576);
    CHECK(auto_piece_length(std::int64_t{1} << 50) == 16 << 20);
}

TEST_CASE("creator: hybrid layout with tail padding, sorted files, attributes") {
    Scratch s;
    make_tree(s);
    CreateOptions o;
    o.creation_date = 1700000000;
    Metainfo m = created(s.path() / "payload", o);
    CHECK(m.kind() == Kind::hybrid);
    CHECK(m.name() == "payload");
    CHECK(m.piece_length() == 16384);
    std::vector<std::string> order;
    for (const auto& f : m.files()) order.push_back(f.path_string() + (f.pad ? "*" : ""));
    INFO(fmt::format("{}", fmt::join(order, " ")));
    CHECK(order == std::vector<std::string>{
                       "payload/big.bin", "payload/.pad/12992*", "payload/empty.bin", "payload/sub/dir/deep.dat",
                       "payload/.pad/11920*", "payload/sub/small.txt", "payload/.pad/16378*", "payload/top.txt",
                       "payload/.pad/16374*", "payload/ünïcödé.txt", "payload/.pad/16368*"});
    FileModel model(m);
    CHECK(model.files()[3].executable);
    CHECK(m.total_size() % m.piece_length() == 0);
    CHECK(verify(m, s.path())->all_verified());
    // Deterministic for fixed options.
    CHECK(*create_torrent(s.path() / "payload", o) == *create_torrent(s.path() / "payload", o));
}

TEST_CASE("creator: v1, v2, single file, name and piece length options") {
    Scratch s;
    make_tree(s);
    CreateOptions v1;
    v1.kind = Kind::v1;
    v1.piece_length = 32768;
    Metainfo a = created(s.path() / "payload", v1);
    CHECK(a.kind() == Kind::v1);
    CHECK(a.files().size() == 6);  // no pads in v1
    CHECK(a.piece_length() == 32768);
    CHECK(verify(a, s.path())->all_verified());

    CreateOptions v2;
    v2.kind = Kind::v2;
    v2.name = "renamed";
    Metainfo b = created(s.path() / "payload", v2);
    CHECK(b.kind() == Kind::v2);
    CHECK(b.name() == "renamed");
    fs::rename(s.path() / "payload", s.path() / "renamed");
    CHECK(verify(b, s.path())->all_verified());
    fs::rename(s.path() / "renamed", s.path() / "payload");

    for (Kind kind : {Kind::v1, Kind::v2, Kind::hybrid}) {
        CreateOptions one;
        one.kind = kind;
        Metainfo c = created(s.path() / "payload" / "big.bin", one);
        CHECK_FALSE(c.multi_file());
        CHECK(c.name() == "big.bin");
        // v1 and hybrid list no pad in a single-file torrent; v2 counts libtorrent's internal one.
        CHECK(c.total_size() == (kind == Kind::v2 ? 13 * 16384 : 200000));
        CHECK(verify(c, s.path() / "payload")->all_verified());
    }
}

TEST_CASE("creator: refusals") {
    Scratch s;
    make_tree(s);
    CreateOptions bad;
    bad.piece_length = 20000;
    CHECK(create_torrent(s.path() / "payload", bad).error().code == "TORRENT_CREATE");
    s.write("empty/a", "");
    CHECK(create_torrent(s.path() / "empty", {}).error().message.find("no data") != std::string::npos);
    fs::create_symlink("top.txt", s.path() / "payload" / "link");
    auto link = create_torrent(s.path() / "payload", {});
    REQUIRE_FALSE(link.ok());
    CHECK(link.error().message.find("'link' is a symlink") != std::string::npos);
    fs::remove(s.path() / "payload" / "link");
    s.write("payload/Top.txt", "dup");
    CHECK(create_torrent(s.path() / "payload", {}).error().code == "TORRENT_UNSAFE_PATH");
    CHECK_FALSE(create_torrent(s.path() / "missing", {}).ok());
}
