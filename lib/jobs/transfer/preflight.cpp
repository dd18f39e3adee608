// Preflight: the external state a job relies on, recomputed before every step (docs/design.md "Preflight").
// A change is an explicit STALE_STATE failure (compensated by the caller), never adapted to.

#include "lib/jobs/transfer/preflight.hpp"

#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "lib/base/fs.hpp"
#include "lib/jobs/transfer/job_run.hpp"
#include "lib/jobs/evidence/metainfo.hpp"
#include "lib/jobs/evidence/resolve.hpp"
#include "lib/node/client/ops.hpp"
#include "lib/routes/valve.hpp"
#include "lib/torrent/metainfo.hpp"
#include "lib/torrent/partfile.hpp"

namespace archctl::jobs::transfer {
namespace {

// `path` is `dir` or below it, component-wise.
bool at_or_below(const std::string& path_in, const std::string& dir_in) {
    std::string path = strip_trailing_slashes(path_in), dir = strip_trailing_slashes(dir_in);
    return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

// The checks of every delta file read its type and size only: the tree's columns form with the
// one stat field (a few bytes a file where a full entry is an object of eleven keys).
const std::vector<std::string> k_type_and_size = {"size"};

const char* k_symlink_fix = "archctl never follows symlinks below a node root; point qBittorrent at the real directory (Set location)";

// A path the job reaches through a symlink, or cannot reach: the node's own error, with the fix.
Error unreachable_path(Error e) {
    if (e.is(ErrorCode::PATH_SYMLINK)) e.hint = k_symlink_fix;
    return e;
}

// Content the job would read in the save path is elsewhere (qBittorrent's temp path, a move).
Status check_content_location(const plan::PlacementView& view, const std::string& save_path, const std::string& name) {
    const std::string& content = view.content_path;
    if (content.empty() || content.front() != '/' || at_or_below(content, save_path)) return {};
    if (!view.download_path.empty() && at_or_below(content, view.download_path))
        return Error(ErrorCode::SOURCE_INCOMPLETE,
                     fmt::format("the data of '{}' on '{}' is in qBittorrent's incomplete-downloads folder '{}', not in its save path '{}'",
                                 name, view.node, content, save_path),
                     "let the download finish (qBittorrent then moves it to the save path), or turn off 'Use another path for "
                     "incomplete torrent' for it in qBittorrent");
    return Error(ErrorCode::BAD_PATH,
                 fmt::format("the data of '{}' on '{}' is at '{}', outside its save path '{}'", name, view.node, content, save_path),
                 "let qBittorrent finish moving it, or set its location again in qBittorrent");
}

// The files outside the union that share `pieces` with it: whose bytes a part file must hold.
std::vector<std::uint32_t> neighbours(const torrent::FileModel& model, const torrent::Selection& union_set,
                                      const std::vector<std::int64_t>& pieces) {
    std::set<std::uint32_t> out;
    for (auto piece : pieces)
        for (std::uint32_t f : model.files_in_piece(piece))
            if (!union_set.contains(f)) out.insert(f);
    return {out.begin(), out.end()};
}

Error partfile_refused(const std::string& why, const std::vector<std::uint32_t>& others) {
    return Error(ErrorCode::PARTFILE_UNSUPPORTED, fmt::format("PARTFILE_UNSUPPORTED: {}", why),
                 others.empty() ? std::string("the pieces shared by selected and skipped files cannot be verified without it")
                                : fmt::format("add file(s) {} to the request (they share pieces with it), or move the whole torrent",
                                              torrent::Selection::of(others).to_string()));
}

// A part file the node read and judged unusable (absent, not a regular file, a header that does
// not match): a verdict on the part file. Anything else (the node or its transport failing) is
// passed on as it is, so an outage stays an outage.
bool partfile_verdict(const Error& e) {
    for (ErrorCode c : {ErrorCode::PARTFILE_INVALID, ErrorCode::NOT_FOUND, ErrorCode::NOT_REGULAR, ErrorCode::PATH_SYMLINK,
                        ErrorCode::PATH_OUTSIDE_ROOT, ErrorCode::BAD_PATH, ErrorCode::NOT_A_DIRECTORY, ErrorCode::TOO_LARGE})
        if (e.is(c)) return true;
    return false;
}

const torrent::ModelFile& file_at(const torrent::FileModel& model, std::uint32_t index) {
    const auto& files = model.files();
    if (index < files.size() && files[index].index == index) return files[index];
    for (const auto& f : files)
        if (f.index == index) return f;
    return files.at(index);
}

std::string join_pieces(const std::vector<std::int64_t>& pieces) { return fmt::format("{}", fmt::join(pieces, ", ")); }

// What the source holds of the files outside the union: which are on its disk at their full
// size, and which pieces its part file has a slot for.
struct SourceHoldings {
    std::set<std::uint32_t> on_disk;
    std::set<std::int64_t> in_partfile;
    std::string partfile_trouble;  // why the source's part file cannot be used, when it cannot
};

Result<SourceHoldings> source_holdings(node::Ops& ops, const SourceNeeds& needs, const std::string& partfile_path,
                                       const std::string& partfile_name, const std::vector<std::uint32_t>& others) {
    const torrent::FileModel& model = *needs.model;
    SourceHoldings h;
    node::TreeRequest request{.base = needs.save_path, .paths = {partfile_name}};
    for (auto f : others) request.paths.push_back(source_disk_path(needs, f));
    auto tree = ops.tree(request);
    if (!tree.ok()) return unreachable_path(tree.take_error());
    for (std::size_t i = 0; i < others.size() && i + 1 < tree->entries.size(); ++i) {
        const auto& e = tree->entries[i + 1];
        if (e.type == node::EntryType::file && e.stat && e.stat->size == static_cast<std::uint64_t>(file_at(model, others[i]).size))
            h.on_disk.insert(others[i]);
    }
    if (tree->entries.empty() || tree->entries[0].type != node::EntryType::file) return h;
    auto header = ops.partfile_read({partfile_path, node::qb_partfile_check(needs.piece_count, needs.piece_length)});
    if (!header.ok() && !partfile_verdict(header.error())) return header.take_error();
    if (!header.ok()) {
        h.partfile_trouble = header.error().message;
        return h;
    }
    for (const auto& slot : header->slots) h.in_partfile.insert(slot.piece);
    return h;
}

// One piece of the build request: every file's bytes in it (the union's only to check the
// piece), a neighbour's read from its file when that is on the source's disk (libtorrent writes
// a skipped file that exists in place), else from the part file's slot.
node::PartfileBuildPiece build_piece(const SourceNeeds& needs, const SourceHoldings& holdings, std::int64_t piece, bool force_partfile) {
    const torrent::FileModel& model = *needs.model;
    const std::string base = strip_trailing_slashes(needs.save_path);
    const std::int64_t length = needs.piece_length, start = piece * length;
    node::PartfileBuildPiece bp;
    bp.piece = static_cast<std::uint32_t>(piece);
    bp.length = static_cast<std::uint64_t>(std::min(length, model.total_size() - start));
    if (needs.piece_hashes && static_cast<std::size_t>(piece) < needs.piece_hashes->size())
        bp.sha1 = torrent::to_hex((*needs.piece_hashes)[static_cast<std::size_t>(piece)]);
    for (std::uint32_t f : model.files_in_piece(piece)) {
        const torrent::ModelFile& mf = file_at(model, f);
        std::int64_t from = std::max(start, mf.offset), to = std::min(start + static_cast<std::int64_t>(bp.length), mf.offset + mf.size);
        if (to <= from) continue;
        node::PartfileBuildRange r;
        r.at = static_cast<std::uint64_t>(from - start);
        r.length = static_cast<std::uint64_t>(to - from);
        r.keep = !needs.union_set.contains(f);
        if (r.keep && (force_partfile || !holdings.on_disk.count(f))) {
            r.from_partfile = true;
        } else {
            r.path = base + "/" + source_disk_path(needs, f);
            r.offset = static_cast<std::uint64_t>(from - mf.offset);
        }
        bp.ranges.push_back(std::move(r));
    }
    return bp;
}

// The boundary pieces whose outside bytes are all on the source's disk and do not match their
// SHA-1 there: checked on the node, read only.
Result<std::set<std::int64_t>> disk_pieces_failing(node::Ops& ops, const SourceNeeds& needs, const SourceHoldings& holdings) {
    node::PartfileBuildRequest check;
    check.piece_count = static_cast<std::uint32_t>(needs.piece_count);
    check.piece_size = static_cast<std::uint32_t>(needs.piece_length);
    check.dry_run = true;
    for (auto piece : needs.boundary_pieces) {
        bool all_disk = true;
        for (std::uint32_t f : needs.model->files_in_piece(piece))
            if (!needs.union_set.contains(f) && !holdings.on_disk.count(f)) all_disk = false;
        if (all_disk) check.pieces.push_back(build_piece(needs, holdings, piece, false));
    }
    if (check.pieces.empty() || !needs.piece_hashes) return std::set<std::int64_t>{};
    ARCHCTL_TRY_ASSIGN(auto checked, ops.partfile_build(check));
    return std::set<std::int64_t>(checked.failed.begin(), checked.failed.end());
}

// PARTFILE_UNSUPPORTED for boundary pieces whose outside bytes the source holds nowhere.
Error bytes_nowhere(const std::string& node, const std::string& partfile_path, const std::string& partfile_trouble,
                    const std::vector<std::int64_t>& missing, const std::set<std::int64_t>& disk_failed,
                    const std::set<std::uint32_t>& nowhere) {
    std::vector<std::uint32_t> files(nowhere.begin(), nowhere.end());
    std::string partfile = partfile_trouble.empty() ? fmt::format("in its part file '{}'", partfile_path)
                                                    : fmt::format("in a usable part file ({})", partfile_trouble);
    std::vector<std::int64_t> unverified;
    for (auto piece : missing)
        if (disk_failed.count(piece)) unverified.push_back(piece);
    std::string disk_note = unverified.empty()
                                ? std::string()
                                : fmt::format(" (with the bytes on its disk, piece(s) {} do not match the torrent)", join_pieces(unverified));
    Error refused = partfile_refused(fmt::format("boundary piece(s) {} need bytes of file(s) {} that '{}' has neither complete on its "
                                                 "disk nor {}{}",
                                                 join_pieces(missing), torrent::Selection::of(files).to_string(), node, partfile, disk_note),
                                     files);
    // Those files cannot simply be added to the request: the source does not hold them.
    refused.hint = fmt::format("'{}' no longer holds those bytes: recheck the torrent there in qBittorrent, then request only files "
                               "that share no piece with file(s) {}",
                               node, torrent::Selection::of(files).to_string());
    return refused;
}


}  // namespace

SourceNeeds needs_of(const JobDefinition& def, const std::string& save_path) {
    return SourceNeeds{.save_path = save_path,
                       .files = def.files,
                       .partfile = def.partfile,
                       .boundary_pieces = def.boundary_pieces,
                       .union_set = def.union_set,
                       .piece_count = def.piece_count,
                       .piece_length = def.piece_length};
}

std::string source_disk_path(const SourceNeeds& needs, std::uint32_t index) {
    if (needs.layout) {
        std::string disk = needs.layout->disk_path(index);
        if (!disk.empty()) return disk;
    }
    if (!needs.model) return {};
    for (const auto& f : needs.model->files())
        if (f.index == index) return f.path;
    return {};
}

Result<PartfileSourcing> source_partfile_plan(node::Ops& ops, const std::string& node, const std::string& qb_id, const SourceNeeds& needs) {
    const torrent::FileModel& model = *needs.model;
    PartfileSourcing out;
    out.source_partfile = strip_trailing_slashes(needs.save_path) + "/" + torrent::partfile_name(qb_id);
    auto others = neighbours(model, needs.union_set, needs.boundary_pieces);
    ARCHCTL_TRY_ASSIGN(SourceHoldings holdings, source_holdings(ops, needs, out.source_partfile, torrent::partfile_name(qb_id), others));
    // A piece that does not verify with the bytes on disk takes them from the part file, if it can.
    ARCHCTL_TRY_ASSIGN(std::set<std::int64_t> disk_failed, disk_pieces_failing(ops, needs, holdings));
    out.request.piece_count = static_cast<std::uint32_t>(needs.piece_count);
    out.request.piece_size = static_cast<std::uint32_t>(needs.piece_length);
    std::vector<std::int64_t> missing;
    std::set<std::uint32_t> nowhere, from_disk, from_partfile;
    for (auto piece : needs.boundary_pieces) {
        bool failed = disk_failed.count(piece) > 0, has_slot = holdings.in_partfile.count(piece) > 0, piece_ok = true;
        for (std::uint32_t f : model.files_in_piece(piece)) {
            if (needs.union_set.contains(f)) continue;
            if (!failed && holdings.on_disk.count(f)) {
                from_disk.insert(f);
                out.bytes.push_back({piece, f, "disk"});
            } else if (has_slot) {
                from_partfile.insert(f);
                out.bytes.push_back({piece, f, "partfile"});
            } else {
                nowhere.insert(f);
                piece_ok = false;
            }
        }
        if (!piece_ok) missing.push_back(piece);
        out.request.pieces.push_back(build_piece(needs, holdings, piece, failed));
    }
    if (!missing.empty()) return bytes_nowhere(node, out.source_partfile, holdings.partfile_trouble, missing, disk_failed, nowhere);
    out.from_disk.assign(from_disk.begin(), from_disk.end());
    out.from_partfile.assign(from_partfile.begin(), from_partfile.end());
    if (out.reads_partfile()) out.request.source_partfile = out.source_partfile;
    return out;
}

namespace {

evidence::Resource resource_of(const JobDefinition& def) {
    evidence::Resource res;
    res.identity = def.identity;
    res.name = def.name;
    return res;
}

}  // namespace

Status check_names(const plan::PlacementView& view, const std::vector<JobFile>& files, const std::string& name) {
    for (const auto& f : files)
        if (f.index < view.names.size() && view.names[f.index] != f.at_source())
            return plan::renamed_in_qb(view, f.index, f.path, name, f.at_source());
    return {};
}

Status check_source_ready(NodeHandle& source, const plan::PlacementView& view, const SourceNeeds& needs,
                          const std::vector<JobFile>& named, const std::string& name) {
    ARCHCTL_TRY_STATUS(check_names(view, named, name));
    ARCHCTL_TRY_STATUS(check_content_location(view, needs.save_path, name));
    const bool carry = needs.partfile == plan::PartfileNeed::carry_source;
    node::TreeColumnsRequest request{.tree = {.base = needs.save_path, .paths = {}}, .columns = k_type_and_size};
    request.tree.paths.reserve(needs.files.size());
    for (const auto& f : needs.files) request.tree.paths.push_back(f.at_source());
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, source.ops());
    node::Ops ops(*transport);
    auto tree = ops.tree_columns(request);
    if (!tree.ok()) return unreachable_path(tree.take_error());
    if (!tree->base_exists && !needs.files.empty())
        return Error(ErrorCode::NOT_FOUND,
                     fmt::format("the save path '{}' of '{}' on '{}' does not exist", needs.save_path, name, view.node),
                     "qBittorrent says its files are complete there: recheck the torrent, or set its location to where the files are");
    for (std::size_t i = 0; i < needs.files.size() && i < tree->entries.size(); ++i) {
        const JobFile& f = needs.files[i];
        const node::TreeEntry& e = tree->entries[i];
        if (e.type == node::EntryType::file && (!e.stat || e.stat->size == f.size)) continue;  // the common case: nothing to say
        std::string shown = fmt::format("{}/{}", strip_trailing_slashes(needs.save_path), f.at_source());
        if (e.type == node::EntryType::refused && e.error) return unreachable_path(*e.error);
        if (e.type == node::EntryType::absent)
            return Error(ErrorCode::NOT_FOUND, fmt::format("source file '{}' on '{}' does not exist", shown, view.node),
                         "qBittorrent says it is complete: recheck the torrent in qBittorrent");
        if (e.type == node::EntryType::symlink)
            return Error(ErrorCode::PATH_SYMLINK, fmt::format("refusing path '{}': it is a symlink", shown), k_symlink_fix);
        if (e.type != node::EntryType::file)
            return Error(ErrorCode::NOT_REGULAR, fmt::format("refusing path '{}': it is a {}, not a regular file", shown, node::to_string(e.type)));
        if (e.stat && e.stat->size != f.size)
            return Error(ErrorCode::SOURCE_CHANGED,
                         fmt::format("source file '{}' on '{}' is {} bytes, the metainfo says {}", shown, view.node, e.stat->size, f.size),
                         "recheck the torrent in qBittorrent");
    }
    if (carry) {
        ARCHCTL_TRY_ASSIGN(PartfileSourcing sourcing, source_partfile_plan(ops, view.node, view.qb_id, needs));
        if (needs.sourcing_out) *needs.sourcing_out = std::move(sourcing);
    }
    return {};
}

Status check_target_partfile(NodeHandle& target, const std::string& save_path, const std::string& qb_id, const SourceNeeds& needs) {
    if (needs.partfile != plan::PartfileNeed::target_own || !needs.model || needs.boundary_pieces.empty()) return {};
    const torrent::FileModel& model = *needs.model;
    std::map<std::uint32_t, const torrent::ModelFile*> by_index;
    for (const auto& f : model.files()) by_index[f.index] = &f;
    const std::string partfile = strip_trailing_slashes(save_path) + "/" + torrent::partfile_name(qb_id);
    auto others = neighbours(model, needs.union_set, needs.boundary_pieces);
    node::TreeRequest request{.base = save_path, .paths = {torrent::partfile_name(qb_id)}};
    for (auto f : others) request.paths.push_back(source_disk_path(needs, f));
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, target.ops());
    node::Ops ops(*transport);
    ARCHCTL_TRY_ASSIGN(auto tree, ops.tree(request));
    std::set<std::uint32_t> on_disk;
    for (std::size_t i = 0; i < others.size() && i + 1 < tree.entries.size(); ++i) {
        const auto& e = tree.entries[i + 1];
        if (e.type == node::EntryType::file && e.stat && e.stat->size == static_cast<std::uint64_t>(by_index.at(others[i])->size)) on_disk.insert(others[i]);
    }
    std::set<std::int64_t> have;
    if (!tree.entries.empty() && tree.entries[0].type == node::EntryType::file) {
        auto header = ops.partfile_read({partfile, node::qb_partfile_check(needs.piece_count, needs.piece_length)});
        if (!header.ok() && !partfile_verdict(header.error())) return header.take_error();
        if (!header.ok())
            return partfile_refused(fmt::format("the part file '{}' on '{}': {}", partfile, target.name(), header.error().message), others);
        for (const auto& s : header->slots) have.insert(s.piece);
    }
    std::vector<std::int64_t> missing;
    std::set<std::uint32_t> needed;
    for (auto piece : needs.boundary_pieces) {
        if (have.count(piece)) continue;
        bool from_disk = true;
        for (std::uint32_t f : model.files_in_piece(piece))
            if (!needs.union_set.contains(f) && !on_disk.count(f)) {
                from_disk = false;
                needed.insert(f);
            }
        if (!from_disk) missing.push_back(piece);
    }
    if (missing.empty()) return {};
    std::vector<std::uint32_t> files(needed.begin(), needed.end());
    return partfile_refused(fmt::format("boundary piece(s) {} need bytes of file(s) {} that '{}' has neither in its part file '{}' "
                                        "nor on its disk",
                                        fmt::join(missing, ", "), torrent::Selection::of(files).to_string(), target.name(), partfile),
                            files);
}

