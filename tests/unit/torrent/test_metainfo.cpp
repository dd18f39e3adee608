#include <doctest/doctest.h>

#include "lib/torrent/bencode.hpp"
#include "lib/torrent/file_model.hpp"
#include "lib/torrent/metainfo.hpp"
#include "tests/unit/torrent/torrent_builder.hpp"

using namespace archctl::torrent;
using bencode::Value;
using test::MemFile;
using test::MemKind;
using test::MemTorrent;

namespace {

Value& at(Value& v, std::string_view key) {
    for (auto& e : v.mutable_dict())
        if (e.key == key) return e.value;
    return v.set(std::string(key), Value());
}

void erase(Value& v, std::string_view key) {
    auto& d = v.mutable_dict();
    for (auto it = d.begin(); it != d.end(); ++it)
        if (it->key == key) {
            d.erase(it);
            return;
        }
}

MemTorrent sample(MemKind kind) {
    MemTorrent t;
    t.kind = kind;
    t.files = {MemFile{{"b.txt"}, test::random_bytes(100, 1), ""},
               MemFile{{"empty"}, "", ""},
               MemFile{{"sub", "big.bin"}, test::random_bytes(40000, 2), "x"},
               MemFile{{"sub", "one.bin"}, test::random_bytes(16384, 3), "h"}};
    return t;
}

std::string parse_error(const Value& v) {
    auto r = parse_metainfo(bencode::encode(v), "bad.torrent");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == "TORRENT_INVALID");
    return r.error().message;
}

