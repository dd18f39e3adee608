#pragma once
// What one stage request works with, shared by its two halves: lib/node/server/op_stage.cpp (the
// request, the job directory, the journal, the manifest) and lib/node/server/stage_file.cpp (one
// file: link, reflink or copy, and its journal record). Internal to the node's stage operation.

#include <sys/stat.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/base/fs.hpp"
#include "lib/base/journal.hpp"
#include "lib/base/result.hpp"
#include "lib/node/server/file_ops.hpp"
#include "lib/node/server/operation.hpp"
#include "lib/node/server/payload_dirs.hpp"
#include "lib/node/server/root_set.hpp"
#include "lib/node/wire/job_layout.hpp"
#include "lib/node/wire/ops_transfer.hpp"

namespace archctl::node::stage_run {

using nlohmann::json;


// Link records are written and synced in large batches (and before the manifest): a link whose
// record was lost is adopted again from its inode without reading a byte. Copies sync their
// record at once.
constexpr unsigned k_link_record_batch = 16384;
// Progress of small files is offered every this many files (OpContext throttles it further).
constexpr std::uint64_t k_progress_every_files = 256;


struct SourceFile {
    std::uint32_t index = 0;
    std::string path;
    std::vector<std::string> components;
    std::uint64_t size = 0;
};

struct AuxSpec {
    std::string name;
    std::optional<std::string> data;  // decoded; nullopt = already present in a/
};

struct StageArgs {
    std::string job_dir;
    std::string source_base;
    std::vector<SourceFile> files;
    MethodChoice method = MethodChoice::automatic;
    bool verify_transit = false;
    std::uint64_t budget_bytes = 0;  // copied bytes allowed in this request; 0 = no limit
    std::vector<AuxSpec> aux;
    std::uint64_t min_free = 0;      // free-space floor of the job directory; 0 = none
    PayloadLayout layout = PayloadLayout::flat;
};

struct Counters {
    std::uint64_t files_linked = 0, files_reflinked = 0, files_copied = 0, files_reused = 0;
    std::uint64_t bytes_linked = 0, bytes_reflinked = 0, bytes_copied = 0, bytes_hashed = 0;
    std::uint64_t bytes_done = 0, files_done = 0;
};

// Everything one stage run works with.
struct Stager {
    OpContext& ctx;
    const StageArgs& args;
    DirCache sources;
    UniqueFd job;
    PayloadDirs payload;
    int dir = -1;  // the payload directory of the file being staged (stage_one sets it)
    std::string job_display;
    std::map<std::uint32_t, json> journaled;  // latest record per index
    std::optional<JournalWriter> journal;
    Counters counters;
    std::vector<ManifestFile> staged;  // in staging order; sorted by index for the manifest
    bool link_fails_across = false;  // EXDEV seen once: skip further link attempts in auto mode
    std::uint64_t bytes_total = 0;
    std::vector<struct stat> source_stats;  // by position in args.files, from the preflight
    std::uint64_t floor_free = 0, floor_need = 0;  // what a "disk" stop saw

    std::string staged_display(std::uint32_t index) const { return payload.display(index); }
    std::string source_display(const SourceFile& f) const { return fmt::format("{}/{}", args.source_base, f.path); }

    void report(const std::string& current, std::uint64_t in_flight = 0) {
        Progress p;
        p.bytes = counters.bytes_done + in_flight;
        p.bytes_copied = counters.bytes_copied;
        p.files = counters.files_done;
        p.files_total = args.files.size();
        p.bytes_total = bytes_total;
        p.current = current;
        ctx.progress(p);
    }
};

// One source file: its preflight stat, opened only when its bytes are needed (a hard link
// without verify_transit never opens it).
struct Source {
    const Stager& stager;
    const SourceFile& file;
    int dir = -1;
    struct stat st {};
    UniqueFd fd;

    std::string display() const { return stager.source_display(file); }

    Result<int> open() {
        if (fd.valid()) return fd.get();
        struct stat now {};
        ARCHCTL_TRY_ASSIGN(fd, open_regular(dir, file.components.back(), display(), &now));
        if (now.st_ino != st.st_ino || now.st_dev != st.st_dev || now.st_size != st.st_size)
            return Error(ErrorCode::SOURCE_CHANGED, fmt::format("cannot stage '{}': the file changed while it was staged", display()));
        return fd.get();
    }
};

// Stats every source file once, before anything is staged (s.source_stats, s.bytes_total): a
// missing or irregular source fails the request before the job directory changes.
[[nodiscard]] Status preflight_sources(Stager& s);
// Stages one file (lib/node/server/stage_file.cpp): the stop that ended it, Stop::none when done.
[[nodiscard]] Result<Stop> stage_one(Stager& s, const SourceFile& f, const struct stat& preflight);

}  // namespace archctl::node::stage_run