namespace {

// One tree read of the delta files' paths below the target save path.
Result<node::TreeResult> target_tree(NodeHandle& target, const std::string& save_path, const std::vector<JobFile>& files) {
    node::TreeColumnsRequest request{.tree = {.base = save_path, .paths = {}}, .columns = k_type_and_size};
    request.tree.paths.reserve(files.size());
    for (const auto& f : files) request.tree.paths.push_back(f.at_target());
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, target.ops());
    auto tree = node::Ops(*transport).tree_columns(request);
    if (!tree.ok()) return unreachable_path(tree.take_error());
    return std::move(tree).value();
}

Status target_paths_usable(const node::TreeResult& tree, NodeHandle& target, const std::string& save_path,
                           const std::vector<JobFile>& files) {
    for (std::size_t i = 0; i < files.size() && i < tree.entries.size(); ++i) {
        const node::TreeEntry& e = tree.entries[i];
        if (e.type == node::EntryType::absent || e.type == node::EntryType::file) continue;
        std::string shown = fmt::format("{}/{}", strip_trailing_slashes(save_path), files[i].at_target());
        if (e.type == node::EntryType::refused && e.error) return unreachable_path(*e.error);
        if (e.type == node::EntryType::symlink)
            return Error(ErrorCode::PATH_SYMLINK, fmt::format("refusing path '{}' on '{}': it is a symlink", shown, target.name()),
                         "archctl never follows symlinks below a node root; remove the symlink");
        return Error(ErrorCode::MERGE_CONFLICT,
                     fmt::format("the target path '{}' on '{}' is a {}, where the torrent has a file", shown, target.name(), node::to_string(e.type)),
                     "move it out of the way");
    }
    return {};
}

