#pragma once
// The node contract suite runs every case on both transports: NODE_TEST(name) defines one body
// and registers it as "name [local]" and "name [exec]" (exec spawns `$ARCHCTL_BIN node serve`).

#include <doctest/doctest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/node/client/transport.hpp"
#include "lib/node/wire/op_names.hpp"
#include "tests/support/scratch.hpp"

namespace archctl::node::test {

enum class Kind { local, exec };

class NodeFixture {
public:
    explicit NodeFixture(Kind kind);

    Kind kind() const { return m_kind; }
    // Roots served by the node: a qB root and a sync root, plus a directory outside both.
    std::string qb() const { return (m_scratch.path() / "qb").string(); }
    std::string sync() const { return (m_scratch.path() / "sync").string(); }
    std::string outside() const { return (m_scratch.path() / "outside").string(); }
    const archctl::test::Scratch& scratch() const { return m_scratch; }

    // A fresh connection (exec: a new child, with `env` added to its environment).
    std::unique_ptr<Transport> connect(const std::vector<std::string>& env = {}) const;
    Transport& transport() { return *m_transport; }
    // Reconnects the fixture's own transport (after a crash of the far end).
    void reconnect() { m_transport = connect(); }

    // Calls `op`; REQUIREs success and returns the result.
    nlohmann::json ok(Op op, const nlohmann::json& args, ProgressSink* sink = nullptr);
    // Calls `op`; REQUIREs an operation error and returns it.
    Error fails(Op op, const nlohmann::json& args);
    // The same for a request naming `op` by its wire name (which need not be an operation).
    Error fails(const std::string& op, const nlohmann::json& args);

    // Writes a file below the scratch directory (`rel` is relative to it).
    std::string write(const std::string& rel, const std::string& content) const;

private:
    Kind m_kind;
    archctl::test::Scratch m_scratch;
    std::unique_ptr<Transport> m_transport;
};

// Random bytes (deterministic by seed).
std::string random_bytes(std::size_t size, unsigned seed);
std::string file_content(const std::string& path);
struct stat_result {
    bool exists = false;
    std::uint64_t ino = 0, size = 0, nlink = 0;
    unsigned mode = 0;
};
stat_result lstat_path(const std::string& path);
// Every regular file below `dir` (relative names, sorted).
std::vector<std::string> list_files(const std::string& dir);

// One request through `archctl node serve` with crash-point listing, optionally killed at
// `crash_at` ("point:n"). `passed` lists the crash points passed, the last one fatal.
struct CrashRun {
    std::vector<std::string> passed;
    int exit_code = 0;
    std::string out;
};
CrashRun run_serve(const NodeFixture& f, Op op, const nlohmann::json& args, const std::string& crash_at);
// Every "point:n" a run passed, for ARCHCTL_TEST_CRASH_AT.
std::vector<std::string> crash_specs(const std::vector<std::string>& passed);
// Mounts a tmpfs on `dir` (root only); false when not permitted.
bool mount_tmpfs(const std::string& dir);

}  // namespace archctl::node::test

#define NODE_TEST_CONCAT_(a, b) a##b
#define NODE_TEST(name)                                                                    \
    static void NODE_TEST_CONCAT_(name, _body)(::archctl::node::test::NodeFixture & f);    \
    TEST_CASE(#name " [local]") {                                                          \
        ::archctl::node::test::NodeFixture f(::archctl::node::test::Kind::local);          \
        NODE_TEST_CONCAT_(name, _body)(f);                                                 \
    }                                                                                      \
    TEST_CASE(#name " [exec]") {                                                           \
        ::archctl::node::test::NodeFixture f(::archctl::node::test::Kind::exec);           \
        NODE_TEST_CONCAT_(name, _body)(f);                                                 \
    }                                                                                      \
    static void NODE_TEST_CONCAT_(name, _body)(::archctl::node::test::NodeFixture & f)
