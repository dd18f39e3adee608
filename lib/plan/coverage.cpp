#include "lib/plan/coverage.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "lib/base/hash.hpp"
#include "lib/base/json_member.hpp"
#include "lib/torrent/sha.hpp"

namespace archctl::plan {
namespace {

using torrent::sha256_hex;

// qBittorrent states in which its per-file progress is not a statement about the disk: it found
// files missing, it failed, or it is still working out what it has.
bool state_disproves(const std::string& run_state) {
    return run_state == "error" || run_state == "missing_files" || run_state == "checking" || run_state == "moving" ||
           run_state == "metadata" || run_state == "unknown";
}

// What differs between the stamp archctl's recheck recorded and the file now. `ctime`: how a
// stamp without a ctime (an older record) is judged — as a difference (a committed record: only a
// piece check proves the file) or not at all (an evict proof an older archctl made: its files
// were proven then, and the rest of the stamp still must hold).
enum class CtimeUnknown { differs, ignored };
std::string stamp_difference(const FileStamp& was, const FileStamp& now, CtimeUnknown unknown = CtimeUnknown::differs) {
    if (was.dev != now.dev) return fmt::format("on device {} now, {} at archctl's recheck", now.dev, was.dev);
    if (was.ino != now.ino) return fmt::format("replaced since archctl's recheck (inode {}, was {})", now.ino, was.ino);
    if (was.size != now.size) return fmt::format("size {} now, {} at archctl's recheck", now.size, was.size);
    if (was.mtime_ns != now.mtime_ns) return "modified since archctl's recheck (its mtime changed)";
    // A new file can get the old one's inode number; its birth time then differs.
    if (was.btime_ns != 0 && now.btime_ns != 0 && was.btime_ns != now.btime_ns)
        return fmt::format("replaced since archctl's recheck (a new file with the same inode {})", now.ino);
    // A rewrite in place that puts the mtime back (rsync --inplace -t, a tag editor) leaves all of
    // the above equal; the inode change time no writer can restore.
    if (was.ctime_ns == 0)
        return unknown == CtimeUnknown::ignored ? "" : "archctl's record has no ctime for it (committed by an older archctl)";
    if (was.ctime_ns != now.ctime_ns) return "its ctime changed since archctl's recheck (rewritten in place, or its metadata changed)";
    return "";
}

constexpr const char* k_piece_hint = "evict checks its pieces";

// The note for one archive node: how many required files it does not prove, and the first why.
std::string refused_note(const std::string& node, const std::vector<std::pair<CoverageFile, std::string>>& refused) {
    const auto& [first, why] = refused.front();
    std::string more = refused.size() > 1 ? fmt::format(" (and {} more)", refused.size() - 1) : "";
    return fmt::format("{}: {} file(s) do not count: file {} '{}': {}{}", node, refused.size(), first.index, first.path, why, more);
}

}  // namespace

nlohmann::json FileStamp::to_json() const {
    nlohmann::json j = nlohmann::json::array({dev, ino, size, mtime_ns});
    if (btime_ns != 0 || ctime_ns != 0) j.push_back(btime_ns);
    if (ctime_ns != 0) j.push_back(ctime_ns);
    return j;
}

Result<FileStamp> FileStamp::from_json(const nlohmann::json& j) {
    if (!j.is_array() || j.size() < 4 || j.size() > 6) return Error(ErrorCode::CORRUPT, fmt::format("unreadable file stamp: {}", j.dump()));
    try {
        return FileStamp{j[0].get<std::uint64_t>(), j[1].get<std::uint64_t>(), j[2].get<std::uint64_t>(), j[3].get<std::int64_t>(),
                         j.size() >= 5 ? j[4].get<std::int64_t>() : 0, j.size() >= 6 ? j[5].get<std::int64_t>() : 0};
    } catch (const nlohmann::json::exception& e) {
        return Error(ErrorCode::CORRUPT, fmt::format("unreadable file stamp: {}", e.what()));
    }
}

nlohmann::json stamps_to_json(const std::map<std::uint32_t, FileStamp>& stamps) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& [index, s] : stamps) {
        nlohmann::json row = s.to_json();
        row.insert(row.begin(), index);
        out.push_back(std::move(row));
    }
    return out;
}