std::vector<JobFile> complete_files_in(const node::TreeResult& tree, const std::vector<JobFile>& files) {
    std::vector<JobFile> out;
    for (std::size_t i = 0; i < files.size() && i < tree.entries.size(); ++i) {
        const node::TreeEntry& e = tree.entries[i];
        if (e.type == node::EntryType::file && e.stat && e.stat->size == files[i].size) out.push_back(files[i]);
    }
    return out;
}

}  // namespace

Status check_target_paths(NodeHandle& target, const std::string& save_path, const std::vector<JobFile>& files) {
    ARCHCTL_TRY_ASSIGN(auto tree, target_tree(target, save_path, files));
    return target_paths_usable(tree, target, save_path, files);
}

Result<std::vector<JobFile>> preexisting_target_files(NodeHandle& target, const std::string& save_path,
                                                     const std::vector<JobFile>& files) {
    ARCHCTL_TRY_ASSIGN(auto tree, target_tree(target, save_path, files));
    return complete_files_in(tree, files);
}

Result<std::vector<JobFile>> checked_preexisting_target_files(NodeHandle& target, const std::string& save_path,
                                                             const std::vector<JobFile>& files) {
    ARCHCTL_TRY_ASSIGN(auto tree, target_tree(target, save_path, files));
    ARCHCTL_TRY_STATUS(target_paths_usable(tree, target, save_path, files));
    return complete_files_in(tree, files);
}

