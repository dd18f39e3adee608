#include "tests/support/scratch.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

#include "lib/base/process.hpp"

namespace archctl::test {

Scratch::Scratch() {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/archctl-test-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
    m_path = buf.data();
}

Scratch::~Scratch() {
    const char* keep = std::getenv("ARCHCTL_TEST_KEEP");
    if (keep && std::string(keep) == "1") return;
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
}

std::filesystem::path Scratch::write(const std::string& rel, const std::string& content) const {
    std::filesystem::path p = m_path / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f << content;
    return p;
}

std::string Scratch::read(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

RunResult run(const std::vector<std::string>& argv, const std::vector<std::string>& env, const std::string& stdin_data) {
    SpawnOptions options;
    options.extra_env = env;
    auto r = run_capture(argv, stdin_data, options);
    RunResult out;
    if (!r.ok()) {
        out.err = r.error().message;
        return out;
    }
    out.exit_code = r.value().exit_code;
    out.out = std::move(r.value().out);
    out.err = std::move(r.value().err);
    return out;
}

std::string archctl_bin() {
    const char* bin = std::getenv("ARCHCTL_BIN");
    if (!bin || !*bin) throw std::runtime_error("ARCHCTL_BIN is not set (run the tests through ctest)");
    return bin;
}

}  // namespace archctl::test