bool mentions(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("metainfo: v1 multi-file") {
    std::string bytes = sample(MemKind::v1).encode();
    auto r = parse_metainfo(bytes, "s.torrent");
    REQUIRE(r.ok());
    const Metainfo& m = *r;
    CHECK(m.kind() == Kind::v1);
    CHECK(m.name() == "root");
    CHECK(m.multi_file());
    CHECK(m.piece_length() == 16384);
    CHECK(m.total_size() == 100 + 40000 + 16384);
    CHECK(m.payload_size() == m.total_size());
    CHECK(m.piece_count() == 4);
    REQUIRE(m.files().size() == 4);
    CHECK(m.files()[2].path_string() == "root/sub/big.bin");
    CHECK(m.files()[2].offset == 100);
    CHECK(m.files()[2].executable);
    CHECK(m.files()[3].hidden);
    // Identity over the exact info bytes.
    auto top = bencode::decode(bytes);
    auto span = top->find("info")->span();
    CHECK(m.info_bytes() == std::string_view(bytes).substr(span.offset, span.length));
    CHECK(m.identity().v1_hex() == to_hex(sha1(m.info_bytes())));
    CHECK_FALSE(m.has_v2());
}

TEST_CASE("metainfo: v1 single-file and hashing non-canonical-looking but valid bytes") {
    MemTorrent t;
    t.kind = MemKind::v1;
    t.single_file = true;
    t.name = "file.iso";
    t.files = {MemFile{{}, test::random_bytes(50000, 9), ""}};
    auto r = parse_metainfo(t.encode(), "f.torrent");
    REQUIRE(r.ok());
    CHECK_FALSE(r->multi_file());
    CHECK(r->files().size() == 1);
    CHECK(r->files()[0].path_string() == "file.iso");
    CHECK(r->piece_count() == 4);
    CHECK(r->piece_size(3) == 50000 - 3 * 16384);
}

TEST_CASE("metainfo: v2 inserts libtorrent's pads, including after the last file") {
    auto r = parse_metainfo(sample(MemKind::v2).encode(), "v2.torrent");
    REQUIRE(r.ok());
    const Metainfo& m = *r;
    CHECK(m.kind() == Kind::v2);
    std::vector<std::string> paths;
    for (const auto& f : m.files()) paths.push_back(f.path_string() + (f.pad ? "*" : ""));
    CHECK(paths == std::vector<std::string>{"root/b.txt", "root/.pad/16284*", "root/empty", "root/sub/big.bin",
                                            "root/.pad/9152*", "root/sub/one.bin"});
    CHECK(m.total_size() == 16384 * 5);
    CHECK(m.payload_size() == 100 + 40000 + 16384);
    CHECK(m.piece_count() == 5);
    CHECK(m.files()[3].offset == 16384);
    CHECK(m.files()[5].offset == 4 * 16384);
    CHECK(m.identity().qb_id() == to_hex(sha256(m.info_bytes())).substr(0, 40));
    CHECK(m.piece_layer(*m.files()[3].pieces_root) != nullptr);
    CHECK(m.piece_layer(*m.files()[5].pieces_root) == nullptr);  // one piece: no layer
}

TEST_CASE("metainfo: hybrid with and without tail padding") {
    auto with_tail = sample(MemKind::hybrid);
    with_tail.files.back().data = test::random_bytes(1000, 4);
    auto a = parse_metainfo(with_tail.encode(), "h.torrent");
    REQUIRE(a.ok());
    CHECK(a->kind() == Kind::hybrid);
    CHECK(a->total_size() == 5 * 16384);
    CHECK(a->files().back().pad);
    auto no_tail = with_tail;
    no_tail.tail_pad = false;
    auto b = parse_metainfo(no_tail.encode(), "h.torrent");
    REQUIRE(b.ok());
    CHECK(b->total_size() == 4 * 16384 + 1000);
    CHECK(b->piece_count() == 5);
    CHECK(b->piece_size(4) == 1000);
    CHECK(a->identity().v1() != b->identity().v1());
}

TEST_CASE("metainfo: v2 single file takes its name from the file tree") {
    MemTorrent t;
    t.kind = MemKind::v2;
    t.name = "dir1";
    t.files = {MemFile{{"only.txt"}, "hello", ""}};
    auto r = parse_metainfo(t.encode(), "x.torrent");
    REQUIRE(r.ok());
    CHECK(r->name() == "only.txt");
    CHECK_FALSE(r->multi_file());
    CHECK(r->files()[0].path_string() == "only.txt");
    // The same files as a hybrid keep the v1 root folder.
    t.kind = MemKind::hybrid;
    auto h = parse_metainfo(t.encode(), "x.torrent");
    REQUIRE(h.ok());
    CHECK(h->files()[0].path_string() == "dir1/only.txt");
}

TEST_CASE("metainfo: invalid structures are TORRENT_INVALID") {
    CHECK(mentions(parse_metainfo("i1e", "x").error().message, "top level is not a dictionary"));
    CHECK(mentions(parse_metainfo("de", "x").error().message, "missing 'info'"));
    CHECK(mentions(parse_metainfo("d4:infoi1ee", "x").error().message, "missing 'info'"));
    CHECK(mentions(parse_metainfo("d1:b0:1:a0:e", "x").error().message, "invalid torrent 'x': invalid bencoding"));

    Value v = sample(MemKind::hybrid).build();
    Value& info = at(v, "info");
    { Value c = v; at(at(c, "info"), "meta version") = Value::integer(3); CHECK(mentions(parse_error(c), "unsupported meta version 3")); }
    { Value c = v; at(at(c, "info"), "piece length") = Value::integer(24576); CHECK(mentions(parse_error(c), "not a power of two")); }
    { Value c = v; at(at(c, "info"), "piece length") = Value::integer(0); CHECK(mentions(parse_error(c), "out of range")); }
    { Value c = v; at(at(c, "info"), "pieces") = Value::string("abc"); CHECK(mentions(parse_error(c), "multiple of 20")); }
    { Value c = v; at(at(c, "info"), "pieces") = Value::string(std::string(20, 'x')); CHECK(mentions(parse_error(c), "holds 1 hashes but the files need")); }
    { Value c = v; at(at(c, "info"), "length") = Value::integer(5); CHECK(mentions(parse_error(c), "both 'length' and 'files'")); }
    { Value c = v; erase(at(c, "info"), "name"); CHECK(mentions(parse_error(c), "missing 'name'")); }
    { Value c = v; erase(c, "piece layers"); CHECK(mentions(parse_error(c), "missing 'piece layers'")); }
    {
        Value c = v;
        Value& layers = at(c, "piece layers");
        std::string bytes = layers.as_dict()[0].value.as_string();
        bytes[0] = static_cast<char>(bytes[0] ^ 1);
        layers.mutable_dict()[0].value = Value::string(bytes);
        CHECK(mentions(parse_error(c), "does not match its 'pieces root'"));
    }
    {
        Value c = v;
        at(c, "piece layers").set(std::string(32, 'k'), Value::string(std::string(64, 'z')));
        CHECK(mentions(parse_error(c), "for no file larger than one piece"));
    }
    {
        Value c = v;
        Value& props = at(at(at(at(c, "info"), "file tree"), "b.txt"), "");
        at(props, "pieces root") = Value::string(std::string(32, '\0'));
        CHECK(mentions(parse_error(c), "all zeros"));
        erase(props, "pieces root");
        CHECK(mentions(parse_error(c), "has no 'pieces root'"));
    }
    {
        Value c = v;
        Value& props = at(at(at(at(c, "info"), "file tree"), "b.txt"), "");
        at(props, "attr") = Value::string("p");
        CHECK(mentions(parse_error(c), "pad attribute inside the v2 file tree"));
    }
    {
        Value c = v;
        at(at(at(at(c, "info"), "file tree"), "b.txt"), "extra") = Value::dict();
        CHECK(mentions(parse_error(c), "both a file and a directory"));
    }
    {
        Value c = v;
        at(at(at(c, "info"), "file tree"), "emptydir") = Value::dict();
        CHECK(mentions(parse_error(c), "not a non-empty dictionary"));
    }
    {
        Value c = v;
        at(at(c, "info"), "file tree") = Value::dict({bencode::DictEntry{"", Value::dict()}});
        CHECK(mentions(parse_error(c), "file tree root is a file"));
    }
    (void)info;
}

TEST_CASE("metainfo: hybrid consistency") {
    // Same files, different order in v1 and v2.
    auto t = sample(MemKind::hybrid);
    Value v = t.build();
    Value& files = at(at(v, "info"), "files");
    std::swap(files.mutable_list()[0], files.mutable_list()[2]);
    CHECK(mentions(parse_error(v), "inconsistent hybrid"));
    // Missing pad: a file that does not start on a piece boundary.
    Value w = t.build();
    auto& list = at(at(w, "info"), "files").mutable_list();
    list.erase(list.begin() + 1);  // the pad after b.txt
    CHECK(mentions(parse_error(w), "inconsistent hybrid"));
    // v1 size differs from v2.
    Value x = t.build();
    at(at(x, "info"), "files").mutable_list()[0].set("length", Value::integer(101));
    CHECK(mentions(parse_error(x), "inconsistent hybrid"));
}

TEST_CASE("metainfo: total size 0 and v1 pad path defaults") {
    MemTorrent t;
    t.kind = MemKind::v1;
    t.files = {MemFile{{"a"}, "", ""}};
    CHECK(mentions(parse_metainfo(t.encode(), "z").error().message, "total size 0"));

    // A v1 pad without a path is laid out as .pad/<N> and never counted as payload.
    MemTorrent p;
    p.kind = MemKind::v1;
    p.files = {MemFile{{"a"}, "abc", ""}};
    Value v = p.build();
    Value pad = Value::dict();
    pad.set("attr", Value::string("p"));
    pad.set("length", Value::integer(16381));
    at(at(v, "info"), "files").mutable_list().push_back(pad);
    std::string space = std::string("abc") + std::string(16381, '\0');
    at(at(v, "info"), "pieces") = Value::string(digest_bytes(sha1(space)));
    auto r = parse_metainfo(bencode::encode(v), "p");
    REQUIRE(r.ok());
    CHECK(r->files()[1].pad);
    CHECK(r->files()[1].path_string() == "root/.pad/16381");
    CHECK(r->payload_size() == 3);
    CHECK(FileModel(*r).file_count() == 1);
}

namespace {

// A v1 multi-file torrent: "a" (100 bytes), a BEP 47 pad of 16284 zeros whose `path` list is
// `pad_path`, then "b"; valid in every other respect (the pad's zeros are hashed).
Value v1_with_pad(const std::vector<std::string>& pad_path) {
    MemTorrent t;
    t.kind = MemKind::v1;
    t.files = {MemFile{{"a"}, test::random_bytes(100, 5), ""}, MemFile{pad_path, std::string(16284, '\0'), "p"},
               MemFile{{"b"}, test::random_bytes(50, 6), ""}};
    return t.build();
}

archctl::Error unsafe_error(const Value& v) {
    auto r = parse_metainfo(bencode::encode(v), "pad.torrent");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == "TORRENT_UNSAFE_PATH");
    return r.error();
}

}  // namespace

