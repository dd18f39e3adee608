// adopt_incomplete (target node) serves qBittorrent's "Append .!qB extension to incomplete files":
// a file qBittorrent selects while incomplete is renamed to '<path>.!qB' asynchronously and an
// empty or all-zero file is allocated under that name. Before the recheck, each listed file this
// job merged is moved over that allocation (only over an allocation: a '.!qB' file that was there
// before the merge, or holds any non-zero byte, is never touched); with adopt=false it only
// reports where each file is. What the job merged is read from its merge record
// (lib/node/server/merge_journal.hpp); unmerge (op_unmerge.cpp) takes back the '.!qB' names too.
//
// Crash point: merge.adopted.

#include <cerrno>
#include <sys/stat.h>
#include <unistd.h>

#include <map>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/node/server/file_ops.hpp"
#include "lib/node/server/merge_journal.hpp"
#include "lib/node/server/operation.hpp"
#include "lib/node/wire/ops_transfer.hpp"

namespace archctl::node {

using nlohmann::json;

namespace {

// Where one listed file is, as the result reports it.
enum class Where { suffixed, plain, pending, foreign };

// Looks at (and with request.adopt, adopts) one file this job merged: `pre` and `intent` are its
// records in the merge record.
Result<Where> adopt_one(OpContext& ctx, const AdoptIncompleteRequest& request, const json& pre, const json& intent) {
    std::string dest = fmt::format("{}/{}", request.save_path, pre.at("path").get<std::string>());
    auto dir = ctx.roots().open_parent(dest);
    if (!dir.ok()) {
        if (dir.error().is(ErrorCode::NOT_FOUND)) return Where::foreign;
        return dir.take_error();
    }
    int dfd = dir.value().dir.get();
    const std::string& name = dir.value().name;
    std::string suffixed_name = name + request.suffix;
    auto ino = intent.at("ino").get<std::uint64_t>();
    auto size = intent.value("size", std::uint64_t{0});
    ARCHCTL_TRY_ASSIGN(auto plain, stat_in(dfd, name, dest));
    ARCHCTL_TRY_ASSIGN(auto suffixed, stat_in(dfd, suffixed_name, dest + request.suffix));
    if (suffixed && S_ISREG(suffixed->st_mode) && suffixed->st_ino == ino) return Where::suffixed;
    if (!(plain && S_ISREG(plain->st_mode) && plain->st_ino == ino)) return Where::foreign;
    if (!suffixed) return Where::plain;
    // Only what qBittorrent allocated after the merge is replaced: a suffixed file that was
    // there before, is not a regular single-link file, is larger than the file, or holds
    // any non-zero byte (a real partial download) stays as it is.
    ARCHCTL_TRY_ASSIGN(bool allocated, qb_allocation(dfd, suffixed_name, dest + request.suffix, pre, *suffixed, size));
    if (!allocated) return Where::foreign;
    if (!request.adopt) return Where::pending;
    if (::renameat(dfd, name.c_str(), dfd, suffixed_name.c_str()) != 0)
        return errno_error("cannot move this job's file to", dest + request.suffix, errno);
    ARCHCTL_TRY_STATUS(fsync_fd_dir(dfd, dest));
    crash_point("merge.adopted");
    return Where::suffixed;
}

}  // namespace

Result<json> op_adopt_incomplete(OpContext& ctx, json args) {
    auto request = args.get<AdoptIncompleteRequest>();
    if (request.suffix.empty() || request.suffix.find('/') != std::string::npos)
        return Error(ErrorCode::BAD_REQUEST, fmt::format("invalid arguments: suffix '{}' is not a file name suffix", request.suffix));
    ARCHCTL_TRY_ASSIGN(std::string record_path, merge_record_path_for(ctx.roots(), request.record_path, request.job_dir, request.save_path));
    auto parent = ctx.roots().open_parent(record_path);
    if (!parent.ok()) return parent.take_error();
    ARCHCTL_TRY_ASSIGN(std::optional<MergeState> state, load_merge_record(fd_path(parent.value().dir.get(), parent.value().name)));
    if (!state) return Error(ErrorCode::NOT_FOUND, fmt::format("no merge record at '{}'", record_path));
    const PreByIndex pre_of = pre_by_index(*state);
    AdoptIncompleteResult out;
    for (std::uint32_t index : request.indices) {
        auto pre = pre_of.find(index);
        auto intent = state->intents.find(index);
        Where where = Where::foreign;  // not a file this job placed
        if (pre != pre_of.end() && pre->second->at("state") == "absent" && intent != state->intents.end()) {
            ARCHCTL_TRY_ASSIGN(where, adopt_one(ctx, request, *pre->second, intent->second));
        }
        switch (where) {
            case Where::suffixed: out.suffixed.push_back(index); break;
            case Where::plain: out.plain.push_back(index); break;
            case Where::pending: out.pending.push_back(index); break;
            case Where::foreign: out.foreign.push_back(index); break;
        }
    }
    return json(out);
}

}  // namespace archctl::node
