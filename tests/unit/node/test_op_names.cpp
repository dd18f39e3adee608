// The operation names (lib/node/wire/op_names.hpp): each Op travels under the wire name pinned
// here, the server has a handler for every one it does not answer itself, and the fake node
// answers names as `node serve` does.

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "lib/node/server/operation.hpp"
#include "lib/node/wire/op_names.hpp"
#include "tests/support/fakes.hpp"
#include "tests/unit/node/node_fixture.hpp"

using namespace archctl;
using namespace archctl::node;
using nlohmann::json;

TEST_CASE("every operation travels under its wire name, and the name reads back as the operation") {
    // The wire names are the protocol: a caller and a node of the same version must agree.
    const std::vector<std::pair<Op, std::string>> wire = {
        {Op::open_roots, "open_roots"},       {Op::info, "info"},
        {Op::space, "space"},
        {Op::tree, "tree"},                   {Op::write_check, "write_check"},
        {Op::stage, "stage"},                 {Op::receive_check, "receive_check"},
        {Op::merge, "merge"},                 {Op::merge_record, "merge_record"},
        {Op::unmerge, "unmerge"},             {Op::adopt_incomplete, "adopt_incomplete"},
        {Op::chmod_readable, "chmod_readable"}, {Op::cleanup, "cleanup"},
        {Op::unlink_owned, "unlink_owned"},   {Op::nonce_write, "nonce_write"},
        {Op::nonce_observe, "nonce_observe"}, {Op::partfile_read, "partfile_read"},
        {Op::partfile_copy, "partfile_copy"}, {Op::partfile_build, "partfile_build"},
        {Op::verify_pieces, "verify_pieces"}, {Op::metainfo_read, "metainfo_read"},
    };
    CHECK(wire.size() == k_all_ops.size());
    for (const auto& [op, text] : wire) {
        CHECK(name(op) == text);
        CHECK(parse_op(text) == op);
    }
    CHECK_FALSE(parse_op("frobnicate").has_value());
    CHECK_FALSE(parse_op("").has_value());
    CHECK_FALSE(parse_op("Tree").has_value());
}

TEST_CASE("the server has a handler for every operation but open_roots, which it answers itself") {
    for (Op op : k_all_ops) {
        CAPTURE(name(op));
        CHECK((find_operation(op) != nullptr) == (op != Op::open_roots));
    }
}

TEST_CASE("the fake node answers an unknown operation as node serve does") {
    node::test::NodeFixture real(node::test::Kind::local);
    Error served = real.fails("frobnicate", json::object());

    fakes::FakeTransport fake;
    auto answered = call_operation(fake, "frobnicate");
    REQUIRE_FALSE(answered.ok());
    CHECK(answered.error().code == served.code);
    CHECK(answered.error().message == served.message);
    CHECK(answered.error().is(ErrorCode::UNKNOWN_OPERATION));

    // An operation the fake has no handler for fails the same way, naming the fake.
    auto unanswered = call_operation(fake, Op::tree, {{"base", "/srv"}, {"paths", json::array()}});
    REQUIRE_FALSE(unanswered.ok());
    CHECK(unanswered.error().is(ErrorCode::UNKNOWN_OPERATION));
}

TEST_CASE("the fake's handlers are one slot per operation, by Op or by wire name") {
    fakes::FakeTransport fake;
    fake.handlers["tree"] = [](const json&) -> Result<json> { return json{{"base_exists", true}}; };
    REQUIRE(fake.handlers.find(Op::tree) != nullptr);
    auto tree = call_operation(fake, Op::tree, json::object());
    REQUIRE(tree.ok());
    CHECK(tree.value()["base_exists"] == true);

    fake.handlers[Op::tree] = [](const json&) -> Result<json> { return json{{"base_exists", false}}; };
    CHECK(call_operation(fake, "tree").value()["base_exists"] == false);
    CHECK(fake.handlers.erase("tree") == 1);
    CHECK(fake.handlers.find(Op::tree) == nullptr);

    // A misspelt operation is a mistake in the test, not a handler that is never called.
    CHECK_THROWS_AS(fake.handlers["stgae"], std::invalid_argument);
    CHECK_THROWS_AS(fake.handlers.erase("stgae"), std::invalid_argument);
}
