// What people see of an eviction: the plan (coverage table), the refusal, progress rows and the
// event lines of `job show`.

#include <map>

#include <fmt/format.h>

#include "lib/base/json_member.hpp"
#include "lib/base/lock_file.hpp"
#include "lib/base/text.hpp"
#include "lib/base/units.hpp"
#include "lib/state/job_store.hpp"
#include "lib/jobs/evict/evictor.hpp"
#include "lib/ui/table.hpp"

namespace archctl::jobs::evict {
namespace {

// "38 files: 31 on nas, 7 on nas2" (counts of files, never their indices)
std::string covered_line(const plan::Coverage& c) {
    std::map<std::string, std::size_t> per_node;
    std::size_t covered = 0;
    for (const auto& f : c.files) {
        if (f.nodes.empty()) continue;
        ++covered;
        for (const auto& n : f.nodes) ++per_node[n];
    }
    std::vector<std::string> parts;
    for (const auto& [node, n] : per_node) parts.push_back(fmt::format("{} on {}", n, node));
    if (parts.empty()) return "no file has an archive copy";
    return fmt::format("{} file{}: {}", covered, covered == 1 ? "" : "s", fmt::join(parts, ", "));
}

// One line per missing file, with why each archive copy of it does not count.
std::string missing_lines(const plan::Coverage& c) {
    ui::Table t({ui::Align::left, ui::Align::left, ui::Align::right, ui::Align::left, ui::Align::right, ui::Align::left}, "  ");
    for (const auto& f : c.files) {
        if (!f.nodes.empty()) continue;
        std::string why = f.refused.empty() ? "no archive placement has it" : fmt::format("{}", fmt::join(f.refused, "; "));
        t.add_row({"missing", "idx", std::to_string(f.file.index), f.file.path, format_size(f.file.size), why});
    }
    return t.render();
}

std::string proofs_text(const nlohmann::json& proofs) {
    std::vector<std::string> parts;
    for (const auto& p : proofs) {
        std::string files = p.contains("files") && p["files"].is_object() ? p["files"].value("ranges", "") : p.value("files", "");
        std::string how = p.value("trust", "") == "verify_pieces" ? "piece check before deleting"
                                                                   : fmt::format("generation {}", p.value("generation", 0));
        parts.push_back(fmt::format("{} holds {} ({})", p.value("node", ""), file_indices(files), how));
    }
    return fmt::format("{}", fmt::join(parts, "; "));
}

std::string kept_text(const nlohmann::json& kept) {
    std::vector<std::string> parts;
    for (const auto& k : kept) parts.push_back(fmt::format("{} ({})", k.value("path", ""), k.value("reason", "")));
    return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace

std::string render_plan(const EvictPrepared& p) {
    const plan::Coverage& c = p.coverage;
    std::string kind(torrent::kind_name(p.resource.identity.kind()));
    std::string out = fmt::format("evict  {}  \"{}\"   {}\n", p.resource.short_id(), p.resource.name, kind);
    out += fmt::format("  from   {}  {}   {}, {} files selected ({})\n", p.cache, p.cache_view.save_path, p.cache_view.run_state,
                       c.required.count(), format_size(c.required_bytes));
    out += fmt::format("  owned  {} files on disk are unlinked unless another torrent references them\n\n", p.owned.size());
    ui::Table t({ui::Align::right, ui::Align::left, ui::Align::right, ui::Align::left}, "  ");
    t.add_row({"idx", "file", "size", "archive copies"});
    for (const auto& f : c.files)
        t.add_row({std::to_string(f.file.index), f.file.path, format_size(f.file.size),
                   f.nodes.empty() ? "MISSING" : fmt::format("{}", fmt::join(f.nodes, ", "))});
    out += t.render() + "\n\n";
    out += fmt::format("  covered  {}", covered_line(c));
    for (const auto& pr : c.proofs) {
        std::size_t pieces = pr.piece_files().count();
        out += fmt::format("\n  proof    {}: {} files, {}", pr.node, pr.files.count(),
                           pr.trust == plan::Trust::verify_pieces
                               ? "qBittorrent 100%, regular files of the exact size; piece check on its disk before deleting"
                           : pieces == 0
                               ? fmt::format("qBittorrent 100%, the same files archctl's recheck verified (generation {}), "
                                             "checked again before every deletion",
                                             pr.generation)
                               : fmt::format("qBittorrent 100%; {} the same files archctl's recheck verified (generation {}), "
                                             "{} proven by a piece check of just those files on its disk before deleting",
                                             pr.files.count() - pieces, pr.generation, pieces));
    }
    for (const auto& n : c.notes) out += fmt::format("\n  note     {}", n);
    return out;
}

Error incomplete_error(const EvictPrepared& p) {
    const plan::Coverage& c = p.coverage;
    std::string msg = fmt::format("cannot evict '{}' from {}: {} of {} files have no archive copy\n{}\n  covered  {}", p.resource.short_id(),
                                  p.cache, c.missing.size(), c.required.count(), missing_lines(c), covered_line(c));
    for (const auto& n : c.notes) msg += fmt::format("\n  note     {}", n);
    std::vector<std::uint32_t> idx;
    for (const auto& m : c.missing) idx.push_back(m.index);
    // The archive node to extend: the only one, else the one already holding most of it.
    std::string to = p.archive_nodes.size() == 1 ? p.archive_nodes[0] : "ARCHIVE";
    std::uint64_t most = 0;
    if (p.archive_nodes.size() != 1)
        for (const auto& pr : c.proofs)
            if (pr.files.count() > most) {
                most = pr.files.count();
                to = pr.node;
            }
    // Files an archive holds but archctl's stamps cannot vouch for count already (evict checks
    // their pieces): what is missing needs another archive copy.
    std::vector<std::uint32_t> to_archive;
    for (const auto& f : c.files)
        if (f.nodes.empty()) to_archive.push_back(f.file.index);
    std::string hint = fmt::format("archctl archive {} --from {} --to {} --files {}", p.resource.short_id(), p.cache, to,
                                   torrent::Selection::of(to_archive).to_string());
    return Error(ErrorCode::NOT_COVERED, msg, hint);
}

std::string evict_progress_text(const nlohmann::json& definition, const nlohmann::json& ledger_json) {
    auto parsed = EvictLedger::from_json(ledger_json);
    const EvictLedger l = parsed.ok() ? std::move(parsed).value() : EvictLedger{};
    std::uint64_t files = member_or_empty(definition, "files").size();
    switch (l.state) {
        case jobs::JobState::done:
            return fmt::format("done: {} files ({}) freed", l.files_removed, format_size(l.bytes_freed));
        case jobs::JobState::cancelled: return "cancelled: nothing was deleted";
        case jobs::JobState::failed:
        case jobs::JobState::cleanup_required: {
            std::string msg = l.failure.is_object() ? l.failure.value("message", "") : "";
            std::string state = l.state == jobs::JobState::cleanup_required ? "CLEANUP_REQUIRED" : "failed";
            return state + (msg.empty() ? "" : ": " + msg);
        }
        case jobs::JobState::running:
        case jobs::JobState::compensating: break;  // eviction never compensates later
    }
    if (l.step == EvictStep::hold || l.step == EvictStep::remove) return "evicting: proofs held, the cache torrent is not removed yet";
    if (l.step == EvictStep::unlink) return fmt::format("evicting: cache torrent removed, {} files to unlink", files);
    return fmt::format("evicting: {} files ({}) freed, finishing ({})", l.files_removed, format_size(l.bytes_freed), to_string(l.step));
}

std::string describe_event(const nlohmann::json& e) {
    std::string type = e.value("type", "");
    if (type == "created")
        return fmt::format("proved: {} ({}) covered; {}; cache fingerprint {}, generation {}",
                           file_indices(e.value("required", "")), format_size(e.value("required_bytes", std::uint64_t{0})),
                           proofs_text(e.value("proofs", nlohmann::json::array())), e.value("cache_fingerprint", ""),
                           e.value("cache_generation", 0));
    if (type == "held") {
        std::vector<std::string> nodes;
        for (const auto& t : e.value("torrents", nlohmann::json::array())) nodes.push_back(t.value("node", ""));
        return fmt::format("tag {} on the archive torrents on {}", e.value("tag", ""), fmt::join(nodes, ", "));
    }
    if (type == "revalidated") {
        std::vector<std::string> parts;
        for (const auto& p : e.value("proofs", nlohmann::json::array()))
            parts.push_back(fmt::format("{} still holds {} ({}, qBittorrent {}, same files on disk){}", p.value("node", ""),
                                        file_indices(p.value("files", "")), fmt::format("generation {}", p.value("generation", 0)),
                                        p.value("state", "?"), p.contains("pieces") ? ", pieces verified" : ""));
        std::vector<std::string> checked;
        const nlohmann::json pieces_checked = e.value("pieces_checked", nlohmann::json::object());
        for (const auto& [node, files] : pieces_checked.items())
            checked.push_back(fmt::format("{} on {}", files.is_string() ? file_indices(files.get<std::string>()) : "files " + files.dump(), node));
        std::string pieces = checked.empty() ? "" : fmt::format("; piece-checked {}", fmt::join(checked, ", "));
        return fmt::format("revalidated live right before deleting: {}{}", fmt::join(parts, "; "), pieces);
    }
    if (type == "removed")
        return fmt::format("{} torrent {} from qBittorrent on {}, data deletion disabled",
                           e.value("already_absent", false) ? "already gone:" : "removed", e.value("qb_id", ""), e.value("node", ""));
    if (type == "snapshot") {
        const auto& ours = member_or_empty(e, "owned_referenced");
        std::string which = ours.empty() ? "none of this torrent's files" : fmt::format("{} of this torrent's files (kept)", ours.size());
        return fmt::format("{} other torrents reference {} paths on this node; {}", e.value("torrents", 0), e.value("referenced_paths", 0),
                           which);
    }
    if (type == "unlinked") {
        std::string out = fmt::format("unlinked {} files, removed {} directories", member_or_empty(e, "files").size(),
                                      member_or_empty(e, "dirs").size());
        auto kept = e.value("kept", nlohmann::json::array());
        if (!kept.empty()) out += "; kept " + kept_text(kept);
        return out;
    }
    if (type == "partfile") return fmt::format("part file {}: {}", e.value("path", ""), e.value("outcome", ""));
    if (type == "released") return fmt::format("tag {} removed from the archive torrents", e.value("tag", ""));
    if (type == "failed")
        return fmt::format("{}: {} ({})", e.value("code", ""), e.value("message", ""),
                           !e.value("removed", false) ? "nothing was deleted"
                           : e.value("files_removed", 0) == 0
                               ? "the cache torrent was removed; no file was unlinked"
                               : fmt::format("the cache torrent was removed; gone from the cache's disk: {}; the rest kept",
                                             fmt::join(e.value("gone", std::vector<std::string>{}), ", ")));
    if (type == "done")
        return fmt::format("{} files ({}) and {} directories removed", e.value("files_removed", 0),
                           format_size(e.value("bytes_freed", std::uint64_t{0})), e.value("dirs_removed", 0));
    if (type == "stopped") return fmt::format("stopped at {}: {}", e.value("step", ""), e.value("reason", ""));
    return "";
}

jobs::JobSummary summarize_evict(const state::JobStore& store, const std::string& id, nlohmann::json definition) {
    jobs::JobSummary row;
    row.id = id;
    row.definition = std::move(definition);
    auto l = store.ledger(id);
    row.stored_ledger = l.ok() ? l.value() : nlohmann::json::object();
    row.ledger.state = jobs::parse_job_state(row.stored_ledger.value("state", "running"));
    row.ledger.step = row.stored_ledger.value("step", "hold");
    row.ledger.failure = row.stored_ledger.value("failure", nlohmann::json());
    row.nodes = row.definition.value("source", nlohmann::json::object()).value("node", "");
    auto lock = LockFile::read(store.dir_of(id));
    row.running = lock.ok() && lock_holder_alive(lock.value());
    row.status = evict_progress_text(row.definition, row.stored_ledger);
    row.needs_attention = row.ledger.state == jobs::JobState::cleanup_required;
    return row;
}

}  // namespace archctl::jobs::evict
