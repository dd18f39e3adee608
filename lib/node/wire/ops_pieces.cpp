#include "lib/node/wire/ops_pieces.hpp"

#include "lib/base/json_member.hpp"
#include "lib/node/wire/json_fields.hpp"

namespace archctl::node {

using nlohmann::json;
using namespace json_fields;

// ---- part files ----------------------------------------------------------------------------

namespace {

void put_check(json& j, const PartfileCheck& c) {
    put_optional(j, "expect_pieces", c.expect_pieces);
    put_optional(j, "expect_piece_size", c.expect_piece_size);
    if (c.allow_short_last_slot) j["allow_short_last_slot"] = true;
}

PartfileCheck get_check(const json& j) {
    PartfileCheck c;
    get_optional(j, "expect_pieces", c.expect_pieces);
    get_optional(j, "expect_piece_size", c.expect_piece_size);
    c.allow_short_last_slot = j.value("allow_short_last_slot", false);
    return c;
}

}  // namespace

PartfileCheck qb_partfile_check() {
    PartfileCheck c;
    c.allow_short_last_slot = true;
    return c;
}

PartfileCheck qb_partfile_check(std::int64_t piece_count, std::int64_t piece_size) {
    PartfileCheck c = qb_partfile_check();
    c.expect_pieces = static_cast<std::uint32_t>(piece_count);
    c.expect_piece_size = static_cast<std::uint32_t>(piece_size);
    return c;
}

void to_json(json& j, const PartfileReadRequest& v) {
    j = {{"path", v.path}};
    put_check(j, v.check);
}
void from_json(const json& j, PartfileReadRequest& v) {
    v.path = j.at("path").get<std::string>();
    v.check = get_check(j);
}

void to_json(json& j, const PartfileSlot& v) { j = {{"piece", v.piece}, {"slot", v.slot}}; }
void from_json(const json& j, PartfileSlot& v) {
    v.piece = j.value("piece", 0u);
    v.slot = j.value("slot", 0u);
}

void to_json(json& j, const PartfileReadResult& v) {
    j = {{"piece_count", v.piece_count}, {"piece_size", v.piece_size}, {"header_size", v.header_size},
         {"used_slots", v.used_slots},   {"slots", v.slots},           {"file_size", v.file_size},
         {"short_slots", v.short_slots}};
}
void from_json(const json& j, PartfileReadResult& v) {
    v.piece_count = j.value("piece_count", 0u);
    v.piece_size = j.value("piece_size", 0u);
    v.header_size = j.value("header_size", std::uint64_t{0});
    v.used_slots = j.value("used_slots", 0u);
    v.slots = get_list<PartfileSlot>(j, "slots");
    v.file_size = j.value("file_size", std::uint64_t{0});
    v.short_slots = get_list<std::uint32_t>(j, "short_slots");
}

void to_json(json& j, const PartfileCopyRequest& v) {
    j = {{"from", v.from}, {"to", v.to}, {"create_parents", v.create_parents}, {"replace", v.replace}};
    put_check(j, v.check);
    if (v.min_free) j["min_free"] = v.min_free;
}
void from_json(const json& j, PartfileCopyRequest& v) {
    v.from = j.at("from").get<std::string>();
    v.to = j.at("to").get<std::string>();
    v.create_parents = j.value("create_parents", false);
    v.replace = j.value("replace", false);
    v.check = get_check(j);
    v.min_free = j.value("min_free", std::uint64_t{0});
}

void to_json(json& j, const PartfileCopyResult& v) {
    j = v.header;
    j.update({{"to", v.to}, {"xxh3", v.xxh3}, {"already", v.already}});
    put_optional(j, "bytes", v.bytes);
}
void from_json(const json& j, PartfileCopyResult& v) {
    v.header = j.get<PartfileReadResult>();
    v.to = j.value("to", "");
    v.xxh3 = j.value("xxh3", "");
    v.already = j.value("already", false);
    v.bytes.reset();
    get_optional(j, "bytes", v.bytes);
}

void to_json(json& j, const PartfileBuildRange& v) {
    j = {{"at", v.at}, {"length", v.length}};
    if (v.from_partfile) j["from_partfile"] = true;
    else j.update({{"path", v.path}, {"offset", v.offset}});
    if (v.keep) j["keep"] = true;
}
void from_json(const json& j, PartfileBuildRange& v) {
    v.at = j.at("at").get<std::uint64_t>();
    v.length = j.at("length").get<std::uint64_t>();
    v.from_partfile = j.value("from_partfile", false);
    v.path = j.value("path", "");
    v.offset = j.value("offset", std::uint64_t{0});
    v.keep = j.value("keep", false);
}

void to_json(json& j, const PartfileBuildPiece& v) {
    j = {{"piece", v.piece}, {"length", v.length}, {"ranges", v.ranges}};
    put_optional(j, "sha1", v.sha1);
}
void from_json(const json& j, PartfileBuildPiece& v) {
    v.piece = j.at("piece").get<std::uint32_t>();
    v.length = j.at("length").get<std::uint64_t>();
    v.sha1.reset();
    get_optional(j, "sha1", v.sha1);
    v.ranges = get_list<PartfileBuildRange>(j, "ranges");
}

void to_json(json& j, const PartfileBuildRequest& v) {
    j = {{"to", v.to}, {"create_parents", v.create_parents}, {"piece_count", v.piece_count}, {"piece_size", v.piece_size},
         {"pieces", v.pieces}};
    put_optional(j, "source_partfile", v.source_partfile);
    if (v.min_free) j["min_free"] = v.min_free;
    if (v.dry_run) j["dry_run"] = true;
}
void from_json(const json& j, PartfileBuildRequest& v) {
    v.to = j.value("to", "");
    v.create_parents = j.value("create_parents", false);
    v.piece_count = j.at("piece_count").get<std::uint32_t>();
    v.piece_size = j.at("piece_size").get<std::uint32_t>();
    v.source_partfile.reset();
    get_optional(j, "source_partfile", v.source_partfile);
    v.pieces = get_list<PartfileBuildPiece>(j, "pieces");
    v.min_free = j.value("min_free", std::uint64_t{0});
    v.dry_run = j.value("dry_run", false);
}

void to_json(json& j, const PartfileBuildResult& v) {
    j = v.header;
    j.update({{"to", v.to}, {"xxh3", v.xxh3}, {"bytes", v.bytes}, {"failed", v.failed}});
}
void from_json(const json& j, PartfileBuildResult& v) {
    v.header = j.get<PartfileReadResult>();
    v.to = j.value("to", "");
    v.xxh3 = j.value("xxh3", "");
    v.bytes = j.value("bytes", std::uint64_t{0});
    v.failed = get_list<std::uint32_t>(j, "failed");
}

// ---- verify_pieces -------------------------------------------------------------------------

void to_json(json& j, const VerifyPiecesRequest& v) {
    j = {{"save_path", v.save_path}};
    put_optional(j, "torrent_b64", v.torrent_b64);
    put_optional(j, "torrent_path", v.torrent_path);
    put_optional(j, "files", v.files);
    put_optional(j, "readable", v.readable);
    if (!v.paths.empty()) {
        json paths = json::array();
        for (const auto& [index, path] : v.paths) paths.push_back({index, path});
        j["paths"] = std::move(paths);
    }
}
void from_json(const json& j, VerifyPiecesRequest& v) {
    v.save_path = j.at("save_path").get<std::string>();
    v.torrent_b64.reset();
    v.torrent_path.reset();
    v.files.reset();
    get_optional(j, "torrent_b64", v.torrent_b64);
    if (!v.torrent_b64) v.torrent_path = j.at("torrent_path").get<std::string>();
    get_optional(j, "files", v.files);
    v.readable.reset();
    get_optional(j, "readable", v.readable);
    v.paths.clear();
    for (const auto& row : j.value("paths", json::array())) v.paths[row.at(0).get<std::uint32_t>()] = row.at(1).get<std::string>();
}

void to_json(json& j, const VerifyPiecesResult& v) {
    j = v.report.is_object() ? v.report : json::object();
    j["save_path"] = v.save_path;
}
namespace {

// The report is read field by field by those who asked for it: a shape other than the one the
// piece verifier writes is an invalid result here (call_typed makes it PROTOCOL), never a type
// error in the middle of a job step.
void check_verify_report(const json& j) {
    auto expect = [&j](bool ok, const std::string& what) {
        if (!ok) throw json::other_error::create(501, "verify report: " + what, &j);
    };
    const auto boolean = [](const json& v) { return v.is_boolean(); };
    const auto object = [](const json& v) { return v.is_object(); };
    const auto list = [](const json& v) { return v.is_array(); };
    const auto text = [](const json& v) { return v.is_string(); };
    const auto count = [](const json& v) { return v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0); };
    auto optional_of = [&expect](const json& o, const char* key, auto is, const char* type, bool nullable = false) {
        auto it = o.find(key);
        if (it == o.end() || (nullable && it->is_null())) return;
        expect(is(*it), std::string("'") + key + "' is not " + type);
    };
    expect(j.is_object(), "not an object");
    optional_of(j, "verified", boolean, "a boolean");
    optional_of(j, "summary", object, "an object");
    optional_of(j, "files", list, "a list");
    for (const auto& f : member_or_empty(j, "files")) {
        expect(f.is_object(), "a file that is not an object");
        optional_of(f, "index", count, "a file index");
        optional_of(f, "size", count, "a size");
        optional_of(f, "actual_size", count, "a size", true);
        for (const char* key : {"path", "verdict", "detail", "corrupt_pieces", "needs_skipped_pieces", "blocked_pieces"})
            optional_of(f, key, text, "text");
    }
}

}  // namespace

void from_json(const json& j, VerifyPiecesResult& v) {
    check_verify_report(j);
    v.report = j;
    v.report.erase("save_path");
    v.report.erase("io");
    v.save_path = j.value("save_path", "");
}

}  // namespace archctl::node
