#pragma once
// A job: one operation on one resource from one source node to one target node (docs/design.md "State on disk",
// "The job"). The definition is immutable (written once at creation); the ledger is the mutable record
// of what is durably true, replaced atomically at step boundaries. Every fact in the ledger can
// be re-derived from evidence (node journals, qBittorrent, Syncthing), so losing it is slow,
// never lossy.
//
// Steps, in order: stage → sync → merge → verify (the commit point) → cleanup. Each is
// idempotent: it checks evidence, does what remains and records.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/boxed.hpp"
#include "lib/base/result.hpp"
#include "lib/jobs/core/ledger.hpp"
#include "lib/node/wire/job_layout.hpp"
#include "lib/node/wire/ops_transfer.hpp"
#include "lib/plan/transfer_plan.hpp"
#include "lib/torrent/identity.hpp"
#include "lib/torrent/layout.hpp"
#include "lib/torrent/selection.hpp"

namespace archctl::jobs::transfer {

// A job holds two lists of these (the delta and the union), so a file takes 56 bytes and its
// path: the paths on disk, which differ from the metainfo path only under another content layout
// or a rename in qBittorrent, are boxed.
struct JobFile {
    JobFile() = default;
    JobFile(std::uint32_t index_, std::string path_, std::uint64_t size_, std::string source_disk = {}, std::string target_disk = {})
        : index(index_), path(std::move(path_)), size(size_) {
        if (!source_disk.empty() || !target_disk.empty()) m_disk = DiskPaths{std::move(source_disk), std::move(target_disk)};
    }

    std::uint32_t index = 0;
    std::string path;      // metainfo path below the save path (root folder first): messages, identity
    std::uint64_t size = 0;

    // Its path below each save path on disk (torrent/layout.hpp); "" when it is the metainfo path.
    const std::string& source_disk() const { return m_disk ? m_disk->source : k_none; }
    const std::string& target_disk() const { return m_disk ? m_disk->target : k_none; }
    const std::string& at_source() const { return source_disk().empty() ? path : source_disk(); }
    const std::string& at_target() const { return target_disk().empty() ? path : target_disk(); }

private:
    struct DiskPaths {
        std::string source, target;
    };
    static inline const std::string k_none;
    Boxed<DiskPaths> m_disk;
};

struct RouteRef {
    std::string id;
    std::string source_path;  // the route folder on the source node
    std::string target_path;  // the route folder on the target node
};

struct JobDefinition {
    std::string id;
    plan::Operation op = plan::Operation::archive;
    std::string created_at;
    torrent::Identity identity;
    std::string name;
    std::string qb_id;
    std::vector<std::string> aliases;
    std::string source, target;              // node names
    std::string source_save_path, target_save_path;
    // Where the source's files are read: qBittorrent's incomplete-downloads folder
    // (download_path) while the torrent's content is there, else source_save_path.
    std::string source_data_path;
    // source_data_path, or the save path when the definition has none.
    const std::string& source_files_path() const { return source_data_path.empty() ? source_save_path : source_data_path; }
    bool new_target = true;
    // The content layout a new target is added with (the source's; files' target_disk follow it).
    torrent::ContentLayout target_layout = torrent::ContentLayout::original;
    std::string source_fingerprint;
    std::string target_fingerprint;          // empty for a new target
    RouteRef route;
    torrent::Selection requested, baseline, delta, union_set;
    std::int64_t delta_bytes = 0;
    std::vector<JobFile> files;              // the delta, by index
    std::vector<JobFile> union_files;        // every file of the target union
    std::size_t file_count = 0;              // files in the torrent
    plan::PartfileNeed partfile = plan::PartfileNeed::none;
    std::vector<std::int64_t> boundary_pieces;  // pieces of the union that need skipped files' bytes
    std::int64_t piece_count = 0, piece_length = 0;
    bool verify_transit = false;
    // How its payload lies below the staging directory's p/ (node/wire/job_layout.hpp): sharded
    // for every job created now; a definition without it was staged flat.
    node::PayloadLayout payload_layout = node::PayloadLayout::flat;
    std::string request_digest;              // same command, same resource → same digest
    std::string plan_digest;