Status check_source(JobRun& run) {
    ARCHCTL_TRY_ASSIGN(NodeHandle * src, run.source());
    ARCHCTL_TRY_ASSIGN(auto view, evidence::read_placement(*src, resource_of(run.def)));
    if (!view) return stale(fmt::format("the source torrent on '{}' is gone: it", run.def.source), run);
    if (view->save_path != run.def.source_save_path)
        return stale(fmt::format("the source placement on '{}' (moved to '{}')", run.def.source, view->save_path), run);
    if (evidence::data_path(*view) != strip_trailing_slashes(run.def.source_files_path()))
        return stale(fmt::format("the source files on '{}' (moved from '{}' to '{}')", run.def.source, run.def.source_files_path(),
                                 evidence::data_path(*view)),
                     run);
    if (evidence::fingerprint(*view) != run.def.source_fingerprint)
        return stale(fmt::format("the source placement on '{}' (selection or completion)", run.def.source), run);
    return {};
}

Result<TargetOwner> live_target_owner(NodeHandle& dst, const JobDefinition& def, const Ledger& ledger) {
    ARCHCTL_TRY_ASSIGN(auto live, dst.qb().torrents({def.qb_id}));
    std::optional<std::vector<std::string>> tags;
    if (!live.empty()) tags = live[0].tags;
    return target_owner(ledger, def.id, tags);
}

