// The tree operation's columns form (lib/node/wire/ops_inspect.hpp TreeResult) on both transports:
// the same types and stats as the entries form, one letter and the asked stat fields a file, no
// path echoed; and a far end's columns that do not add up are PROTOCOL, never a guess.

#include <sys/stat.h>

#include "lib/node/client/ops.hpp"
#include "tests/support/fakes.hpp"
#include "tests/unit/node/node_fixture.hpp"

using namespace archctl;
using namespace archctl::node;
using namespace archctl::node::test;
using nlohmann::json;

namespace {

const std::vector<std::string> k_columns_paths = {"a.bin", "sub/b.bin", "sub", "link.bin", "fifo", "missing", "nodir/x", "../../x"};

// qb/t/a.bin (4 bytes), qb/t/sub/b.bin (2 bytes), qb/t/link.bin -> a.bin, qb/t/fifo.
void make_columns_tree(NodeFixture& f) {
    f.write("qb/t/a.bin", "aaaa");
    f.write("qb/t/sub/b.bin", "bb");
    std::filesystem::create_symlink("a.bin", f.qb() + "/t/link.bin");
    REQUIRE(::mkfifo((f.qb() + "/t/fifo").c_str(), 0644) == 0);
}

TreeColumnsRequest columns_request(const std::string& base, std::vector<std::string> columns) {
    return TreeColumnsRequest{.tree = {.base = base, .paths = k_columns_paths}, .columns = std::move(columns)};
}

}  // namespace

NODE_TEST(tree_columns_reads_as_the_entries_form) {
    make_columns_tree(f);
    Ops ops(f.transport());
    auto entries = ops.tree({.base = f.qb() + "/t", .paths = k_columns_paths});
    auto full = ops.tree_columns(columns_request(f.qb() + "/t", k_tree_stat_keys));
    REQUIRE(entries.ok());
    REQUIRE(full.ok());
    CHECK(full->base_exists);
    REQUIRE(full->entries.size() == k_columns_paths.size());
    for (std::size_t i = 0; i < k_columns_paths.size(); ++i) {
        const TreeEntry& e = entries->entries[i];
        const TreeEntry& c = full->entries[i];
        CAPTURE(k_columns_paths[i]);
        CHECK(c.path.empty());  // the request's path at its place
        CHECK(c.type == e.type);
        REQUIRE(c.stat.has_value() == e.stat.has_value());
        if (e.stat) {
            CHECK(c.stat->size == e.stat->size);
            CHECK(c.stat->dev == e.stat->dev);
            CHECK(c.stat->ino == e.stat->ino);
            CHECK(c.stat->nlink == e.stat->nlink);
            CHECK(c.stat->mtime_ns == e.stat->mtime_ns);
            CHECK(c.stat->ctime_ns == e.stat->ctime_ns);
            CHECK(c.stat->mode == e.stat->mode);
            CHECK(c.stat->btime_ns == e.stat->btime_ns);
        }
        REQUIRE(c.error.has_value() == e.error.has_value());
        if (e.error) CHECK(c.error->code == e.error->code);
    }
    CHECK(full->entries[0].type == EntryType::file);
    CHECK(full->entries[0].stat->size == 4);
    CHECK(full->entries[0].stat->ino == lstat_path(f.qb() + "/t/a.bin").ino);
    CHECK(full->entries[3].type == EntryType::symlink);
    CHECK(full->entries[4].type == EntryType::fifo);
    CHECK(full->entries[6].type == EntryType::absent);
    CHECK(full->entries[7].type == EntryType::refused);
    CHECK(full->entries[7].error->code == "PATH_OUTSIDE_ROOT");
}

NODE_TEST(tree_columns_carries_one_letter_and_the_asked_fields_a_file) {
    make_columns_tree(f);
    json r = f.ok(Op::tree, {{"base", f.qb() + "/t"}, {"paths", k_columns_paths}, {"columns", {"size", "no_such_key"}}});
    CHECK(r["base_exists"] == true);
    CHECK(r["types"] == "ffdlpaar");
    CHECK_FALSE(r.contains("entries"));
    CHECK(r["fields"] == json{"size"});
    // One size for each of the five that exist (the directory's, the symlink's and the fifo's too).
    REQUIRE(r["stats"].size() == 5);
    CHECK(r["stats"][0] == 4);
    CHECK(r["stats"][1] == 2);
    REQUIRE(r["errors"].size() == 1);
    CHECK(r["errors"][0][0] == 7);
    CHECK(r["errors"][0][1] == "PATH_OUTSIDE_ROOT");
    CHECK(r.dump().find("a.bin") == std::string::npos);  // no path echoed

    Ops ops(f.transport());
    auto sizes = ops.tree_columns(columns_request(f.qb() + "/t", {"size"}));
    REQUIRE(sizes.ok());
    CHECK(sizes->entries[1].stat->size == 2);
    CHECK(sizes->entries[1].stat->ino == 0);  // not asked for
    auto types = ops.tree_columns(columns_request(f.qb() + "/t", {}));
    REQUIRE(types.ok());
    CHECK(types->entries[0].type == EntryType::file);
    CHECK(types->entries[0].stat.has_value());

    auto none = ops.tree_columns(columns_request(f.qb() + "/not-yet", {"size"}));
    REQUIRE(none.ok());
    CHECK_FALSE(none->base_exists);
    REQUIRE(none->entries.size() == k_columns_paths.size());
    for (const auto& e : none->entries) CHECK(e.type == EntryType::absent);
    CHECK(ops.tree_columns(columns_request("/etc", {"size"})).error().code == "PATH_OUTSIDE_ROOT");
}

