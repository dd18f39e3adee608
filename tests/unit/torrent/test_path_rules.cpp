#include <doctest/doctest.h>

#include "lib/torrent/metainfo.hpp"
#include "lib/torrent/path_rules.hpp"
#include "lib/torrent/unicode.hpp"
#include "tests/unit/torrent/torrent_builder.hpp"

using namespace archctl::torrent;
using test::MemFile;
using test::MemKind;
using test::MemTorrent;

namespace {

std::string element_rule(std::string_view e, PathPlatform p = PathPlatform::posix) {
    auto v = element_violation(e, p);
    REQUIRE(v.has_value());
    return *v;
}

bool has(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// Parses a v1 and a hybrid torrent with one file at `rel` (plus a normal one) and returns the error.
std::string torrent_error(const std::vector<std::string>& rel, MemKind kind = MemKind::v1) {
    MemTorrent t;
    t.kind = kind;
    t.files = {MemFile{{"ok.txt"}, "hello", ""}, MemFile{rel, "data", ""}};
    // v2 trees are sorted; the bad paths used with hybrid/v2 sort before "ok.txt".
    if (kind != MemKind::v1) std::swap(t.files[0], t.files[1]);
    auto r = parse_metainfo(t.encode(), "t.torrent");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == "TORRENT_UNSAFE_PATH");
    return r.error().message;
}

}  // namespace

TEST_CASE("path rules: element rules") {
    CHECK_FALSE(element_violation("normal name.txt").has_value());
    CHECK_FALSE(element_violation("ünïcödé ファイル.txt").has_value());
    CHECK_FALSE(element_violation("café").has_value());  // precomposed é is NFC
    CHECK(element_rule("") == "empty element is not allowed");
    CHECK(element_rule(".") == "element '.' is not allowed");
    CHECK(element_rule("..") == "element '..' is not allowed");
    CHECK(has(element_rule("a/b"), "contains '/'"));
    CHECK(has(element_rule("a\\b"), "contains '\\'"));
    CHECK(has(element_rule(std::string("a\0b", 3)), "NUL"));
    CHECK(has(element_rule("a\nb"), "control character 0x0a"));
    CHECK(has(element_rule("a\x1f"), "control character 0x1f"));
    CHECK(has(element_rule("a\x7f"), "control character 0x7f"));
    CHECK(has(element_rule("bad\xff"), "not valid UTF-8"));
    CHECK(has(element_rule("\xc0\xaf"), "not valid UTF-8"));              // overlong '/'
    CHECK(has(element_rule("\xe0\x80\xaf"), "not valid UTF-8"));          // overlong 3-byte
    CHECK(has(element_rule("\xed\xa0\x80"), "not valid UTF-8"));          // surrogate
    CHECK(has(element_rule("\xf4\x90\x80\x80"), "not valid UTF-8"));      // > U+10FFFF
    CHECK(has(element_rule("\xe2\x80"), "not valid UTF-8"));              // truncated
    CHECK(has(element_rule("evil\xe2\x80\xaetxt.exe"), "bidi control U+202E"));
    CHECK(has(element_rule("a\xe2\x80\xaa"), "U+202A"));
    CHECK(has(element_rule("a\xe2\x81\xa6"), "U+2066"));
    CHECK(has(element_rule("a\xe2\x81\xa9"), "U+2069"));
    CHECK(has(element_rule("a\xe2\x80\x8e"), "U+200E"));
    CHECK(has(element_rule("a\xe2\x80\x8f"), "U+200F"));
    CHECK_FALSE(element_violation(std::string(255, 'a')).has_value());
    CHECK(has(element_rule(std::string(256, 'a')), "256 bytes long"));
    // Decomposed (NFD) names are legal on their own; only a collision refuses them.
    CHECK_FALSE(element_violation("cafe\xcc\x81").has_value());  // e + U+0301
    CHECK_FALSE(element_violation("A\xcc\x88").has_value());     // A + U+0308
    CHECK_FALSE(element_violation("q\xcc\x81").has_value());     // no precomposed q-acute
}