Status check_target(JobRun& run) {
    ARCHCTL_TRY_ASSIGN(NodeHandle * dst, run.target());
    ARCHCTL_TRY_ASSIGN(auto view, evidence::read_placement(*dst, resource_of(run.def)));
    if (run.def.new_target) {
        if (!view) return {};
        // Once the add intent is durable the torrent there may be this job's own: its tag says.
        if (!run.ledger.target_added) return stale(fmt::format("the target '{}' (it now has the torrent)", run.def.target), run);
        ARCHCTL_TRY_ASSIGN(TargetOwner owner, live_target_owner(*dst, run.def, run.ledger));
        if (owner == TargetOwner::someone_else)
            return stale(fmt::format("the target '{}' (it now has the torrent, not added by this job)", run.def.target), run);
        return {};
    }
    // An existing target is compared with what the job was planned against until this job
    // itself starts changing it (stop, selection) in verify.
    if (run.ledger.target_touched) return {};
    if (!view) return stale(fmt::format("the target placement on '{}' is gone: it", run.def.target), run);
    if (evidence::fingerprint(*view) != run.def.target_fingerprint)
        return stale(fmt::format("the target placement on '{}'", run.def.target), run);
    return {};
}

namespace {

// The source as the stage step will read it (check_source_ready), from the job's definition.
Status check_source_files(JobRun& run) {
    ARCHCTL_TRY_ASSIGN(NodeHandle * src, run.source());
    ARCHCTL_TRY_ASSIGN(auto view, evidence::read_placement(*src, resource_of(run.def)));
    if (!view) return stale(fmt::format("the source torrent on '{}' is gone: it", run.def.source), run);
    SourceNeeds needs = needs_of(run.def, run.def.source_files_path());
    std::optional<torrent::Metainfo> meta;
    std::optional<torrent::FileModel> model;
    if (needs.partfile == plan::PartfileNeed::carry_source) {
        ARCHCTL_TRY_ASSIGN(meta, torrent::parse_metainfo(run.metainfo, run.def.name, torrent::k_layers_optional));
        model.emplace(*meta);
        needs.model = &*model;
        needs.piece_hashes = &meta->v1_pieces();
    }
    std::optional<torrent::PlacementLayout> layout;
    if (model) {
        layout = torrent::infer_layout(plan::metainfo_paths(*model), view->names);
        needs.layout = &*layout;
    }
    // The files the job moves or keeps must be where the metainfo says; another file renamed
    // since the plan does not change what this job reads or writes.
    return check_source_ready(*src, *view, needs, run.def.union_files, run.def.name);
}

// Why the job directory's copy of the metainfo cannot be used ("" when it can): it must parse
// and be the job's resource.
std::string metainfo_trouble(const JobRun& run) {
    if (run.metainfo.empty()) return "is missing";
    auto meta = torrent::parse_metainfo(run.metainfo, run.def.name, torrent::k_layers_optional);
    if (!meta.ok()) return fmt::format("is unreadable ({})", meta.error().message);
    if (!meta.value().identity().same_resource(run.def.identity)) return "is another torrent";
    return "";
}

}  // namespace