TEST_CASE("tree columns: what a node writes reads back as the same entries") {
    TreeResult tree;
    tree.base_exists = true;
    tree.entries.push_back(TreeEntry{"", EntryType::file, EntryStat{5, 1, 77, 2, -3, 0644, 9, 11}, std::nullopt});
    tree.entries.push_back(TreeEntry{"", EntryType::absent, std::nullopt, std::nullopt});
    tree.entries.push_back(TreeEntry{"", EntryType::refused, std::nullopt, Error(ErrorCode::PATH_OUTSIDE_ROOT, "no")});
    tree.entries.push_back(TreeEntry{"", EntryType::char_device, EntryStat{}, std::nullopt});
    json j = tree_columns_json(tree, k_tree_stat_keys);
    CHECK(j == json{{"base_exists", true},
                    {"types", "farc"},
                    {"fields", k_tree_stat_keys},
                    {"stats", {5, 1, 77, 2, -3, 11, 0644, 9, 0, 0, 0, 0, 0, 0, 0, 0}},
                    {"errors", {{2, "PATH_OUTSIDE_ROOT", "no"}}}});
    auto back = j.get<TreeResult>();
    REQUIRE(back.entries.size() == 4);
    CHECK(back.entries[0].stat->mtime_ns == -3);
    CHECK(back.entries[0].stat->ctime_ns == 11);
    CHECK(back.entries[0].stat->btime_ns == 9);
    CHECK(back.entries[0].stat->mode == 0644);
    CHECK(back.entries[2].error->message == "no");
    CHECK(back.entries[3].type == EntryType::char_device);
    // Fields in another order, and one this build does not know, read by their names.
    auto other = json{{"base_exists", true}, {"types", "f"}, {"fields", {"later_key", "ino", "size"}}, {"stats", {1, 2, 3}}}.get<TreeResult>();
    CHECK(other.entries[0].stat->ino == 2);
    CHECK(other.entries[0].stat->size == 3);
}

TEST_CASE("tree columns that do not add up are PROTOCOL, never a guess") {
    archctl::fakes::FakeTransport far("hostile");
    Ops ops(far);
    auto answer = [&far](json result) {
        far.handlers["tree"] = [result](const json&) -> Result<json> { return result; };
    };
    const TreeColumnsRequest two{.tree = {.base = "/x", .paths = {"a", "b"}}, .columns = {"size"}};
    auto refused = [&](json result) {
        answer(std::move(result));
        auto r = ops.tree_columns(two);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().code == "PROTOCOL");
    };
    const json sizes = json{"size"};
    answer({{"base_exists", true}, {"types", "fa"}, {"fields", sizes}, {"stats", {7}}});
    REQUIRE(ops.tree_columns(two).ok());
    refused({{"base_exists", true}, {"types", "f"}, {"fields", sizes}, {"stats", {7}}});                 // one entry for two paths
    refused({{"base_exists", true}, {"types", "faa"}, {"fields", sizes}, {"stats", {7}}});               // three
    refused({{"base_exists", true}, {"types", "fz"}, {"fields", sizes}, {"stats", {7}}});                // a letter no node sends
    refused({{"base_exists", true}, {"types", "ff"}, {"fields", sizes}, {"stats", {7}}});                // a stat short
    refused({{"base_exists", true}, {"types", "fa"}, {"fields", sizes}, {"stats", {7, 8}}});             // a stat over
    refused({{"base_exists", true}, {"types", "fa"}, {"fields", sizes}, {"stats", {-7}}});               // a negative size
    refused({{"base_exists", true}, {"types", "fa"}, {"fields", sizes}, {"stats", {7.5}}});              // a fraction
    refused({{"base_exists", true}, {"types", "fa"}, {"fields", sizes}, {"stats", {"7"}}});              // a string
    refused({{"base_exists", true}, {"types", "fa"}, {"fields", {"mode"}}, {"stats", {070000}}});        // a mode past 07777
    refused({{"base_exists", true}, {"types", "fa"}, {"fields", sizes}, {"stats", 7}});                  // stats not an array
    refused({{"base_exists", true}, {"types", 2}, {"fields", sizes}, {"stats", {7}}});                   // types not a string
    refused({{"base_exists", true}, {"types", "fa"}, {"fields", {1}}, {"stats", {7}}});                  // a field not a name
    refused({{"base_exists", true}, {"types", "fr"}, {"fields", sizes}, {"stats", {7}}, {"errors", {{0, "X", "y"}}}});  // not refused
    refused({{"base_exists", true}, {"types", "fr"}, {"fields", sizes}, {"stats", {7}}, {"errors", {{2, "X", "y"}}}});  // past the end
    refused({{"base_exists", true}, {"types", "fr"}, {"fields", sizes}, {"stats", {7}}, {"errors", {{-1, "X", "y"}}}});
    refused({{"base_exists", true}, {"types", "fr"}, {"fields", sizes}, {"stats", {7}}, {"errors", {{1, "X"}}}});
    refused({{"base_exists", true}, {"types", "fr"}, {"fields", sizes}, {"stats", {7}}, {"errors", {1}}});
}
