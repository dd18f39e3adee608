// Test helper for lib/base: performs one durable operation so a test can kill it at a crash
// point, or holds a lock in a separate process.
//   base_helper atomic-write PATH CONTENT
//   base_helper journal-append PATH N         (appends records {"i":0..N-1})
//   base_helper lock-hold DIR                 (takes the lock, prints "locked", waits for stdin EOF)
//   base_helper lock-try DIR                  (prints "acquired" or the error; notices on stderr)

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

#include "lib/base/atomic_file.hpp"
#include "lib/base/journal.hpp"
#include "lib/base/lock_file.hpp"

using namespace archctl;

static int fail(const Error& e) {
    std::fprintf(stderr, "%s: %s\n", e.code.c_str(), e.message.c_str());
    return 1;
}

int main(int argc, char** argv) {
    if (argc < 3) return 2;
    std::string cmd = argv[1];
    if (cmd == "atomic-write" && argc == 4) {
        Status s = write_file_atomic(argv[2], argv[3]);
        return s.ok() ? 0 : fail(s.error());
    }
    if (cmd == "journal-append" && argc == 4) {
        auto w = JournalWriter::open(argv[2], "test", 1);
        if (!w.ok()) return fail(w.error());
        int n = std::atoi(argv[3]);
        for (int i = 0; i < n; ++i) {
            Status s = w->append({{"i", i}});
            if (!s.ok()) return fail(s.error());
        }
        return 0;
    }
    if ((cmd == "lock-hold" || cmd == "lock-try") && argc == 3) {
        std::vector<std::string> notices;
        auto lock = LockFile::acquire(argv[2], "test holder", notices);
        for (const auto& n : notices) std::fprintf(stderr, "notice: %s\n", n.c_str());
        if (!lock.ok()) {
            std::printf("%s\n", lock.error().message.c_str());
            return 3;
        }
        if (cmd == "lock-try") {
            std::printf("acquired\n");
            return 0;
        }
        std::printf("locked\n");
        std::fflush(stdout);
        char c;
        while (::read(0, &c, 1) > 0) {}
        return 0;
    }
    return 2;
}