Result<std::map<std::uint32_t, FileStamp>> stamps_from_json(const nlohmann::json& j) {
    std::map<std::uint32_t, FileStamp> out;
    if (j.is_null()) return out;
    if (!j.is_array()) return Error(ErrorCode::CORRUPT, "unreadable file stamps: not a list");
    for (const auto& row : j) {
        if (!row.is_array() || row.size() < 5 || row.size() > 7 || !row[0].is_number_unsigned())
            return Error(ErrorCode::CORRUPT, fmt::format("unreadable file stamp: {}", row.dump()));
        ARCHCTL_TRY_ASSIGN(FileStamp s, FileStamp::from_json(nlohmann::json(row.begin() + 1, row.end())));
        out[row[0].get<std::uint32_t>()] = s;
    }
    return out;
}

std::string to_string(Trust t) { return t == Trust::verify_pieces ? "verify_pieces" : "committed"; }

FileVerdict judge_file(const ArchiveEvidence& a, const CoverageFile& f) {
    auto no = [](std::string why) { return FileVerdict{FileProof::unproven, std::move(why)}; };
    const PlacementView& v = a.view;
    const std::uint32_t i = f.index;
    if (state_disproves(v.run_state)) return no(fmt::format("qBittorrent reports the torrent {}", a.state.empty() ? v.run_state : a.state));
    if (!a.will_not_stay.empty()) return no(a.will_not_stay);
    if (!a.shared_with.empty() && !a.count_shared)
        return no(fmt::format("shared with torrent {}: deleting it with its files deletes this copy (evict.count_shared_copies = true "
                              "counts it anyway)",
                              fmt::join(a.shared_with, ", ")));
    if (!v.selected.contains(i)) return no("skipped in qBittorrent");
    if (!v.complete.contains(i)) return no("not at 100% in qBittorrent");
    const std::string& expected = i < a.expected.size() && !a.expected[i].empty() ? a.expected[i] : f.path;
    if (i < v.names.size() && !v.names[i].empty() && v.names[i] != expected)
        return no(fmt::format("renamed in qBittorrent to '{}'", v.names[i]));
    if (f.size == 0) return {FileProof::proven, ""};  // no bytes to lose
    const DiskFile disk = i < a.disk.size() ? a.disk[i] : DiskFile{};
    switch (disk.on_disk) {
        case OnDisk::unread: return no("not read on the node's disk");
        case OnDisk::absent: return no("absent on disk");
        case OnDisk::other: return no(fmt::format("a {} on disk, not a regular file", disk.other));
        case OnDisk::file: break;
    }
    if (disk.stamp.size != f.size) return no(fmt::format("size {} on disk, {} in the metainfo", disk.stamp.size, f.size));
    if (a.verify == VerifyArchive::yes) return {FileProof::piece_check, "--verify-archive"};
    // What the stamps cannot prove, evict's piece check on the archive's disk may: the copy
    // counts, and nothing is deleted before those pieces (of just these files) verify.
    auto by_pieces = [](std::string why) { return FileVerdict{FileProof::piece_check, fmt::format("{}; {}", why, k_piece_hint)}; };
    auto committed = a.committed.find(i);
    if (committed == a.committed.end()) {
        if (a.generation == 0) return by_pieces("no recheck committed by archctl");
        return by_pieces("no file stamp from archctl's recheck (committed by an older archctl)");
    }
    if (std::string diff = stamp_difference(committed->second, disk.stamp); !diff.empty()) return by_pieces(diff);
    return {FileProof::proven, ""};
}

torrent::Selection ArchiveProof::piece_files() const {
    std::vector<std::uint32_t> out;
    for (const auto& p : proven)
        if (trust == Trust::verify_pieces || p.pieces) out.push_back(p.index);
    return torrent::Selection::of(std::move(out));
}

