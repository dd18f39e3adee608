#pragma once
// The job directory a stage builds inside a route folder (docs/design.md "Step 1: stage"), and its manifest.
//
//   <route folder>/<job-id>/
//     p/<shard>/<index>        payload, named by qB file index (never by torrent path), in
//                              directories of at most 1,000 files: <shard> is <index> / 1000
//                              (jobs created before the shards have p/<index>; PayloadLayout)
//     a/<name>                 auxiliary data: the exported .torrent, a built part file
//     manifest.json            every payload and auxiliary file: name, size, xxh3-128 where known
//     READY                    written last; its presence means the manifest is final
//     .archctl-stage.jsonl     the stage journal (append-only, one record per staged file)
//
// A stage rerun reads the journal and skips what its evidence proves is staged; once READY
// exists the stage is done for good (after merge the target moves files out and Syncthing
// deletes them on the source too: missing staged files are then expected, never restaged).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"

namespace archctl::node {

inline constexpr const char* k_payload_dir = "p";
inline constexpr const char* k_aux_dir = "a";
inline constexpr const char* k_manifest_name = "manifest.json";
inline constexpr const char* k_ready_name = "READY";
inline constexpr const char* k_stage_journal_name = ".archctl-stage.jsonl";
inline constexpr const char* k_stage_journal_kind = "archctl-stage";
inline constexpr int k_manifest_version = 1;
// The auxiliary files of an archctl job: the exported .torrent, and the part file a new v1 target
// needs, built on the source (docs/design.md "Partfiles and piece boundaries").
inline constexpr const char* k_torrent_aux = "resource.torrent";
inline constexpr const char* k_partfile_aux = "partfile";

// How a job's payload files lie below p/. Sharded: "p/<index / 1000>/<index>", so no directory
// holds more than 1,000 of them — Syncthing lists a received file's directory to check the case
// of its name, and a link or a rename scans its directory: with every file of a 100,000-file
// torrent in one directory both cost a listing of 100,000 entries per file (docs/staging.md
// "Many files"). Flat: "p/<index>", the layout of jobs created before the shards, which every
// operation still reads and finishes. A job records its layout in its definition; on the wire a
// request without one means flat.
enum class PayloadLayout { flat, sharded };
inline constexpr std::uint32_t k_shard_files = 1000;
[[nodiscard]] std::string_view to_string(PayloadLayout layout);
[[nodiscard]] std::optional<PayloadLayout> parse_payload_layout(std::string_view name);

// How a payload file got into the job directory.
enum class StageMethod { hardlink, reflink, copy };
[[nodiscard]] const char* method_name(StageMethod m);
[[nodiscard]] std::optional<StageMethod> parse_method(const std::string& name);

struct ManifestFile {
    std::uint32_t index = 0;
    std::string path;  // metainfo path below the save path
    std::uint64_t size = 0;
    std::string xxh3;  // empty when not computed (a link without verify_transit)
    StageMethod method = StageMethod::hardlink;
};

struct ManifestAux {
    std::string name;  // below a/
    std::uint64_t size = 0;
    std::string xxh3;
};

struct Manifest {
    std::string job;
    PayloadLayout layout = PayloadLayout::flat;  // "layout" when not flat
    std::vector<ManifestFile> files;  // by index
    std::vector<ManifestAux> aux;     // by name

    [[nodiscard]] nlohmann::json to_json() const;
    // to_json().dump(1) + "\n", written entry by entry: the document of a 100,000-file manifest
    // is tens of megabytes, its text a fraction of that.
    [[nodiscard]] std::string to_text() const;
    [[nodiscard]] static Result<Manifest> from_json(const nlohmann::json& j);
};

// The name of file `index`'s shard directory below p/: "<index / 1000>".
[[nodiscard]] std::string shard_name(std::uint32_t index);
// Its directory below the job directory: "p/<shard>" sharded, "p" flat.
[[nodiscard]] std::string payload_dir(std::uint32_t index, PayloadLayout layout);
// Its path below the job directory: "p/<shard>/<index>" sharded, "p/<index>" flat.
[[nodiscard]] std::string payload_name(std::uint32_t index, PayloadLayout layout);
// The temp name, beside the final one, that stage copies file `index` into before renaming it
// to its index: ".<index>.part". A stage cut off (a kill) may leave it; the next stage finishes
// or redoes it.
[[nodiscard]] std::string stage_temp_name(std::uint32_t index);
// "a/<name>".
[[nodiscard]] std::string aux_path(const std::string& name);
// The merge record of a job (lib/node/server/op_merge.cpp): "<root>/.archctl/merge-<job-id>.jsonl", under
// the node root that holds the save path, outside every Syncthing folder.
[[nodiscard]] std::string merge_record_path(const std::string& root, const std::string& job_id);
// The temp file merge copies file `index` of a job into, beside its destination.
[[nodiscard]] std::string merge_temp_name(const std::string& job_id, std::uint32_t index);
// Auxiliary names are one plain component: [A-Za-z0-9._-], not starting with '.'.
[[nodiscard]] Status check_aux_name(const std::string& name);

}  // namespace archctl::node