Status job_metainfo(JobRun& run) {
    if (run.metainfo_checked) return {};
    const std::string trouble = metainfo_trouble(run);
    if (!trouble.empty()) {
        const std::string path = run.env.store.dir_of(run.def.id) + "/" + k_job_metainfo;
        ARCHCTL_TRY_ASSIGN(NodeHandle * src, run.source());
        // A job created before the copy was kept says nothing; a damaged copy is worth a line.
        if (trouble != "is missing")
            run.log(fmt::format("archctl: warning: job {}: '{}' {}; {} the torrent from '{}' again", run.def.id, path, trouble,
                                src->config().qbittorrent.bt_backup.empty() ? "exporting" : "reading", run.def.source));
        ARCHCTL_TRY_ASSIGN(auto read, evidence::read_metainfo(*src, run.def.qb_id, run.def.identity, run.def.name,
                                                                   [&run](const std::string& line) { run.log(line); }));
        if (!read.meta.identity().same_resource(run.def.identity))
            return stale(fmt::format("the torrent read from '{}' (it is not resource '{}')", run.def.source, run.def.qb_id.substr(0, 12)),
                         run);
        ARCHCTL_TRY_STATUS(write_file_atomic(path, read.meta.bytes()));
        run.metainfo = std::string(read.meta.bytes());
    }
    run.metainfo_checked = true;
    return {};
}

