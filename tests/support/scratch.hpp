#pragma once
// Scratch: a fresh temporary directory per test, removed when the test ends
// (kept when ARCHCTL_TEST_KEEP=1, for debugging).
#include <filesystem>
#include <string>
#include <vector>

namespace archctl::test {

class Scratch {
public:
    Scratch();
    ~Scratch();
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;

    const std::filesystem::path& path() const { return m_path; }
    std::filesystem::path operator/(const std::string& rel) const { return m_path / rel; }

    // Write `content` to `rel` (parents created); returns the full path.
    std::filesystem::path write(const std::string& rel, const std::string& content) const;
    static std::string read(const std::filesystem::path& p);

private:
    std::filesystem::path m_path;
};

// Run a command (argv, no shell) with extra environment entries; captures stdout and stderr.
struct RunResult {
    int exit_code = -1;  // exit status, or 128+signal
    std::string out;
    std::string err;
};
RunResult run(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
              const std::string& stdin_data = {});

// Path of the built archctl binary (from ARCHCTL_BIN, set by ctest).
std::string archctl_bin();

}  // namespace archctl::test
