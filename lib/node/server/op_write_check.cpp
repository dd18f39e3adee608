// write_check: proves that a root (or a directory below one) is writable, by creating a small
// temp file there and removing it again. `archctl node check` sends one per root.
//
//   request WriteCheckRequest, result WriteCheckResult (lib/node/wire/ops_inspect.hpp): the result
//   always says writable; a directory that refuses the file is an error

#include <atomic>
#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "lib/base/fs.hpp"
#include "lib/node/server/operation.hpp"
#include "lib/node/wire/ops_inspect.hpp"

namespace archctl::node {

using nlohmann::json;

Result<json> op_write_check(OpContext& ctx, json args) {
    static std::atomic<unsigned> counter{0};
    const std::string path = args.get<WriteCheckRequest>().path;
    ARCHCTL_TRY_ASSIGN(UniqueFd dir, ctx.roots().open_dir(path));
    const std::string name = fmt::format(".archctl-write-check.{}.{}", ::getpid(), counter++);
    const std::string shown = path + "/" + name;
    UniqueFd file(::openat(dir.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (file.get() < 0) return errno_error("cannot create a file in", path, errno);
    const char content[] = "archctl write check\n";
    const bool written = ::write(file.get(), content, sizeof content - 1) == static_cast<ssize_t>(sizeof content - 1);
    const int write_errno = errno;
    file.reset();
    if (::unlinkat(dir.get(), name.c_str(), 0) != 0) return errno_error("cannot remove the check file", shown, errno);
    if (!written) return errno_error("cannot write to the check file", shown, write_errno);
    return json(WriteCheckResult{path, true});
}

}  // namespace archctl::node
