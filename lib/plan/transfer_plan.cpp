#include "lib/plan/transfer_plan.hpp"


#include <fmt/format.h>

#include "lib/base/fs.hpp"
#include "lib/base/hash.hpp"
#include "lib/base/units.hpp"
#include "lib/torrent/sha.hpp"

namespace archctl::plan {
namespace {

using torrent::sha256_hex;

const torrent::ModelFile* find_path(const torrent::FileModel& model, const std::string& path) {
    for (const auto& f : model.files())
        if (f.path == path) return &f;
    return nullptr;
}

// Expand --file/--dir/--files against the source's selected-complete files.
Result<torrent::Selection> expand_request(const PlanInput& in, const torrent::FileModel& model) {
    const torrent::Selection& available = in.source.complete;
    const Request& r = in.request;
    bool explicit_request = r.files || !r.file_paths.empty() || !r.dir_paths.empty();
    if (!explicit_request) return available;
    std::vector<std::uint32_t> wanted;
    torrent::Selection result;
    if (r.files) {
        ARCHCTL_TRY_STATUS(r.files->check_within(model.file_count()));
        result = *r.files;
    }
    for (const auto& p : r.file_paths) {
        const torrent::ModelFile* f = find_path(model, p);
        if (!f) return Error(ErrorCode::NOT_IN_TORRENT, fmt::format("no file '{}' in torrent '{}'", p, in.meta->name()),
                             "paths start with the torrent's root folder; see 'archctl torrent show'");
        wanted.push_back(f->index);
    }
    for (std::string d : r.dir_paths) {
        d = strip_trailing_slashes(d);
        size_t before = wanted.size();
        for (const auto& f : model.files())
            if (f.path.rfind(d + "/", 0) == 0 && available.contains(f.index)) wanted.push_back(f.index);
        if (wanted.size() == before)
            return Error(ErrorCode::NOT_IN_TORRENT, fmt::format("no selected, complete file below '{}' in torrent '{}'", d, in.meta->name()));
    }
    result = result.union_with(torrent::Selection::of(wanted));
    torrent::Selection missing = result.difference(available);
    if (!missing.empty())
        return Error(ErrorCode::SOURCE_INCOMPLETE,
                     fmt::format("cannot {} files {} of '{}': not selected and complete on {}", to_string(r.op),
                                 missing.to_string(), in.meta->name(), in.source.node),
                     "only files the source holds at 100% can be moved; archctl never downloads");
    return result;
}

PartfileNeed partfile_need(const PlanInput& in, const torrent::FileModel& model, const torrent::Selection& union_set,
                           std::vector<std::int64_t>& pieces) {
    if (in.meta->has_v2()) return PartfileNeed::none;  // v2 and hybrid are piece-aligned
    pieces = model.boundary_pieces(union_set);
    if (pieces.empty()) return PartfileNeed::none;
    return in.target ? PartfileNeed::target_own : PartfileNeed::carry_source;
}

nlohmann::json digest_facts(const PlanInput& in, const Plan& p) {
    auto view = [](const PlacementView& v) {
        return nlohmann::json{{"node", v.node}, {"qb_id", v.qb_id}, {"save_path", v.save_path},
                              {"selected", v.selected.to_string()}, {"complete", v.complete.to_string()}};
    };
    return {{"op", to_string(p.op)}, {"resource", in.meta->identity().to_json()}, {"source", view(in.source)},
            {"target", in.target ? view(*in.target) : nlohmann::json(nullptr)}, {"target_save_path", p.target_save_path},
            {"requested", p.requested.to_string()}, {"delta", p.delta.to_string()},
            {"layout", {torrent::to_string(p.source_layout.layout), p.source_layout.folder, torrent::to_string(p.target_layout.layout),
                        p.target_layout.folder}}};
}

const char* partfile_name(PartfileNeed n) {
    switch (n) {
        case PartfileNeed::none: return "none";
        case PartfileNeed::carry_source: return "carry_source";
        case PartfileNeed::target_own: return "target_own";
    }
    return "none";
}

}  // namespace

std::vector<std::string> metainfo_paths(const torrent::FileModel& model) {
    std::vector<std::string> out(model.file_count());
    for (const auto& f : model.files())
        if (f.index < out.size()) out[f.index] = f.path;
    return out;
}

Status check_names(const PlacementView& view, const torrent::PlacementLayout& layout, const torrent::FileModel& model,
                   const torrent::Selection& files, const std::string& name) {
    if (view.names.empty()) return {};
    for (const auto& f : model.files())
        if (files.contains(f.index) && layout.renamed(f.index)) return renamed_in_qb(view, f.index, f.path, name, layout.expected_path(f.index));
    return {};
}

Error renamed_in_qb(const PlacementView& view, std::uint32_t index, const std::string& path, const std::string& name,
                    const std::string& expected) {
    std::string qb_name = index < view.names.size() ? view.names[index] : std::string();
    std::string where = expected.empty() || expected == path ? std::string()
                                                             : fmt::format(" (its content layout puts it at '{}')", expected);
    return Error(ErrorCode::RENAMED_IN_QB,
                 fmt::format("file {} of '{}' on {} is '{}' in qBittorrent but '{}' in the metainfo{}", index, name, view.node, qb_name,
                             path, where),
                 fmt::format("undo the rename in qBittorrent (Content tab: rename it back to '{}'), or leave file {} out of --files",
                             expected.empty() ? path : expected, index));
}

std::string to_string(Operation op) { return op == Operation::archive ? "archive" : "unarchive"; }

Result<std::string> rebase_save_path(const std::string& source_save_path, const std::string& source_root,
                                     const std::string& target_root) {
    std::string save = strip_trailing_slashes(source_save_path), root = strip_trailing_slashes(source_root);
    std::string rel;
    if (save == root) rel = "";
    else if (save.rfind(root + "/", 0) == 0) rel = save.substr(root.size());
    else
        return Error(ErrorCode::PATH_OUTSIDE_ROOT,
                     fmt::format("save path '{}' is outside the node's qb_root '{}'", source_save_path, source_root),
                     "move the torrent below qb_root in qBittorrent, or set qb_root to a directory that holds it");
    return strip_trailing_slashes(target_root) + rel;
}

nlohmann::json Plan::to_json() const {
    auto row = [](const torrent::Selection& s, std::int64_t bytes) {
        return nlohmann::json{{"files", s.to_string()}, {"count", s.count()}, {"bytes", bytes}};
    };
    nlohmann::json pieces = boundary_pieces;
    return {{"operation", to_string(op)}, {"target_save_path", target_save_path}, {"extends_existing", extends_existing},
            {"requested", row(requested, requested_bytes)}, {"on_target", row(baseline, baseline_bytes)},
            {"delta", row(delta, delta_bytes)}, {"union", row(union_set, union_bytes)}, {"copy_bytes", copy_bytes},
            {"disk_ok", disk_ok},
            {"layout", {{"source", torrent::to_string(source_layout.layout)}, {"target", torrent::to_string(target_layout.layout)}}},
            {"partfile", {{"need", partfile_name(partfile)}, {"boundary_pieces", pieces}}},
            {"digest", digest}};
}

Result<Plan> compute(const PlanInput& in) {
    torrent::FileModel model(*in.meta);
    Plan p;
    p.op = in.request.op;
    const std::vector<std::string> paths = metainfo_paths(model);
    p.source_layout = torrent::infer_layout(paths, in.source.names);
    if (in.target) {
        p.target_layout = torrent::infer_layout(paths, in.target->names);
        p.target_save_path = strip_trailing_slashes(in.target->save_path);
        p.extends_existing = true;
        torrent::Selection stale = in.target->selected.difference(in.target->complete);
        if (!stale.empty())
            return Error(ErrorCode::TARGET_INCOMPLETE,
                         fmt::format("target placement of '{}' on {} has selected files that are not complete: {}",
                                     in.meta->name(), in.target->node, stale.to_string()),
                         "this is stale external state; archctl never downloads or deselects — fix it in qBittorrent");
        p.baseline = in.target->complete;
    } else {
        ARCHCTL_TRY_ASSIGN(p.target_save_path, rebase_save_path(in.source.save_path, in.source_qb_root, in.target_qb_root));
        // A new target is added with the source's layout, so each file lands where it is now.
        p.target_layout = torrent::apply_layout(paths, p.source_layout.layout, p.source_layout.folder);
    }
    ARCHCTL_TRY_ASSIGN(p.requested, expand_request(in, model));
    p.delta = p.requested.difference(p.baseline);
    p.union_set = p.baseline.union_with(p.delta);
    // Only a rename among the files this command reads or keeps stops it.
    ARCHCTL_TRY_STATUS(check_names(in.source, p.source_layout, model, p.union_set, in.meta->name()));
    if (in.target) ARCHCTL_TRY_STATUS(check_names(*in.target, p.target_layout, model, p.union_set, in.meta->name()));
    p.requested_bytes = p.requested.bytes(model);
    p.baseline_bytes = p.baseline.bytes(model);
    p.delta_bytes = p.delta.bytes(model);
    p.union_bytes = p.union_set.bytes(model);
    // Payload bytes charged against free space: only what cannot be linked or renamed.
    std::uint64_t delta = static_cast<std::uint64_t>(p.delta_bytes);
    p.copy_bytes = (in.caps.source_can_link ? 0 : delta) + (in.caps.target_same_fs ? 0 : delta);
    // The target receives the delta through Syncthing: new bytes on its disk.
    std::uint64_t needed = delta + (in.caps.target_same_fs ? 0 : delta);
    p.disk_ok = in.caps.target_free >= needed + in.caps.min_free;
    p.partfile = partfile_need(in, model, p.union_set, p.boundary_pieces);
    p.digest = sha256_hex(digest_facts(in, p).dump());
    return p;
}

}  // namespace archctl::plan
