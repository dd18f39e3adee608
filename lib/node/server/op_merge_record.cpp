// merge_record (target node, read-only): whether the job's merge record
// (lib/node/server/merge_journal.hpp) exists and which delta files are at their destinations now
// (the intent's inode is there, or at qBittorrent's incomplete name of the file; or a
// pre-existing file the merge reuses): the evidence a lost ledger is rebuilt from.

#include <sys/stat.h>

#include <fmt/format.h>

#include "lib/node/server/file_ops.hpp"
#include "lib/node/server/merge_journal.hpp"
#include "lib/node/server/operation.hpp"
#include "lib/node/wire/ops_transfer.hpp"

namespace archctl::node {

using nlohmann::json;

Result<json> op_merge_record(OpContext& ctx, json args) {
    auto request = args.get<MergeRecordRequest>();
    ARCHCTL_TRY_ASSIGN(std::string record_path, merge_record_path_for(ctx.roots(), request.record_path, request.job_dir, request.save_path));
    MergeRecordResult out{MergeRecord::absent, record_path, {}, {}};
    auto parent = ctx.roots().open_parent(record_path);
    if (!parent.ok()) {
        if (parent.error().is(ErrorCode::NOT_FOUND)) return json(out);
        return parent.take_error();
    }
    ARCHCTL_TRY_ASSIGN(std::optional<MergeState> state, load_merge_record(fd_path(parent.value().dir.get(), parent.value().name)));
    if (!state) return json(out);
    out.record = MergeRecord::present;
    for (const auto& pre : state->pre.at("pre")) {
        auto index = pre.at("i").get<std::uint32_t>();
        out.files.push_back(index);
        std::string dest = fmt::format("{}/{}", request.save_path, pre.at("path").get<std::string>());
        auto dir = ctx.roots().open_parent(dest);
        if (!dir.ok()) {
            if (dir.error().is(ErrorCode::NOT_FOUND)) continue;
            return dir.take_error();
        }
        ARCHCTL_TRY_ASSIGN(auto st, stat_in(dir.value().dir.get(), dir.value().name, dest));
        auto intent = state->intents.find(index);
        if (!st && intent != state->intents.end()) {  // moved to qBittorrent's incomplete name
            ARCHCTL_TRY_ASSIGN(st, stat_in(dir.value().dir.get(), dir.value().name + k_incomplete_suffix, dest + k_incomplete_suffix));
        }
        if (!st || !S_ISREG(st->st_mode)) continue;
        bool placed = pre.at("state") == "preexisting"
                          ? pre.value("ino", std::uint64_t{0}) == st->st_ino
                          : intent != state->intents.end() && intent->second.at("ino").get<std::uint64_t>() == st->st_ino;
        if (placed) out.placed.push_back(index);
    }
    return json(out);
}

}  // namespace archctl::node