// The route must be a one-way valve until merge has moved the payload out of the target's route
// folder (lib/routes/valve.hpp): until then the source's staged links are in the folder, and a
// versioner, a permission or ownership sync, or ignored deletes would carry the far side's
// actions to the source's inodes. Checked on both Syncthings before every step up to merge.
Status check_valve(JobRun& run) {
    for (const std::string* name : {&run.def.source, &run.def.target}) {
        ARCHCTL_TRY_ASSIGN(NodeHandle * node, run.env.nodes.get(*name));
        ARCHCTL_TRY_ASSIGN(auto folder, node->st().folder(run.def.route.id));
        if (!folder) continue;  // the sync step says a missing folder, with the cause
        auto problems = routes::valve_problems(*folder);
        if (!problems.empty()) return routes::valve_error(run.def.route.id, *name, problems);
    }
    return {};
}

StepResult step_preflight(JobRun& run) {
    if (run.ledger.committed) return StepResult::ok();  // a changed source no longer matters
    if (!run.ledger.merged) ARCHCTL_TRY_STATUS(check_valve(run));
    Status source = check_source(run);
    if (!source.ok()) return StepResult::failed(source.take_error());
    ARCHCTL_TRY_STATUS(job_metainfo(run));
    ARCHCTL_TRY_STATUS(check_target(run));
    // What plan checked before the job was created, checked again by the same functions before
    // the source is read and before the target is written.
    if (!run.ledger.staged) ARCHCTL_TRY_STATUS(check_source_files(run));
    if (!run.ledger.merged) {
        auto dst = run.target();
        if (!dst.ok()) return StepResult::failed(dst.take_error());
        ARCHCTL_TRY_STATUS(check_target_paths(*dst.value(), run.def.target_save_path, run.def.files));
        if (run.def.partfile == plan::PartfileNeed::target_own && !run.ledger.target_touched) {
            ARCHCTL_TRY_ASSIGN(auto meta, torrent::parse_metainfo(run.metainfo, run.def.name, torrent::k_layers_optional));
            torrent::FileModel model(meta);
            SourceNeeds needs = needs_of(run.def, run.def.target_save_path);
            needs.model = &model;
            // The target's files outside the union, where its own layout puts them.
            ARCHCTL_TRY_ASSIGN(auto target_view, evidence::read_placement(*dst.value(), resource_of(run.def)));
            std::optional<torrent::PlacementLayout> layout;
            if (target_view) {
                layout = torrent::infer_layout(plan::metainfo_paths(model), target_view->names);
                needs.layout = &*layout;
            }
            ARCHCTL_TRY_STATUS(check_target_partfile(*dst.value(), run.def.target_save_path, run.def.qb_id, needs));
        }
    }
    return StepResult::ok();
}

}  // namespace archctl::jobs::transfer
