#include "tests/unit/node/node_fixture.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <unistd.h>

#include "lib/node/wire/protocol.hpp"

namespace archctl::node::test {

NodeFixture::NodeFixture(Kind kind) : m_kind(kind) {
    std::filesystem::create_directories(qb());
    std::filesystem::create_directories(sync());
    std::filesystem::create_directories(outside());
    m_transport = connect();
}

std::unique_ptr<Transport> NodeFixture::connect(const std::vector<std::string>& env) const {
    if (m_kind == Kind::local) {
        auto t = connect_local("testnode", {qb(), sync()});
        REQUIRE_MESSAGE(t.ok(), (t.ok() ? "" : t.error().message));
        return std::move(t).value();
    }
    ExecOptions options;
    options.node_name = "testnode";
    options.argv = {archctl::test::archctl_bin(), "node", "serve", "--root", qb(), "--root", sync()};
    options.extra_env = env;
    auto t = connect_exec(options);
    REQUIRE_MESSAGE(t.ok(), (t.ok() ? "" : t.error().message));
    return std::move(t).value();
}

nlohmann::json NodeFixture::ok(Op op, const nlohmann::json& args, ProgressSink* sink) {
    auto r = call_operation(*m_transport, op, args, sink);
    REQUIRE_MESSAGE(r.ok(), name(op) << ": " << (r.ok() ? "" : r.error().code + " " + r.error().message));
    return std::move(r).value();
}

Error NodeFixture::fails(Op op, const nlohmann::json& args) { return fails(std::string(name(op)), args); }

Error NodeFixture::fails(const std::string& op, const nlohmann::json& args) {
    auto r = call_operation(*m_transport, op, args);
    REQUIRE_MESSAGE(!r.ok(), op << " unexpectedly succeeded: " << (r.ok() ? r.value().dump() : ""));
    return r.error();
}

std::string NodeFixture::write(const std::string& rel, const std::string& content) const {
    return m_scratch.write(rel, content).string();
}

std::string random_bytes(std::size_t size, unsigned seed) {
    std::mt19937_64 gen(seed);
    std::string out(size, '\0');
    for (std::size_t i = 0; i < size; i += 8) {
        std::uint64_t v = gen();
        for (std::size_t k = 0; k < 8 && i + k < size; ++k) out[i + k] = static_cast<char>((v >> (8 * k)) & 0xff);
    }
    return out;
}

std::string file_content(const std::string& path) { return archctl::test::Scratch::read(path); }

stat_result lstat_path(const std::string& path) {
    struct stat st {};
    stat_result r;
    if (::lstat(path.c_str(), &st) != 0) return r;
    r.exists = true;
    r.ino = st.st_ino;
    r.size = static_cast<std::uint64_t>(st.st_size);
    r.nlink = st.st_nlink;
    r.mode = st.st_mode & 07777;
    return r;
}

std::vector<std::string> list_files(const std::string& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec)) return out;
    for (auto& e : std::filesystem::recursive_directory_iterator(dir))
        if (e.is_regular_file() || e.is_symlink()) out.push_back(std::filesystem::relative(e.path(), dir).string());
    std::sort(out.begin(), out.end());
    return out;
}

CrashRun run_serve(const NodeFixture& f, Op op, const nlohmann::json& args, const std::string& crash_at) {
    Request r;
    r.id = 1;
    r.op = name(op);
    r.args = args;
    std::vector<std::string> env = {"ARCHCTL_TEST_CRASH_LIST=1"};
    if (!crash_at.empty()) env.push_back("ARCHCTL_TEST_CRASH_AT=" + crash_at);
    auto out = archctl::test::run({archctl::test::archctl_bin(), "node", "serve", "--root", f.qb(), "--root", f.sync()}, env,
                                  encode(Message{r}) + "\n");
    CrashRun run;
    run.exit_code = out.exit_code;
    run.out = out.out;
    std::istringstream lines(out.err);
    std::string line;
    const std::string prefix = "archctl: crash-point ";
    while (std::getline(lines, line))
        if (line.rfind(prefix, 0) == 0) run.passed.push_back(line.substr(prefix.size()));
    return run;
}

std::vector<std::string> crash_specs(const std::vector<std::string>& passed) {
    std::map<std::string, int> seen;
    std::vector<std::string> specs;
    for (const auto& p : passed) specs.push_back(p + ":" + std::to_string(++seen[p]));
    return specs;
}

bool mount_tmpfs(const std::string& dir) {
    if (::geteuid() != 0) return false;
    return archctl::test::run({"mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", dir}).exit_code == 0;
}

}  // namespace archctl::node::test
