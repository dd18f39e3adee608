// The node's `space` operation on both transports: one statvfs of the directory or its nearest
// existing ancestor up to its root, in one request, and nothing written anywhere (inotify sees
// every file created in the roots; `info`, which probes, is the contrast that shows it would).

#include <poll.h>
#include <sys/inotify.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "lib/base/fs.hpp"
#include "tests/unit/node/node_fixture.hpp"

using namespace archctl;
using namespace archctl::node;
using namespace archctl::node::test;
using nlohmann::json;

namespace {

std::uint64_t total_of(const std::string& path) {
    struct statvfs sv {};
    REQUIRE(::statvfs(path.c_str(), &sv) == 0);
    return static_cast<std::uint64_t>(sv.f_blocks) * sv.f_frsize;
}

// The names of the files and directories created in the watched directories since the watch
// began (IN_CREATE, read without blocking).
class CreationWatch {
public:
    explicit CreationWatch(const std::vector<std::string>& dirs) : m_fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
        REQUIRE(m_fd.valid());
        for (const auto& dir : dirs) REQUIRE(::inotify_add_watch(m_fd.get(), dir.c_str(), IN_CREATE) >= 0);
    }

    std::vector<std::string> created() {
        std::vector<std::string> names;
        alignas(struct inotify_event) char buffer[4096];
        for (;;) {
            const ssize_t n = ::read(m_fd.get(), buffer, sizeof buffer);
            if (n <= 0) return names;
            for (ssize_t at = 0; at < n;) {
                const auto* event = reinterpret_cast<const struct inotify_event*>(buffer + at);
                if (event->len > 0) names.emplace_back(event->name);
                at += static_cast<ssize_t>(sizeof(struct inotify_event) + event->len);
            }
        }
    }

private:
    UniqueFd m_fd;
};

}  // namespace

NODE_TEST(space_measures_a_directory_with_one_statvfs) {
    f.write("qb/show/x", "x");
    json root = f.ok(Op::space, {{"path", f.qb()}});
    CHECK(root["path"] == f.qb());
    CHECK(root["measured"] == f.qb());
    CHECK(root["free_bytes"].get<std::uint64_t>() > 0);
    CHECK(root["total_bytes"].get<std::uint64_t>() == total_of(f.qb()));
    CHECK(root["free_bytes"].get<std::uint64_t>() <= root["total_bytes"].get<std::uint64_t>());

    json show = f.ok(Op::space, {{"path", f.qb() + "/show/"}});
    CHECK(show["measured"] == f.qb() + "/show");
}

NODE_TEST(space_of_a_missing_directory_is_read_at_its_nearest_existing_ancestor_in_one_request) {
    f.write("qb/show/x", "x");
    json deep = f.ok(Op::space, {{"path", f.qb() + "/show/season 1/disc 2"}});
    CHECK(deep["path"] == f.qb() + "/show/season 1/disc 2");
    CHECK(deep["measured"] == f.qb() + "/show");
    CHECK(deep["total_bytes"].get<std::uint64_t>() == total_of(f.qb()));
    json route = f.ok(Op::space, {{"path", f.sync() + "/route-folder"}});
    CHECK(route["measured"] == f.sync());
    CHECK_FALSE(std::filesystem::exists(f.qb() + "/show/season 1"));  // nothing is created on the way
    CHECK_FALSE(std::filesystem::exists(f.sync() + "/route-folder"));
}

NODE_TEST(space_is_confined_to_the_roots) {
    std::filesystem::create_directories(f.outside());
    std::filesystem::create_directory_symlink(f.outside(), f.qb() + "/escape");
    CHECK(f.fails(Op::space, {{"path", f.outside()}}).code == "PATH_OUTSIDE_ROOT");
    CHECK(f.fails(Op::space, {{"path", "relative"}}).code == "PATH_OUTSIDE_ROOT");
    CHECK(f.fails(Op::space, {{"path", f.qb() + "/escape/x"}}).code == "PATH_SYMLINK");
    f.write("qb/file", "x");  // a file where a directory is asked for is not walked past
    CHECK_FALSE(f.fails(Op::space, {{"path", f.qb() + "/file/x"}}).code.empty());
    CHECK(f.fails(Op::space, json::object()).code == "BAD_REQUEST");
}

NODE_TEST(space_writes_no_file_where_info_probes) {
    f.write("qb/show/x", "x");
    const std::string route = f.sync() + "/route-folder";
    std::filesystem::create_directories(route);
    CreationWatch watch({f.qb(), f.qb() + "/show", f.sync(), route});
    for (int i = 0; i < 3; ++i) {
        f.ok(Op::space, {{"path", f.qb()}});
        f.ok(Op::space, {{"path", f.qb() + "/show"}});
        f.ok(Op::space, {{"path", route}});
        f.ok(Op::space, {{"path", route + "/not yet"}});
    }
    CHECK(watch.created() == std::vector<std::string>{});

    // The contrast: info creates its probe files in the roots and the probed directory.
    f.ok(Op::info, {{"probe_dirs", {route}}});
    CHECK_FALSE(watch.created().empty());
}