TEST_CASE("path rules: Windows rules only when asked") {
    const auto win = PathPlatform::windows_compatible;
    CHECK_FALSE(element_violation("CON").has_value());
    CHECK(has(element_rule("CON", win), "Windows device name"));
    CHECK(has(element_rule("nul.txt", win), "Windows device name"));
    CHECK(has(element_rule("com7.log", win), "Windows device name"));
    CHECK(has(element_rule("LPT0", win), "Windows device name"));
    CHECK_FALSE(element_violation("console", win).has_value());
    CHECK(has(element_rule("name.", win), "ends in '.'"));
    CHECK(has(element_rule("name ", win), "ends in ' '"));
    for (char c : std::string("<>:\"|?*")) CHECK(has(element_rule(std::string("a") + c + "b", win), "Windows does not allow"));
}

TEST_CASE("path rules: path-level rules") {
    CHECK(*path_violation({}) == "empty path");
    CHECK(has(*path_violation({"C:", "x"}), "drive letter"));
    CHECK(has(*path_violation({"c:stuff"}), "drive letter"));
    CHECK_FALSE(path_violation({"root", "c:stuff"}).has_value());  // only a leading drive roots a path
    std::vector<std::string> longp(20, std::string(250, 'a'));
    CHECK(has(*path_violation(longp), "limit 4095"));
    CHECK(has(*path_violation({"root", ".pad", "12"}), "named like a pad"));
    CHECK(has(*path_violation({"root", "_____padding_file_0_"}), "named like a pad"));
    CHECK_FALSE(path_violation({"root", ".pad"}).has_value());  // a plain file named .pad is fine
}

TEST_CASE("path rules: a pad file's path obeys every rule but the pad-like name") {
    const auto pad = PathRole::pad;
    const auto posix = PathPlatform::posix;
    CHECK_FALSE(path_violation({"root", ".pad", "12"}, posix, pad).has_value());
    CHECK_FALSE(path_violation({"root", "_____padding_file_0_"}, posix, pad).has_value());
    CHECK(*path_violation({"root", ".."}, posix, pad) == "element '..' is not allowed");
    CHECK(*path_violation({"root", "..", "x"}, posix, pad) == "element '..' is not allowed");
    CHECK(has(*path_violation({"root", "/etc/passwd"}, posix, pad), "contains '/'"));
    CHECK(has(*path_violation({"root", "", "x"}, posix, pad), "empty element"));
    CHECK(has(*path_violation({"C:", "x"}, posix, pad), "drive letter"));
    CHECK(*path_violation({}, posix, pad) == "empty path");
    CHECK(has(*path_violation({"root", ".pad", "AUX"}, PathPlatform::windows_compatible, pad), "Windows device"));
}

TEST_CASE("path rules: set rules (case folding, NFC, file vs directory)") {
    CHECK(check_payload_paths("t", {{"r", "a.txt"}, {"r", "b.txt"}}).ok());
    auto dup = check_payload_paths("t", {{"r", "Read.ME"}, {"r", "read.me"}});
    REQUIRE_FALSE(dup.ok());
    CHECK(dup.error().code == "TORRENT_UNSAFE_PATH");
    CHECK(has(dup.error().message, "same path as 'r/Read.ME' after case folding"));
    CHECK_FALSE(check_payload_paths("t", {{"r", "Dir", "x"}, {"r", "dir", "y"}, {"r", "DIR"}}).ok());
    CHECK_FALSE(check_payload_paths("t", {{"r", "\xc3\x89t\xc3\xa9"}, {"r", "\xc3\xa9T\xc3\x89"}}).ok());  // Été / éTÉ
    auto prefix = check_payload_paths("t", {{"r", "a"}, {"r", "a", "b"}});
    REQUIRE_FALSE(prefix.ok());
    CHECK(has(prefix.error().message, "file 'r/a': is also a directory of 'r/a/b'"));
    // An NFD name alone is kept; an NFC/NFD pair of the same name is refused naming both.
    CHECK(check_payload_paths("t", {{"r", "cafe\xcc\x81.txt"}, {"r", "cafe.txt"}}).ok());
    auto nfd = check_payload_paths("t", {{"r", "caf\xc3\xa9.txt"}, {"r", "cafe\xcc\x81.txt"}});
    REQUIRE_FALSE(nfd.ok());
    CHECK(nfd.error().message ==
          "unsafe path in torrent 't': file 'r/cafe\xcc\x81.txt': same path as 'r/caf\xc3\xa9.txt' after case folding "
          "and Unicode NFC normalisation");
    // Directories normalise too: two spellings of one folder are one folder.
    CHECK_FALSE(check_payload_paths("t", {{"r", "CAFE\xcc\x81", "x"}, {"r", "caf\xc3\xa9", "x"}}).ok());
    CHECK_FALSE(check_payload_paths("t", {{"r", "CAFE\xcc\x81"}, {"r", "caf\xc3\xa9", "y"}}).ok());
}