nlohmann::json ArchiveProof::to_json() const {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& p : proven) {
        nlohmann::json row = {{"i", p.index}, {"path", p.path}, {"size", p.size}, {"stamp", p.stamp.to_json()}};
        if (!p.disk.empty() && p.disk != p.path) row["disk"] = p.disk;
        if (p.pieces) row["pieces"] = true;
        rows.push_back(std::move(row));
    }
    return {{"node", node},         {"qb_id", qb_id},          {"save_path", save_path}, {"files", files.to_json()},
            {"generation", generation}, {"trust", to_string(trust)}, {"proven", rows}};
}

Result<ArchiveProof> ArchiveProof::from_json(const nlohmann::json& j) {
    try {
        ArchiveProof p;
        p.node = j.at("node");
        p.qb_id = j.at("qb_id");
        p.save_path = j.value("save_path", "");
        ARCHCTL_TRY_ASSIGN(p.files, torrent::Selection::from_json(j.at("files")));
        p.generation = j.value("generation", std::uint64_t{0});
        p.trust = j.value("trust", "committed") == "verify_pieces" ? Trust::verify_pieces : Trust::committed;
        for (const auto& row : member_or_empty(j, "proven")) {
            ProvenFile f;
            f.index = row.at("i");
            f.path = row.at("path");
            f.size = row.at("size");
            f.disk = row.value("disk", "");
            f.pieces = row.value("pieces", false);
            ARCHCTL_TRY_ASSIGN(f.stamp, FileStamp::from_json(row.at("stamp")));
            p.proven.push_back(std::move(f));
        }
        return p;
    } catch (const nlohmann::json::exception& e) {
        return Error(ErrorCode::CORRUPT, fmt::format("unreadable archive proof: {}", e.what()));
    }
}

Result<Coverage> compute_coverage(const CoverageInput& in) {
    Coverage c;
    c.required = in.cache.selected;
    if (c.required.end() > in.files.size())
        return Error(ErrorCode::BAD_VALUE, fmt::format("the cache placement on '{}' selects file {} of a resource with {} files", in.cache.node,
                                              c.required.end() - 1, in.files.size()));
    std::vector<ArchiveEvidence> archives = in.archives;
    std::sort(archives.begin(), archives.end(), [](const auto& a, const auto& b) { return a.view.node < b.view.node; });
    std::map<std::uint32_t, std::vector<std::string>> holders, refused, piece_checked;
    for (const auto& a : archives) {
        ArchiveProof proof{a.view.node, a.view.qb_id, a.view.save_path, {}, a.generation,
                           a.verify == VerifyArchive::yes ? Trust::verify_pieces : Trust::committed, {}};
        std::vector<std::uint32_t> held;
        std::vector<std::pair<CoverageFile, std::string>> not_counted, by_pieces;
        for (std::uint32_t i : c.required.indices()) {
            const CoverageFile& f = in.files[i];
            FileVerdict verdict = judge_file(a, f);
            if (verdict.proof == FileProof::unproven) {
                refused[i].push_back(fmt::format("{}: {}", a.view.node, verdict.why));
                not_counted.emplace_back(f, verdict.why);
                continue;
            }
            held.push_back(i);
            holders[i].push_back(a.view.node);
            FileStamp stamp = i < a.disk.size() ? a.disk[i].stamp : FileStamp{};
            std::string disk = i < a.expected.size() && a.expected[i] != f.path ? a.expected[i] : std::string();
            bool pieces = verdict.proof == FileProof::piece_check;
            proof.proven.push_back({i, f.path, f.size, stamp, disk, pieces});
            if (pieces) piece_checked[i].push_back(a.view.node);
            if (pieces && a.verify == VerifyArchive::no) by_pieces.emplace_back(f, verdict.why);
        }
        if (!not_counted.empty()) c.notes.push_back(refused_note(a.view.node, not_counted));
        if (!by_pieces.empty()) {
            const auto& [first, why] = by_pieces.front();
            std::string more = by_pieces.size() > 1 ? fmt::format(" (and {} more)", by_pieces.size() - 1) : "";
            c.notes.push_back(fmt::format("{}: {} file(s) count once evict's piece check proves them: file {} '{}': {}{}", a.view.node,
                                          by_pieces.size(), first.index, first.path, why, more));
        }
        if (held.empty()) continue;
        proof.files = torrent::Selection::of(std::move(held));
        c.proofs.push_back(std::move(proof));
    }
    for (const auto& u : in.unreachable) c.notes.push_back(fmt::format("{} (not counted)", u));
    std::string facts = fmt::format("cache {} {} {}\n", in.cache.node, in.cache.qb_id, c.required.to_string());
    for (std::uint32_t i : c.required.indices()) {
        const CoverageFile& f = in.files[i];
        c.required_bytes += f.size;
        FileCoverage fc{f, holders[i], refused[i], piece_checked[i]};
        if (fc.nodes.empty()) {
            c.missing.push_back(f);
            c.missing_bytes += f.size;
        }
        c.files.push_back(std::move(fc));
    }
    for (const auto& p : c.proofs) {
        facts += fmt::format("proof {} {} {} {} {}\n", p.node, p.qb_id, p.files.to_string(), p.generation, to_string(p.trust));
        for (const auto& f : p.proven) facts += fmt::format("  {} {}{}\n", f.index, f.stamp.to_json().dump(), f.pieces ? " pieces" : "");
    }
    for (const auto& m : c.missing) facts += fmt::format("missing {}\n", m.index);
    c.digest = sha256_hex(facts);
    return c;
}

