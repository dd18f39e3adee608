#include "lib/base/crash_point.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace archctl {
namespace {

struct CrashConfig {
    bool active = false;
    bool list = false;
    std::string target;
    long nth = 1;
    long seen = 0;
    std::string pause_at, pause_file;
    bool paused = false;
    std::mutex mutex;

    CrashConfig() {
        if (const char* at = std::getenv("ARCHCTL_TEST_CRASH_AT"); at && *at) {
            std::string spec(at);
            auto colon = spec.rfind(':');
            if (colon != std::string::npos) {
                nth = std::strtol(spec.c_str() + colon + 1, nullptr, 10);
                if (nth < 1) nth = 1;
                spec.resize(colon);
            }
            target = spec;
            active = true;
        }
        if (const char* p = std::getenv("ARCHCTL_TEST_PAUSE_AT"); p && *p) {
            std::string spec(p);
            auto colon = spec.find(':');
            if (colon != std::string::npos && colon + 1 < spec.size()) {
                pause_at = spec.substr(0, colon);
                pause_file = spec.substr(colon + 1);
                active = true;
            }
        }
        if (const char* l = std::getenv("ARCHCTL_TEST_CRASH_LIST"); l && std::string(l) == "1") {
            list = true;
            active = true;
        }
    }
};

CrashConfig& crash_config() {
    static CrashConfig config;
    return config;
}

bool exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

// Announce the pause with <file>.paused, then wait for <file> (bounded: a test that forgot to
// release the run must not leave it hanging).
void pause_here(const CrashConfig& c) {
    std::string marker = c.pause_file + ".paused";
    int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) ::close(fd);
    std::fprintf(stderr, "archctl: paused at %s until %s exists\n", c.pause_at.c_str(), c.pause_file.c_str());
    auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
    while (!exists(c.pause_file) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

}  // namespace

void crash_point(std::string_view name) {
    CrashConfig& c = crash_config();
    if (!c.active) return;
    std::lock_guard lock(c.mutex);
    if (!c.paused && !c.pause_at.empty() && name == c.pause_at) {
        c.paused = true;
        pause_here(c);
    }
    if (c.list) std::fprintf(stderr, "archctl: crash-point %.*s\n", static_cast<int>(name.size()), name.data());
    if (!c.target.empty() && name == c.target && ++c.seen == c.nth) {
        std::fflush(stderr);
        ::_exit(137);
    }
}

}  // namespace archctl