TEST_CASE("path rules: fold_case and printable") {
    CHECK(fold_case("ABC def") == "abc def");
    CHECK(fold_case("\xc3\x89") == "\xc3\xa9");          // É → é
    CHECK(fold_case("\xc5\xbd") == "\xc5\xbe");          // Ž → ž
    CHECK(fold_case("\xd0\x96") == "\xd0\xb6");          // Ж → ж
    CHECK(fold_case("\xce\xa3") == "\xcf\x83");          // Σ → σ
    CHECK(printable("a\nb") == "a\\x0ab");
    CHECK(printable("x\xe2\x80\xaey") == "x\\u202Ey");
    CHECK(printable("\xff") == "\\xff");
}

TEST_CASE("path rules: every must-reject case is refused by parse_metainfo with a clear message") {
    CHECK(torrent_error({"a", "..", "b"}) ==
          "unsafe path in torrent 'root': file 'root/a/../b': element '..' is not allowed");
    CHECK(has(torrent_error({"a", ".", "b"}), "element '.' is not allowed"));
    CHECK(has(torrent_error({"a", "", "b"}), "empty element"));
    CHECK(has(torrent_error({}), "empty path"));
    CHECK(has(torrent_error({"/etc/passwd"}), "contains '/'"));
    CHECK(has(torrent_error({"\\\\server"}), "contains '\\'"));
    CHECK(has(torrent_error({"x\ty"}), "control character 0x09"));
    CHECK(has(torrent_error({std::string("x\0y", 3)}), "NUL"));
    CHECK(has(torrent_error({"\xfe"}), "not valid UTF-8"));
    CHECK(has(torrent_error({"a\xe2\x80\xae" "b"}), "bidi"));
    CHECK(has(torrent_error({std::string(300, 'x')}), "300 bytes long"));
    CHECK(has(torrent_error({"OK.TXT"}), "after case folding"));
    CHECK(has(torrent_error({"ok.txt", "inner"}), "is also a directory"));
    CHECK(has(torrent_error({".pad", "4"}), "named like a pad"));
    CHECK(has(torrent_error({"a", "..", "b"}, MemKind::hybrid), "element '..' is not allowed"));
}

TEST_CASE("path rules: parse_metainfo keeps an NFD name and refuses an NFC/NFD pair") {
    for (auto kind : {MemKind::v1, MemKind::v2, MemKind::hybrid}) {
        MemTorrent one;
        one.kind = kind;
        one.files = {MemFile{{"cafe\xcc\x81.txt"}, "nfd", ""}};
        auto parsed = parse_metainfo(one.encode(), "t.torrent");
        REQUIRE(parsed.ok());
        CHECK(parsed.value().files()[0].path_elements().back() == "cafe\xcc\x81.txt");

        MemTorrent two;
        two.kind = kind;
        two.files = {MemFile{{"caf\xc3\xa9.txt"}, "nfc", ""}, MemFile{{"cafe\xcc\x81.txt"}, "nfd", ""}};
        if (kind != MemKind::v1) std::swap(two.files[0], two.files[1]);  // v2 trees are sorted
        auto refused = parse_metainfo(two.encode(), "t.torrent");
        REQUIRE_FALSE(refused.ok());
        CHECK(has(refused.error().message, "caf\xc3\xa9.txt"));
        CHECK(has(refused.error().message, "cafe\xcc\x81.txt"));
        CHECK(has(refused.error().message, "NFC"));
    }
}

