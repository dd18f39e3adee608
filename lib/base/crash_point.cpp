#include "lib/base/crash_point.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unistd.h>

namespace archctl {
namespace {

struct CrashConfig {
    bool active = false;
    bool list = false;
    std::string target;
    long nth = 1;
    long seen = 0;
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

}  // namespace

void crash_point(std::string_view name) {
    CrashConfig& c = crash_config();
    if (!c.active) return;
    std::lock_guard lock(c.mutex);
    if (c.list) std::fprintf(stderr, "archctl: crash-point %.*s\n", static_cast<int>(name.size()), name.data());
    if (!c.target.empty() && name == c.target && ++c.seen == c.nth) {
        std::fflush(stderr);
        ::_exit(137);
    }
}

}  // namespace archctl
