#include "lib/node/server/merge_journal.hpp"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "lib/base/journal.hpp"
#include "lib/node/server/file_ops.hpp"
#include "lib/node/wire/job_layout.hpp"

namespace archctl::node {
namespace {

using nlohmann::json;

// Whether every byte of the regular file `name` in `dir` is zero (holes read as zeros).
Result<bool> all_zero(int dir, const std::string& name, const std::string& display) {
    UniqueFd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return errno_error("cannot open", display, errno);
    std::vector<char> buf(1 << 20);
    off_t pos = 0;
    for (;;) {
        off_t data = ::lseek(fd.get(), pos, SEEK_DATA);
        if (data < 0) {
            if (errno == ENXIO) return true;  // only holes from here on
            data = pos;                       // SEEK_DATA unsupported: read everything
        }
        off_t hole = ::lseek(fd.get(), data, SEEK_HOLE);
        if (hole < 0) hole = std::numeric_limits<off_t>::max();
        for (pos = data; pos < hole;) {
            ssize_t n = ::pread(fd.get(), buf.data(), static_cast<std::size_t>(std::min<off_t>(static_cast<off_t>(buf.size()), hole - pos)), pos);
            if (n < 0) {
                if (errno == EINTR) continue;
                return errno_error("cannot read", display, errno);
            }
            if (n == 0) return true;
            if (std::any_of(buf.begin(), buf.begin() + n, [](char c) { return c != 0; })) return false;
            pos += n;
        }
    }
}

// How many leading components of `dirs` exist below `root_fd` as real directories.
Result<std::size_t> existing_prefix(int root_fd, const std::vector<std::string>& dirs, const std::string& root_display,
                                    std::map<std::string, std::size_t>& memo) {
    std::string key = join_path(dirs);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
    UniqueFd cur(::openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    std::size_t i = 0;
    for (; i < dirs.size(); ++i) {
        std::string shown = fmt::format("{}/{}", root_display, join_path(std::span<const std::string>(dirs.data(), i + 1)));
        ARCHCTL_TRY_ASSIGN(auto st, stat_in(cur.get(), dirs[i], shown));
        if (!st) break;
        if (S_ISLNK(st->st_mode)) return symlink_error(shown);
        if (!S_ISDIR(st->st_mode)) return merge_conflict(shown, fmt::format("a {} is where a directory is needed", file_type_name(st->st_mode)));
        UniqueFd next(::openat(cur.get(), dirs[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!next.valid()) return errno_error("cannot open directory", shown, errno);
        cur = std::move(next);
    }
    memo[key] = i;
    return i;
}

}  // namespace

Result<std::vector<DeltaFile>> parse_delta_files(const std::vector<FileEntry>& files) {
    std::vector<DeltaFile> out;
    for (const auto& f : files) {
        DeltaFile d;
        d.index = f.index;
        d.path = f.path;
        d.size = f.size;
        ARCHCTL_TRY_ASSIGN(d.components, split_relative(d.path));
        out.push_back(std::move(d));
    }
    return out;
}

Error merge_conflict(const std::string& path, const std::string& cause) {
    return Error(ErrorCode::MERGE_CONFLICT, fmt::format("cannot merge into '{}': {}", path, cause),
                 "move the conflicting entry away, or exclude the file from the job");
}

Result<PreState> record_pre_state(const RootSet& roots, const std::string& save_path, const std::vector<DeltaFile>& files) {
    ARCHCTL_TRY_ASSIGN(LocatedPath loc, roots.locate(save_path));
    int root_fd = roots.root_fd(loc.root);
    const std::string& root = roots.paths()[loc.root];
    PreState pre;
    std::map<std::string, std::size_t> memo;
    std::set<std::string> missing;
    for (const auto& f : files) {
        std::vector<std::string> dirs = loc.components;
        dirs.insert(dirs.end(), f.components.begin(), f.components.end() - 1);
        ARCHCTL_TRY_ASSIGN(std::size_t have, existing_prefix(root_fd, dirs, root, memo));
        std::string dest = fmt::format("{}/{}", save_path, f.path);
        json entry = {{"i", f.index}, {"path", f.path}, {"state", "absent"}};
        if (have == dirs.size()) {
            ARCHCTL_TRY_ASSIGN(UniqueFd dir, open_dir_below(root_fd, dirs, root));
            ARCHCTL_TRY_ASSIGN(auto st, stat_in(dir.get(), f.components.back(), dest));
            if (st) {
                if (!S_ISREG(st->st_mode)) return merge_conflict(dest, fmt::format("a {} is at a delta path", file_type_name(st->st_mode)));
                if (static_cast<std::uint64_t>(st->st_size) != f.size)
                    return merge_conflict(dest, fmt::format("a file of {} bytes is there, the torrent's file has {}", st->st_size, f.size));
                entry = {{"i", f.index}, {"path", f.path}, {"state", "preexisting"},
                         {"size", static_cast<std::uint64_t>(st->st_size)}, {"ino", static_cast<std::uint64_t>(st->st_ino)}};
            }
            // qBittorrent's incomplete name of the file: whether something is there before the
            // merge decides what unmerge may take back from that name (op_adopt_incomplete).
            ARCHCTL_TRY_ASSIGN(auto suffixed, stat_in(dir.get(), f.components.back() + k_incomplete_suffix, dest + k_incomplete_suffix));
            entry["suffixed"] = suffixed ? "present" : "absent";
        } else {
            entry["suffixed"] = "absent";
        }
        for (std::size_t k = have; k < dirs.size(); ++k)
            missing.insert(fmt::format("{}/{}", root == "/" ? "" : root, join_path(std::span<const std::string>(dirs.data(), k + 1))));
        pre.files.push_back(std::move(entry));
    }
    pre.missing_dirs.assign(missing.begin(), missing.end());
    std::sort(pre.missing_dirs.begin(), pre.missing_dirs.end(), [](const std::string& a, const std::string& b) {
        auto depth = [](const std::string& s) { return std::count(s.begin(), s.end(), '/'); };
        return depth(a) != depth(b) ? depth(a) < depth(b) : a < b;
    });
    return pre;
}

std::string job_id_of(const std::string& job_dir) { return job_dir.substr(job_dir.rfind('/') + 1); }

Result<std::string> merge_record_path_for(const RootSet& roots, const std::optional<std::string>& record_path,
                                          const std::optional<std::string>& job_dir, const std::string& save_path) {
    if (record_path) return *record_path;
    ARCHCTL_TRY_ASSIGN(LocatedPath loc, roots.locate(save_path));
    if (!job_dir) return Error(ErrorCode::BAD_REQUEST, "invalid arguments: job_dir or record_path is required");
    std::string job = job_id_of(*job_dir);
    ARCHCTL_TRY_STATUS(split_relative(job));
    std::string root = roots.paths()[loc.root];
    return merge_record_path(root, job);
}

Result<std::optional<MergeState>> load_merge_record(const std::string& record_fd_path) {
    auto contents = read_journal(record_fd_path, k_merge_journal_kind);
    if (!contents.ok()) {
        if (contents.error().is(ErrorCode::NOT_FOUND)) return std::optional<MergeState>();
        return contents.take_error();
    }
    MergeState s;
    for (auto& rec : contents.value().records) {
        if (rec.contains("pre")) s.pre = std::move(rec);
        else if (rec.contains("intent")) {
            const auto index = rec.at("intent").get<std::uint32_t>();
            s.intents[index] = std::move(rec);
        }
        else if (rec.contains("placed")) s.placed.insert(rec.at("placed").get<std::uint32_t>());
    }
    if (s.pre.is_null()) return std::optional<MergeState>();  // crashed before the pre-state landed
    return std::optional<MergeState>(std::move(s));
}

PreByIndex pre_by_index(const MergeState& state) {
    PreByIndex out;
    for (const auto& p : state.pre.at("pre")) out[p.at("i").get<std::uint32_t>()] = &p;
    return out;
}

Result<bool> qb_allocation(int dir, const std::string& name, const std::string& display, const json& pre, const struct stat& st,
                           std::uint64_t size) {
    bool allocated = pre.value("suffixed", std::string("unknown")) == "absent" && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
                     static_cast<std::uint64_t>(st.st_size) <= size;
    if (!allocated) return false;
    return all_zero(dir, name, display);
}

}  // namespace archctl::node