TEST_CASE("unicode: to_nfc composes, reorders and keeps what it does not know") {
    CHECK(to_nfc("cafe\xcc\x81") == "caf\xc3\xa9");                  // e + U+0301 → é
    CHECK(to_nfc("caf\xc3\xa9") == "caf\xc3\xa9");                    // already NFC
    CHECK(to_nfc("A\xcc\x88") == "\xc3\x84");                         // Ä
    CHECK(to_nfc("a\xcc\x82\xcc\xa3") == "\xe1\xba\xad");            // â + dot below → ậ (reordered)
    CHECK(to_nfc("a\xcc\xa3\xcc\x82") == "\xe1\xba\xad");            // ạ + circumflex → ậ
    CHECK(to_nfc("q\xcc\x81") == "q\xcc\x81");                        // no precomposed q-acute
    CHECK(to_nfc("\xe2\x84\xab") == "\xc3\x85");                      // Angstrom sign → Å
    CHECK(to_nfc("\xe1\xbd\xb1") == "\xce\xac");                      // Greek ά (oxia) → ά (tonos)
    CHECK(to_nfc("\xd0\x98\xcc\x86") == "\xd0\x99");                  // И + breve → Й
    CHECK(to_nfc("\xe3\x81\x8b\xe3\x82\x99") == "\xe3\x81\x8c");     // か + dakuten → が
    CHECK(to_nfc("\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab") == "\xed\x95\x9c");  // Hangul jamo → 한
    CHECK(to_nfc("a\xff" "b") == "a\xff" "b");                                 // bytes that are not UTF-8 stay
}

TEST_CASE("path rules: torrent name, symlinks and utf-8 variants") {
    MemTorrent t;
    t.kind = MemKind::v1;
    t.name = "..";
    t.files = {MemFile{{"a"}, "x", ""}};
    auto bad_name = parse_metainfo(t.encode(), "t.torrent");
    REQUIRE_FALSE(bad_name.ok());
    CHECK(bad_name.error().code == "TORRENT_UNSAFE_PATH");

    MemTorrent s;
    s.kind = MemKind::v1;
    s.files = {MemFile{{"a"}, "x", ""}, MemFile{{"link"}, "", "l"}};
    auto link = parse_metainfo(s.encode(), "t.torrent");
    REQUIRE_FALSE(link.ok());
    CHECK(link.error().code == "TORRENT_UNSAFE_PATH");
    CHECK(has(link.error().message, "file 'root/link': symlinks (attr 'l') are not supported"));

    MemTorrent u;
    u.kind = MemKind::v1;
    u.files = {MemFile{{"a"}, "x", ""}};
    auto v = u.build();
    auto& info = v.mutable_dict()[0].value;  // "info" is the only key
    info.set("name.utf-8", bencode::Value::string("other"));
    auto differ = parse_metainfo(bencode::encode(v), "t.torrent");
    REQUIRE_FALSE(differ.ok());
    CHECK(has(differ.error().message, "'name' and 'name.utf-8' differ"));
    info.set("name.utf-8", bencode::Value::string("root"));
    CHECK(parse_metainfo(bencode::encode(v), "t.torrent").ok());

    auto& entry = info.mutable_dict();
    for (auto& e : entry) {
        if (e.key != "files") continue;
        auto& f = e.value.mutable_list()[0];
        f.set("path.utf-8", bencode::Value::list({bencode::Value::string("b")}));
    }
    auto pdiff = parse_metainfo(bencode::encode(v), "t.torrent");
    REQUIRE_FALSE(pdiff.ok());
    CHECK(has(pdiff.error().message, "'path' and 'path.utf-8' differ"));
}