TEST_CASE("metainfo: a v1 pad file's path obeys the path rules of every other file") {
    CHECK(unsafe_error(v1_with_pad({".."})).message ==
          "unsafe path in torrent 'root': file 'root/..': element '..' is not allowed (pad file)");
    CHECK(unsafe_error(v1_with_pad({"..", "x"})).message ==
          "unsafe path in torrent 'root': file 'root/../x': element '..' is not allowed (pad file)");
    CHECK(mentions(unsafe_error(v1_with_pad({"..", "..", "escape"})).message, "file 'root/../../escape': element '..'"));
    CHECK(mentions(unsafe_error(v1_with_pad({".pad", "..", "16284"})).message, "element '..' is not allowed"));
    // Absolute: the whole path in one element, or a leading empty element as "/etc/x" splits.
    CHECK(mentions(unsafe_error(v1_with_pad({"/etc/passwd"})).message, "contains '/'"));
    CHECK(mentions(unsafe_error(v1_with_pad({"", "etc", "passwd"})).message, "empty element"));
    CHECK(mentions(unsafe_error(v1_with_pad({".pad", "", "16284"})).message, "empty element"));
    CHECK(mentions(unsafe_error(v1_with_pad({"\xfe"})).message, "not valid UTF-8"));
    CHECK(mentions(unsafe_error(v1_with_pad({"a", ".", "b"})).message, "element '.' is not allowed"));
    CHECK(mentions(unsafe_error(v1_with_pad({"x\ny"})).message, "control character 0x0a"));
    // An explicit empty list is an empty path, as for any file; only a missing `path` defaults.
    CHECK(mentions(unsafe_error(v1_with_pad({})).message, "empty path"));
}