std::string proof_drift(const ArchiveProof& proof, const std::optional<ArchiveEvidence>& live) {
    if (!live) return fmt::format("'{}' no longer has the archive placement", proof.node);
    const PlacementView& v = live->view;
    if (v.qb_id != proof.qb_id) return fmt::format("the placement on '{}' is now qB id {}, not {}", proof.node, v.qb_id, proof.qb_id);
    if (v.save_path != proof.save_path)
        return fmt::format("the placement on '{}' moved from '{}' to '{}'", proof.node, proof.save_path, v.save_path);
    if (proof.proven.size() != proof.files.count())
        return fmt::format("the proof on '{}' names no file stamps (made by an older archctl); prove it again", proof.node);
    std::vector<std::string> drifted;
    for (const auto& p : proof.proven) {
        FileVerdict verdict = judge_file(*live, {p.index, p.path, p.size});
        std::string why = verdict.why;
        if (verdict.proof != FileProof::unproven && p.size > 0) {
            const DiskFile& now = p.index < live->disk.size() ? live->disk[p.index] : DiskFile{};
            why = stamp_difference(p.stamp, now.stamp, CtimeUnknown::ignored);
            if (!why.empty()) why = "changed since it was proven: " + why;
        }
        if (!why.empty()) drifted.push_back(fmt::format("file {} '{}' on '{}': {}", p.index, p.path, proof.node, why));
    }
    if (drifted.empty()) return "";
    return drifted.size() == 1 ? drifted.front() : fmt::format("{} (and {} more files)", drifted.front(), drifted.size() - 1);
}

nlohmann::json Coverage::to_json() const {
    nlohmann::json files_j = nlohmann::json::array();
    for (const auto& f : files)
        files_j.push_back({{"index", f.file.index}, {"path", f.file.path}, {"size", f.file.size}, {"nodes", f.nodes}, {"refused", f.refused},
                           {"piece_check", f.piece_checked}});
    nlohmann::json missing_j = nlohmann::json::array();
    for (const auto& m : missing) missing_j.push_back({{"index", m.index}, {"path", m.path}, {"size", m.size}});
    nlohmann::json proofs_j = nlohmann::json::array();
    for (const auto& p : proofs) proofs_j.push_back(p.to_json());
    return {{"complete", complete()}, {"required", required.to_json()}, {"required_bytes", required_bytes},
            {"missing_bytes", missing_bytes}, {"files", files_j}, {"missing", missing_j}, {"proofs", proofs_j},
            {"notes", notes}, {"digest", digest}};
}

}  // namespace archctl::plan
