// receive_check (target node): how much of a job has arrived (docs/design.md "Step 2: sync").
//
// Per expected entry (the request's payload files, and the manifest's auxiliary files once the
// manifest is there): absent; in_transit (a Syncthing temp file for it exists, its size is not
// yet the expected one, or the caller's index evidence does not list it yet); present (exact size
// at its final name, indexed); verified / mismatch (xxh3-128 against the manifest, only with
// verify_transit). By default no payload byte is read. With verify_transit each file is hashed
// once: the verdict is cached by (dev, inode, size, mtime) for the life of the node process.
// Syncthing temp files and conflict copies are never payload; they are listed as ignored.

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "lib/base/hash.hpp"
#include "lib/node/server/file_ops.hpp"
#include "lib/node/server/operation.hpp"
#include "lib/node/wire/job_layout.hpp"
#include "lib/node/wire/ops_transfer.hpp"

namespace archctl::node {
namespace {

using nlohmann::json;

struct Expected {
    std::string name;  // relative to the job directory: "p/0/3", "a/source.torrent", "manifest.json"
    std::optional<std::uint64_t> size;
    std::string xxh3;  // from the manifest, when known
    std::optional<std::uint32_t> index;
};

struct Checker {
    OpContext& ctx;
    std::string job_display;
    std::optional<std::set<std::string>> indexed;  // nullopt: the caller gave no index evidence
    bool indexed_all = false;                       // the caller's evidence holds every name
    bool verify = false;
    std::uint64_t bytes_hashed = 0;
};

// Directory listing of one job subdirectory: name → stat (lstat); empty when unreadable.
std::map<std::string, struct stat> list_with_stats(int dirfd) {
    std::map<std::string, struct stat> out;
    auto names = list_dir(dirfd, "");
    if (!names.ok()) return out;
    for (const auto& name : names.value()) {
        struct stat st {};
        if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) out.emplace(name, st);
    }
    return out;
}

Result<std::string> cached_hash(Checker& c, int dirfd, const std::string& leaf, const struct stat& st, const std::string& display) {
    NodeState::FileKey key{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
                           static_cast<std::uint64_t>(st.st_size), mtime_ns(st)};
    {
        std::lock_guard lock(c.ctx.state().mutex);
        auto it = c.ctx.state().xxh3_by_file.find(key);
        if (it != c.ctx.state().xxh3_by_file.end()) return it->second;
    }
    ARCHCTL_TRY_ASSIGN(UniqueFd fd, open_regular(dirfd, leaf, display));
    Xxh3Hasher h;
    ARCHCTL_TRY_ASSIGN(CopyOutcome o, hash_range(fd.get(), key.size, h, {}, display));
    c.bytes_hashed += o.bytes;
    std::string digest = h.hex_digest();
    std::lock_guard lock(c.ctx.state().mutex);
    c.ctx.state().xxh3_by_file[key] = digest;
    return digest;
}

struct Verdict {
    Arrival arrival = Arrival::absent;
    std::uint64_t have_bytes = 0;
    std::string detail;
};

Result<Verdict> check_entry(Checker& c, int dirfd, const std::map<std::string, struct stat>& listing, const Expected& e) {
    std::string leaf = e.name.substr(e.name.rfind('/') + 1);
    Verdict v;
    auto temp = listing.find(syncthing_temp_name(leaf));
    auto tilde = listing.find(fmt::format("~syncthing~{}.tmp", leaf));
    bool temp_exists = temp != listing.end() || tilde != listing.end();
    auto final_it = listing.find(leaf);
    if (final_it == listing.end()) {
        if (temp_exists) {
            const struct stat& ts = temp != listing.end() ? temp->second : tilde->second;
            std::uint64_t allocated = static_cast<std::uint64_t>(ts.st_blocks) * 512;
            v.have_bytes = e.size ? std::min(allocated, *e.size) : allocated;
            v.arrival = Arrival::in_transit;
            v.detail = "syncthing temp file";
        }
        return v;
    }
    const struct stat& st = final_it->second;
    if (!S_ISREG(st.st_mode)) {
        v.arrival = Arrival::mismatch;
        v.detail = fmt::format("a {}, not a regular file", file_type_name(st.st_mode));
        return v;
    }
    auto size = static_cast<std::uint64_t>(st.st_size);
    v.have_bytes = e.size ? std::min(size, *e.size) : size;
    bool indexed = c.indexed_all || !c.indexed || c.indexed->count(e.name) > 0;
    if (temp_exists || (e.size && size != *e.size) || !indexed) {
        v.arrival = (indexed && !temp_exists && e.size && size != *e.size) ? Arrival::mismatch : Arrival::in_transit;
        v.detail = temp_exists ? "syncthing temp file" : (!indexed ? "not yet in the target index" : fmt::format("size {}", size));
        if (v.arrival == Arrival::mismatch) v.detail = fmt::format("indexed with size {}, expected {}", size, *e.size);
        return v;
    }
    v.arrival = Arrival::present;
    if (c.verify && !e.xxh3.empty()) {
        std::string display = fmt::format("{}/{}", c.job_display, e.name);
        ARCHCTL_TRY_ASSIGN(std::string digest, cached_hash(c, dirfd, leaf, st, display));
        v.arrival = digest == e.xxh3 ? Arrival::verified : Arrival::mismatch;
        if (v.arrival == Arrival::mismatch) v.detail = fmt::format("xxh3 {} differs from the manifest's {}", digest, e.xxh3);
    } else if (c.verify) {
        v.detail = "no hash in the manifest";
    }
    return v;
}

// The manifest, when it has arrived complete (final name, no temp file).
std::optional<Manifest> read_manifest(int job, const std::string& display) {
    auto text = read_small_in(job, k_manifest_name, display + "/" + k_manifest_name);
    if (!text.ok()) return std::nullopt;
    auto parsed = json::parse(text.value(), nullptr, false);
    if (parsed.is_discarded()) return std::nullopt;
    auto m = Manifest::from_json(parsed);
    if (!m.ok()) return std::nullopt;
    return std::move(m).value();
}

std::vector<Expected> expected_entries(const std::vector<FileEntry>& files, PayloadLayout layout, const std::optional<Manifest>& manifest) {
    std::map<std::uint32_t, std::string> hashes;
    if (manifest)
        for (const auto& f : manifest->files) hashes[f.index] = f.xxh3;
    std::vector<Expected> out;
    out.push_back(Expected{k_manifest_name, std::nullopt, "", std::nullopt});
    out.push_back(Expected{k_ready_name, std::nullopt, "", std::nullopt});
    for (const auto& f : files) out.push_back(Expected{payload_name(f.index, layout), f.size, hashes[f.index], f.index});
    if (manifest)
        for (const auto& a : manifest->aux) out.push_back(Expected{fmt::format("{}/{}", k_aux_dir, a.name), a.size, a.xxh3, std::nullopt});
    return out;
}

// The directory of an entry, relative to the job directory: "" for the job directory itself.
std::string parent_of(const std::string& name) {
    auto slash = name.rfind('/');
    return slash == std::string::npos ? std::string() : name.substr(0, slash);
}

// What the job's staging may hold below it: per directory ("p" or "p/<shard>", "a"), the file
// names; below p/ when sharded, the shard directories.
struct Staged {
    std::map<std::string, std::set<std::string>> payload;  // directory → index names
    std::set<std::string> shards;                          // sharded: shard names below p/
    std::set<std::string> aux;
};

// An atomic write's temp file of `target` ("<dot><target>.tmp.<suffix>", lib/base/atomic_file.hpp):
// archctl's own, seen for a moment while the stage writes the manifest or the journal.
bool is_own_temp(const std::string& name, const std::string& target) {
    const std::string prefix = "." + target + ".tmp.";
    return name.rfind(prefix, 0) == 0 && name.size() > prefix.size();
}

// Whether `name` in p/ is stage's temp copy of one of the job's payload indices.
bool is_stage_temp(const std::string& name, const std::set<std::string>& payload) {
    if (name.size() < 7 || name.front() != '.' || !name.ends_with(".part")) return false;
    const std::string index = name.substr(1, name.size() - 6);
    if (!payload.count(index)) return false;
    std::uint32_t i = 0;
    for (char c : index) {
        if (c < '0' || c > '9') return false;
        i = i * 10 + static_cast<std::uint32_t>(c - '0');
        if (i > 100000000) return false;
    }
    return stage_temp_name(i) == name;
}

// What `st` is, for a message: "a symlink", "a directory", "a file".
std::string what_is(const struct stat& st) {
    if (S_ISLNK(st.st_mode)) return "a symlink";
    if (S_ISDIR(st.st_mode)) return "a directory";
    if (S_ISREG(st.st_mode)) return "a file";
    return "a " + std::string(file_type_name(st.st_mode));
}

// Everything in the job directory that archctl did not stage and does not expect (docs/staging.md
// "The valve", item 3): in the job directory only the manifest, READY, the journal and
// the directories p/ and a/; sharded, in p/ only the job's shard directories; in p/ (flat) or a
// shard only the job's payload indices there as regular files; in a/ only auxiliary names. Syncthing's temp files and conflict copies, and archctl's own atomic-write temp
// files, are expected anywhere.
void collect_foreign(const std::map<std::string, std::map<std::string, struct stat>>& listings, const Staged& staged,
                     std::vector<ForeignEntry>& out) {
    auto expected_anywhere = [](const std::string& name, const std::set<std::string>& names) {
        if (is_syncthing_artifact(name)) return true;
        return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return is_own_temp(name, n); });
    };
    auto directories = [&](const std::string& sub, const std::set<std::string>& dirs, const std::set<std::string>& files) {
        auto listing = listings.find(sub);
        if (listing == listings.end()) return;
        for (const auto& [name, st] : listing->second) {
            const std::string shown = sub.empty() ? name : sub + "/" + name;
            if (dirs.count(name)) {
                if (!S_ISDIR(st.st_mode)) out.push_back({shown, what_is(st) + " where archctl staged a directory"});
                continue;
            }
            if (files.count(name)) {
                if (!S_ISREG(st.st_mode)) out.push_back({shown, what_is(st) + " where archctl wrote a file"});
                continue;
            }
            if (!expected_anywhere(name, files)) out.push_back({shown, what_is(st) + " archctl did not stage"});
        }
    };
    directories("", {k_payload_dir, k_aux_dir}, {k_manifest_name, k_ready_name, k_stage_journal_name});
    if (!staged.shards.empty()) directories(k_payload_dir, staged.shards, {});
    auto files = [&](const std::string& sub, const std::set<std::string>& names, bool payload) {
        auto listing = listings.find(sub);
        if (listing == listings.end()) return;
        for (const auto& [name, st] : listing->second) {
            const std::string shown = sub + "/" + name;
            if (names.count(name)) {
                if (S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode)) out.push_back({shown, what_is(st) + " where archctl staged a file"});
                continue;
            }
            if (expected_anywhere(name, names)) continue;
            // A copy stage was making when it was cut off (a kill): the next stage finishes or
            // redoes it.
            if (payload && S_ISREG(st.st_mode) && is_stage_temp(name, names)) continue;
            out.push_back({shown, what_is(st) + " archctl did not stage"});
        }
    };
    for (const auto& [sub, names] : staged.payload) files(sub, names, true);
    files(k_aux_dir, staged.aux, false);
}