TEST_CASE("metainfo: a pad's path.utf-8 is checked too") {
    Value v = v1_with_pad({".pad", "16284"});
    Value& pad = at(at(v, "info"), "files").mutable_list()[1];
    erase(pad, "path");
    pad.set("path.utf-8", Value::list({Value::string(".."), Value::string("x")}));
    CHECK(mentions(unsafe_error(v).message, "file 'root/../x': element '..'"));
}

TEST_CASE("metainfo: pads keep their names and may share a path") {
    for (const auto& name : {std::vector<std::string>{".pad", "16284"}, std::vector<std::string>{"_____padding_file_0_"}}) {
        auto r = parse_metainfo(bencode::encode(v1_with_pad(name)), "ok.torrent");
        REQUIRE(r.ok());
        CHECK(r->files()[1].pad);
        std::vector<std::string> expected{"root"};
        expected.insert(expected.end(), name.begin(), name.end());
        CHECK(r->files()[1].path_elements() == expected);
    }
    // Two pads of one length with one path, as libtorrent names them (.pad/<N>).
    MemTorrent t;
    t.kind = MemKind::v1;
    t.files = {MemFile{{"a"}, test::random_bytes(100, 5), ""}, MemFile{{".pad", "16284"}, std::string(16284, '\0'), "p"},
               MemFile{{"b"}, test::random_bytes(100, 6), ""}, MemFile{{".pad", "16284"}, std::string(16284, '\0'), "p"},
               MemFile{{"c"}, "c", ""}};
    CHECK(parse_metainfo(t.encode(), "twins.torrent").ok());
}

TEST_CASE("metainfo: a hybrid's v1 pad entry with an unsafe path is refused") {
    for (const auto& bad : {std::vector<std::string>{".."}, std::vector<std::string>{"..", "x"},
                            std::vector<std::string>{"/", "x"}, std::vector<std::string>{"", "x"}}) {
        Value v = sample(MemKind::hybrid).build();
        Value& pad = at(at(v, "info"), "files").mutable_list()[1];  // the pad after b.txt
        REQUIRE(pad.find("attr")->as_string() == "p");
        Value list = Value::list();
        for (const auto& e : bad) list.mutable_list().push_back(Value::string(e));
        at(pad, "path") = list;
        CAPTURE(bad.size());
        CHECK(mentions(unsafe_error(v).message, "(pad file)"));
    }
}