    nlohmann::json to_json() const;
    static Result<JobDefinition> from_json(const nlohmann::json& j);
    std::string summary() const;             // "archive 1838bf9a70c1 seedbox → nas"
};

// True for an archive/unarchive definition. Other job kinds (evict) keep their definitions in
// the same jobs directory; every reader here skips them.
[[nodiscard]] bool is_transfer_definition(const nlohmann::json& j);

// A transfer's steps, in order (docs/design.md "The job").
enum class TransferStep : std::uint8_t { stage, sync, merge, verify, cleanup, done };
inline constexpr StepNames<TransferStep, 6> k_transfer_steps{{"stage", "sync", "merge", "verify", "cleanup", "done"}};
[[nodiscard]] inline std::string_view to_string(TransferStep s) { return k_transfer_steps(s); }

// The transfer's ledger: the shared part (core/ledger.hpp; its sessions count the bytes they
// moved), its next step, and what the steps stage … cleanup record.
struct Ledger : LedgerCore {
    Ledger() : LedgerCore(SessionBytes::recorded) {}

    TransferStep step = TransferStep::stage;

    bool staged = false;
    bool synced = false;
    bool merged = false;
    bool target_added = false;        // intent: this job adds (or added) the torrent to a new target
    std::string target_tag;           // the tag this job's add set on it (job_tag(id)); empty: added without one
    bool baseline_recorded = false;
    // Existing target, before this job touched it: qb_id, run_state, started, selected,
    // priorities, files [{index,size,progress}], content (digest of those and the files on
    // disk), save_path, category, tags, auto_tmm, partfile {present, size, xxh3, copy}.
    nlohmann::json target_baseline;
    bool target_touched = false;      // intent: verify is about to stop/select the existing target
    bool committed = false;
    std::uint64_t generation = 0;
    bool started_target = false;
    bool cleaned = false;
    std::uint64_t bytes_present = 0;  // job bytes seen on the target so far
    // What merge did with each delta file (the target node's own record keeps it too). Typed: at
    // 100,000 files the JSON objects would take ~60 MB for the rest of the run.
    std::vector<node::MergedFile> merge_provenance;
    JobState compensation_ends = JobState::failed;  // compensating: the state once it finishes
    // Set while the target cannot take the job (stored only then); kept after a release says why.
    std::optional<TargetBlocked> target_blocked;
    // `step`: stage|sync|merge|verify|cleanup|done. `failure`: {code, message, step} when failed
    // (and `compensation` while compensating). `kept`: files compensation or cleanup left in
    // place and why: [{node, path, reason, code, step}] (code: the keep rule's, or
    // "preexisting"; step: "unmerge" or "cleanup").

    nlohmann::json to_json() const;
    // CORRUPT when its step is none of k_transfer_steps.
    static Result<Ledger> from_json(const nlohmann::json& j);
};

// The tag a job's torrents/add sets on a new target, so the torrent carries from its first
// moment the proof of who added it. Removed again at the commit.
[[nodiscard]] std::string job_tag(const std::string& job_id);

// Who put the torrent with the job's qB id on a new target, decided from live evidence.
enum class TargetOwner {
    absent,        // no such torrent
    this_job,      // it carries this job's tag (or: the job added it before jobs tagged, and says so)
    someone_else,  // the user, or another archctl (another state directory): never removed
};
// `live_tags`: the torrent's tags as qBittorrent lists them now, nullopt when it is not there.
[[nodiscard]] TargetOwner target_owner(const Ledger& ledger, const std::string& job_id,
                                       const std::optional<std::vector<std::string>>& live_tags);

}  // namespace archctl::jobs::transfer