// Temp files and conflict copies in a listing: never payload, reported.
void collect_ignored(const std::string& prefix, const std::map<std::string, struct stat>& listing, std::vector<std::string>& ignored) {
    for (const auto& [name, st] : listing)
        if (is_syncthing_artifact(name)) ignored.push_back(prefix.empty() ? name : prefix + "/" + name);
}

}  // namespace

Result<json> op_receive_check(OpContext& ctx, json args) {
    auto request = args.get<ReceiveCheckRequest>();
    args = json();  // read into request; not held while the files are looked at
    const std::string& job_dir = request.job_dir;
    Checker c{ctx, job_dir, std::nullopt, request.indexed_all, request.verify_transit, 0};
    if (request.indexed && !request.indexed_all) c.indexed = std::set<std::string>(request.indexed->begin(), request.indexed->end());
    std::vector<Expected> expected;
    auto job = ctx.roots().open_dir(job_dir);
    if (!job.ok() && !job.error().is(ErrorCode::NOT_FOUND)) return job.take_error();
    std::optional<Manifest> manifest;
    if (job.ok()) manifest = read_manifest(job.value().get(), job_dir);
    expected = expected_entries(request.files, request.layout, manifest);
    Staged staged;
    staged.aux = {k_torrent_aux, k_partfile_aux};
    if (manifest)
        for (const auto& a : manifest->aux) staged.aux.insert(a.name);
    for (const auto& f : request.files) {
        staged.payload[payload_dir(f.index, request.layout)].insert(std::to_string(f.index));
        if (request.layout == PayloadLayout::sharded) staged.shards.insert(shard_name(f.index));
    }

    // Directory (relative to the job directory) → its listing: the job directory, p/, a/ and,
    // sharded, the job's shard directories below p/. A symlink is never followed.
    std::map<std::string, std::map<std::string, struct stat>> listings;
    std::map<std::string, UniqueFd> dirs;
    auto list_below = [&](const std::string& parent, int parent_fd, const std::string& name) {
        auto& in = listings[parent];
        auto entry = in.find(name);
        if (entry == in.end() || !S_ISDIR(entry->second.st_mode)) return;
        const std::string sub = parent.empty() ? name : parent + "/" + name;
        auto fd = open_dir_below(parent_fd, std::vector<std::string>{name}, job_dir + "/" + sub);
        if (!fd.ok()) return;
        listings[sub] = list_with_stats(fd.value().get());
        dirs[sub] = std::move(fd).value();
    };
    if (job.ok()) {
        listings[""] = list_with_stats(job.value().get());
        for (const char* sub : {k_payload_dir, k_aux_dir}) list_below("", job.value().get(), sub);
        if (dirs.count(k_payload_dir))
            for (const auto& shard : staged.shards) list_below(k_payload_dir, dirs[k_payload_dir].get(), shard);
    }
    ReceiveCheckResult out;
    out.job_exists = job.ok();
    out.manifest = manifest.has_value();
    out.index_evidence = c.indexed.has_value() || c.indexed_all;
    bool complete = job.ok() && manifest.has_value();
    Progress progress;
    progress.files_total = expected.size();
    for (const auto& e : expected) {
        if (ctx.cancelled()) {
            ReceiveCheckResult stopped;
            stopped.stopped = Stop::cancel;
            return json(stopped);
        }
        const std::string sub = parent_of(e.name);
        Verdict v;
        if (listings.count(sub)) {
            int fd = sub.empty() ? job.value().get() : dirs[sub].get();
            ARCHCTL_TRY_ASSIGN(v, check_entry(c, fd, listings[sub], e));
        }
        bool done = v.arrival == Arrival::present || v.arrival == Arrival::verified;
        complete = complete && done;
        const bool nothing_there = v.arrival == Arrival::absent && v.have_bytes == 0 && v.detail.empty();
        if (request.absent_ranges && e.index && nothing_there) out.absent.push_back(*e.index);
        else if (!done || !request.unfinished_only) out.files.push_back(ReceivedFile{e.name, v.arrival, v.have_bytes, e.index, e.size, v.detail});
        if (e.index) {
            out.bytes_present += v.have_bytes;
            out.bytes_total += *e.size;
            out.files_total += 1;
            out.files_present += done ? 1 : 0;
        }
        ++progress.files;
        progress.bytes = out.bytes_present;
        ctx.progress(progress);
    }
    for (const auto& [sub, listing] : listings) collect_ignored(sub, listing, out.ignored);
    collect_foreign(listings, staged, out.foreign);
    out.complete = complete && out.foreign.empty();
    out.bytes_hashed = c.bytes_hashed;
    return json(out);
}

}  // namespace archctl::node