TEST_CASE("metainfo: piece layers left out are accepted only when the caller says so") {
    for (MemKind kind : {MemKind::v2, MemKind::hybrid}) {
        Value v = sample(kind).build();
        const std::string whole = bencode::encode(v);
        erase(v, "piece layers");
        const std::string bare = bencode::encode(v);
        CHECK(mentions(parse_error(v), "missing 'piece layers'"));
        auto m = parse_metainfo(bare, "bare.torrent", k_layers_optional);
        REQUIRE(m.ok());
        CHECK(m->layers_missing());
        auto full = parse_metainfo(whole, "whole.torrent", k_layers_optional);
        REQUIRE(full.ok());
        CHECK_FALSE(full->layers_missing());
        CHECK(m->identity() == full->identity());  // the info dictionary is the same
        // Layers that are present are checked all the same.
        Value broken = sample(kind).build();
        Value& layers = at(broken, "piece layers");
        std::string bytes = layers.as_dict()[0].value.as_string();
        bytes[0] = static_cast<char>(bytes[0] ^ 1);
        layers.mutable_dict()[0].value = Value::string(bytes);
        CHECK_FALSE(parse_metainfo(bencode::encode(broken), "x", k_layers_optional).ok());
    }
    // A v1 torrent has no layers to miss.
    auto v1 = parse_metainfo(sample(MemKind::v1).encode(), "v1.torrent", k_layers_optional);
    REQUIRE(v1.ok());
    CHECK_FALSE(v1->layers_missing());
}

TEST_CASE("metainfo: with_announce writes trackers and web seeds as an export has them and keeps every other byte") {
    Value v = sample(MemKind::hybrid).build();
    v.set("announce", Value::string("http://old.invalid/a"));
    v.set("comment", Value::string("kept"));
    v.set("url-list", Value::string("http://old.invalid/ws"));
    const std::string bytes = bencode::encode(v);
    auto before = parse_metainfo(bytes, "b.torrent");
    REQUIRE(before.ok());

    auto none = with_announce(bytes, {}, {});
    REQUIRE(none.ok());
    auto decoded = bencode::decode(*none);
    REQUIRE(decoded.ok());
    CHECK(decoded->find("announce") == nullptr);
    CHECK(decoded->find("url-list") == nullptr);
    CHECK(decoded->find("comment")->as_string() == "kept");

    auto one = with_announce(bytes, {{"http://t1.invalid/a"}}, {"http://ws.invalid/"});
    REQUIRE(one.ok());
    decoded = bencode::decode(*one);  // canonical: keys still sorted
    REQUIRE(decoded.ok());
    CHECK(decoded->find("announce")->as_string() == "http://t1.invalid/a");
    CHECK(decoded->find("announce-list") == nullptr);
    CHECK(decoded->find("url-list")->as_string() == "http://ws.invalid/");

    auto many = with_announce(bytes, {{"http://t1.invalid/a", "http://t3.invalid/a"}, {"http://t2.invalid/a"}},
                              {"http://w1.invalid/", "http://w2.invalid/"});
    REQUIRE(many.ok());
    decoded = bencode::decode(*many);
    REQUIRE(decoded.ok());
    CHECK(decoded->find("announce")->as_string() == "http://t1.invalid/a");
    const auto& tiers = decoded->find("announce-list")->as_list();
    REQUIRE(tiers.size() == 2);
    CHECK(tiers[0].as_list().size() == 2);
    CHECK(tiers[1].as_list()[0].as_string() == "http://t2.invalid/a");
    CHECK(decoded->find("url-list")->as_list().size() == 2);
    auto after = parse_metainfo(*many, "a.torrent");
    REQUIRE(after.ok());
    CHECK(after->identity() == before->identity());
    CHECK(after->info_bytes() == before->info_bytes());
    CHECK_FALSE(with_announce("i1e", {}, {}).ok());
}
