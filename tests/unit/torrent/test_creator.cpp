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

TEST_CASE("creator: a torrent larger than the most archctl reads is refused as it is written") {
    Scratch s;
    make_tree(s);
    CreateOptions small;
    small.max_bytes = 300;
    std::size_t handed = 0;
    auto r = build_torrent(s.path() / "payload", small, [&](std::string_view chunk) {
        handed += chunk.size();
        return archctl::ok_status();
    });
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == "TORRENT_CREATE");
    CHECK(r.error().message.find("larger than 300 B") != std::string::npos);
    CHECK(r.error().message.find("--kind v2") != std::string::npos);
    CHECK(handed <= 300);
    CHECK_FALSE(create_torrent(s.path() / "payload", small).ok());
    small.kind = Kind::v1;  // lists each file once: no hint to change the kind
    auto v1 = create_torrent(s.path() / "payload", small);
    REQUIRE_FALSE(v1.ok());
    CHECK(v1.error().message.find("--kind") == std::string::npos);
    small.max_bytes = 1u << 20;
    CHECK(create_torrent(s.path() / "payload", small).ok());
}

TEST_CASE("creator: the bytes are handed out in order, the same as those kept, and a sink's error stops the creation") {
    Scratch s;
    make_tree(s);
    for (int i = 0; i < 3000; ++i) s.write(fmt::format("payload/many/f{:04}", i), fmt::format("{}", i));
    for (Kind kind : {Kind::v1, Kind::v2, Kind::hybrid}) {
        CreateOptions o;
        o.kind = kind;
        o.creation_date = 1700000000;
        std::string streamed;
        std::size_t chunks = 0;
        auto r = build_torrent(s.path() / "payload", o, [&](std::string_view chunk) {
            streamed.append(chunk);
            ++chunks;
            return archctl::ok_status();
        });
        REQUIRE(r.ok());
        CHECK(r->bytes.empty());
        CHECK(chunks > 1);
        auto kept = build_torrent(s.path() / "payload", o);
        REQUIRE(kept.ok());
        CHECK(streamed == kept->bytes);
        CHECK(r->identity == kept->identity);
        auto failing = build_torrent(s.path() / "payload", o, [](std::string_view) -> archctl::Status {
            return archctl::Error{"IO", "disk full"};
        });
        REQUIRE_FALSE(failing.ok());
        CHECK(failing.error().message == "disk full");
    }
}

namespace {

// A tree with every shape the writer lays out: nested directories whose names sort around '/'
// ("a/…", "a-b", "a.c"), empty and executable files, a file of exactly one piece, files of
// several pieces (piece layers), a file ending just past a piece boundary, a unicode name.
void make_golden_tree(const Scratch& s) {
    s.write("gold/a/x/one.bin", test::random_bytes(16384, 11));
    s.write("gold/a/x/two.bin", test::random_bytes(40000, 12));
    s.write("gold/a/y.txt", "y");
    s.write("gold/a-b", "dash");
    s.write("gold/a.c/z", test::random_bytes(16385, 13));
    s.write("gold/empty", "");
    s.write("gold/exe.sh", "#!/bin/sh\n");
    s.write("gold/l/big.bin", test::random_bytes(100000, 14));
    s.write("gold/l/empty2", "");
    s.write("gold/ö.txt", test::random_bytes(700, 15));
    ::chmod((s.path() / "gold/exe.sh").c_str(), 0755);
}

}  // namespace

// The created bytes are pinned (SHA-256 of the whole .torrent, fixed creation date): a change to
// how the metainfo is written that alters a byte fails here.
TEST_CASE("creator: created bytes are unchanged for v1, v2 and hybrid (golden digests)") {
    Scratch s;
    make_golden_tree(s);
    struct Golden {
        Kind kind;
        std::int64_t piece_length;
        bool single;
        const char* sha256;
    };
    const Golden cases[] = {
        {Kind::v1, 0, false, "14581c252afb3b9801126101ed5391bfe5a9724fc93e090b5c359e0a9cac8a2e"},
        {Kind::v2, 0, false, "4b29eab68bef734620c44855e925d50ec6f7589f4368c0886f9c8d60e17c4211"},
        {Kind::hybrid, 0, false, "a274e75e40bffc7c7661d8ac9d1c24142d162c4fb518dc3ae4bf5a7860688e23"},
        {Kind::v1, 32768, false, "50f7243b9a0c7b6525e4464a2a43e0627b07fa16192dfed9b16299e9117e8093"},
        {Kind::v2, 32768, false, "09e79ff7fbab5542ce624b30a2b53c5ddda4e88eaada9b72ec80f34c3b3dbd09"},
        {Kind::hybrid, 32768, false, "404b30ba3e1ed8448040c41f1563109ba8a6871463172a0a0db79aa483c7a3ab"},
        {Kind::v1, 0, true, "e3712a82eedce4e5c41423d40f2bb2141ef1d4728c2fd1f09646956dec964b86"},
        {Kind::v2, 0, true, "754c62cdd126e5b599153e1a667baf0e4b6bdbb8cdcd4d932f0bad214f85b0e8"},
        {Kind::hybrid, 0, true, "1d39b97396aada3c98d9112511d396d2457d114765e0fa31a386d357e77c19b1"},
    };
    for (const auto& g : cases) {
        CreateOptions o;
        o.kind = g.kind;
        o.piece_length = g.piece_length;
        o.creation_date = 1700000000;
        o.threads = 2;
        fs::path source = g.single ? s.path() / "gold" / "l" / "big.bin" : s.path() / "gold";
        auto bytes = create_torrent(source, o);
        REQUIRE_MESSAGE(bytes.ok(), (bytes.ok() ? "" : bytes.error().message));
        INFO(fmt::format("{} piece length {}{}", kind_name(g.kind), g.piece_length, g.single ? " single file" : ""));
        CHECK(sha256_hex(*bytes) == std::string(g.sha256));
        // What the creator reports without parsing its bytes back is what their parse says.
        auto built = build_torrent(source, o);
        REQUIRE(built.ok());
        CHECK(built->bytes == *bytes);
        auto meta = parse_metainfo(*bytes, "c.torrent");
        REQUIRE(meta.ok());
        CHECK(built->name == meta->name());
        CHECK(built->identity == meta->identity());
        CHECK(built->kind() == meta->kind());
        CHECK(built->multi_file == meta->multi_file());
        CHECK(built->piece_length == meta->piece_length());
        CHECK(built->piece_count == meta->piece_count());
        CHECK(built->total_size == meta->total_size());
        CHECK(built->payload_size == meta->payload_size());
        std::size_t payload_files = 0;
        for (std::size_t i = 0; i < meta->files().size(); ++i)
            if (!meta->files().pad(i)) ++payload_files;
        CHECK(built->file_count == payload_files);
    }
}
