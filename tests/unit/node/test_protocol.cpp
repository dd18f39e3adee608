// Pure parts of the node protocol: line encoding, path splitting, root location.

#include <doctest/doctest.h>

#include "lib/node/server/file_ops.hpp"
#include "lib/node/server/root_set.hpp"
#include "lib/node/wire/protocol.hpp"
#include "tests/support/scratch.hpp"

using namespace archctl;
using namespace archctl::node;

TEST_CASE("protocol lines round-trip every message type") {
    Request req;
    req.id = 7;
    req.op = "tree";
    req.args = {{"base", "/srv/a"}, {"paths", {"x"}}};
    auto decoded = decode(encode(Message{req}));
    REQUIRE(decoded.ok());
    const auto& r = std::get<Request>(decoded.value());
    CHECK(r.id == 7);
    CHECK(r.op == "tree");
    CHECK(r.args["paths"][0] == "x");

    Response fail = Response::failure(7, Error(ErrorCode::PATH_OUTSIDE_ROOT, "path outside", "hint"));
    fail.io.rchar = 12;
    auto back = decode(encode(Message{fail}));
    REQUIRE(back.ok());
    const auto& resp = std::get<Response>(back.value());
    CHECK_FALSE(resp.ok);
    CHECK(resp.error.code == "PATH_OUTSIDE_ROOT");
    CHECK(resp.error.hint == "hint");
    CHECK(resp.io.rchar == 12);

    Progress p;
    p.id = 3;
    p.bytes = 10;
    p.files_total = 4;
    p.current = "p/1";
    auto pb = decode(encode(Message{p}));
    REQUIRE(pb.ok());
    CHECK(std::get<Progress>(pb.value()).current == "p/1");
    CHECK(std::get<Progress>(pb.value()).files_total == 4);

    auto cancel = decode(encode(Message{Cancel{9}}));
    REQUIRE(cancel.ok());
    CHECK(std::get<Cancel>(cancel.value()).id == 9);
}

TEST_CASE("a request and a response are written without copying their payload, as the whole envelope would be") {
    // Payload text that looks like the envelope's own slot must stay payload.
    const nlohmann::json args = {{"job_dir", "/srv/\"args\":null"}, {"args", nullptr}, {"files", {{{"index", 7}, {"path", "a\u00e9"}}}}};
    const std::string line = encode_request(42, "stage", args);
    const nlohmann::json whole = {{"type", "request"}, {"id", 42}, {"op", "stage"}, {"args", args}};
    CHECK(line == whole.dump());
    auto request = decode(line);
    REQUIRE(request.ok());
    CHECK(std::get<Request>(request.value()).args == args);
    CHECK(encode(Message{Request{42, "stage", args}}) == line);

    Response ok = Response::success(9, {{"result", nullptr}, {"name", "\"result\":null"}});
    ok.io.rchar = 5;
    const nlohmann::json whole_ok = {{"type", "response"}, {"id", 9}, {"ok", true}, {"result", ok.result}, {"io", {{"rchar", 5}, {"read_bytes", 0}}}};
    CHECK(encode_response(ok) == whole_ok.dump());
    auto back = decode(encode_response(ok));
    REQUIRE(back.ok());
    CHECK(std::get<Response>(back.value()).result == ok.result);
    Response failed = Response::failure(3, Error(ErrorCode::NOT_FOUND, "gone"));
    CHECK(encode_response(failed).find("\"result\"") == std::string::npos);
    CHECK(encode(Message{failed}) == encode_response(failed));
}

TEST_CASE("protocol refuses malformed lines") {
    CHECK(decode("not json").error().code == "PROTOCOL");
    // Found by fuzz_line_reader: an id of 7.9e46 is undefined behaviour to read as an integer.
    CHECK(decode(R"({"type":"request","id":7.9e46,"op":"info","args":{}})").error().code == "PROTOCOL");
    CHECK(decode(R"({"type":"progress","id":1,"bytes":0.5})").error().code == "PROTOCOL");
    CHECK(decode(R"({"type":"request","id":1,"op":"info","args":{"x":0.5}})").ok());  // args are the operation's
    CHECK(decode("[1,2]").error().code == "PROTOCOL");
    CHECK(decode(R"({"type":"request","op":"x"})").error().code == "PROTOCOL");  // no id
    CHECK(decode(R"({"type":"frobnicate","id":1})").error().code == "PROTOCOL");
    CHECK(decode(R"({"type":"request","id":1,"op":"x","args":[1]})").error().code == "PROTOCOL");
}

TEST_CASE("relative paths must be clean and stay below their base") {
    CHECK(split_relative("a/b/c").value() == std::vector<std::string>{"a", "b", "c"});
    CHECK(split_relative("../x").error().code == "PATH_OUTSIDE_ROOT");
    CHECK(split_relative("a/../../x").error().code == "PATH_OUTSIDE_ROOT");
    CHECK(split_relative("/etc/passwd").error().code == "PATH_OUTSIDE_ROOT");
    CHECK(split_relative("a//b").error().code == "BAD_PATH");
    CHECK(split_relative("a/./b").error().code == "BAD_PATH");
    CHECK(split_relative("").error().code == "BAD_PATH");
    CHECK(split_relative(std::string("a\0b", 3)).error().code == "BAD_PATH");
}

TEST_CASE("node paths are located under the longest matching root") {
    archctl::test::Scratch scratch;
    std::filesystem::create_directories(scratch / "a" / "inner");
    std::string a = (scratch / "a").string(), inner = (scratch / "a" / "inner").string();
    auto set = RootSet::open({a, inner});
    REQUIRE(set.ok());
    auto loc = set.value().locate(inner + "/x/y");
    REQUIRE(loc.ok());
    CHECK(loc.value().root == 1);
    CHECK(loc.value().components == std::vector<std::string>{"x", "y"});
    CHECK(set.value().locate(a).value().components.empty());
    CHECK(set.value().locate(a + "x/y").error().code == "PATH_OUTSIDE_ROOT");  // prefix, not a parent
    CHECK(set.value().locate("relative/path").error().code == "PATH_OUTSIDE_ROOT");
    CHECK(set.value().locate(a + "/../etc").error().code == "PATH_OUTSIDE_ROOT");
    CHECK(set.value().locate("/etc/passwd").error().code == "PATH_OUTSIDE_ROOT");
    // A path that is not clean is named as given, not by its part below the root.
    auto doubled = set.value().locate(a + "//sub");
    REQUIRE_FALSE(doubled.ok());
    CHECK(doubled.error().code == "BAD_PATH");
    CHECK(doubled.error().message == "invalid node path '" + a + "//sub': an empty or '.' component");
    CHECK(set.value().locate(a + "/./sub").error().code == "BAD_PATH");
    CHECK(set.value().locate(a + "/x/../../etc").error().message.find("'" + a + "/x/../../etc'") != std::string::npos);
    CHECK_FALSE(RootSet::open({"relative"}).ok());
    CHECK_FALSE(RootSet::open({(scratch / "missing").string()}).ok());
}

TEST_CASE("syncthing artifacts are recognised") {
    CHECK(is_syncthing_artifact(".syncthing.3.tmp"));
    CHECK(is_syncthing_artifact("~syncthing~3.tmp"));
    CHECK(is_syncthing_artifact("3.sync-conflict-20240101-101010-ABCDEFG"));
    CHECK(is_syncthing_artifact(".stfolder"));
    CHECK_FALSE(is_syncthing_artifact("3"));
    CHECK(syncthing_temp_name("3") == ".syncthing.3.tmp");
}
