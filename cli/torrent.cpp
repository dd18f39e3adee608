// archctl torrent show | verify | create: plumbing over lib/torrent.

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "lib/base/fs.hpp"
#include "lib/base/units.hpp"
#include "lib/torrent/creator.hpp"
#include "lib/torrent/file_model.hpp"
#include "lib/torrent/metainfo.hpp"
#include "lib/torrent/verifier.hpp"
#include "lib/ui/table.hpp"

namespace archctl::cli {
namespace {

using namespace archctl::torrent;

struct TorrentOptions {
    CLI::App* show = nullptr;
    CLI::App* verify = nullptr;
    CLI::App* create = nullptr;
    std::string file;          // show, verify: the .torrent
    std::string dir;           // verify: the save path
    std::string files;         // verify --files
    bool pieces = false;       // verify --pieces
    std::string source;        // create: file or directory
    std::string output;        // create -o
    std::string kind = "hybrid";
    std::string piece_length;  // create --piece-length
    std::string name;          // create --name
};

std::string count_of(std::int64_t n, std::string_view noun) {
    return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

// Hashes are shown short unless -v.
std::string shown_hash(const std::string& hex, const Context& ctx) {
    if (hex.empty()) return "-";
    return ctx.global().verbose > 0 ? hex : hex.substr(0, 12);
}

nlohmann::json file_json(const ModelFile& f, std::int64_t piece_length) {
    auto [first, last] = f.qb_piece_range(piece_length);
    std::string attr = std::string(f.executable ? "x" : "") + (f.hidden ? "h" : "");
    return {{"index", f.index}, {"path", f.path}, {"size", f.size}, {"offset", f.offset}, {"piece_range", {first, last}}, {"attr", attr}};
}

nlohmann::json torrent_json(const Metainfo& m, const FileModel& model, bool with_files) {
    nlohmann::json j = {{"name", m.name()},
                        {"kind", kind_name(m.kind())},
                        {"v1", m.identity().v1_hex().empty() ? nlohmann::json(nullptr) : nlohmann::json(m.identity().v1_hex())},
                        {"v2", m.identity().v2_hex().empty() ? nlohmann::json(nullptr) : nlohmann::json(m.identity().v2_hex())},
                        {"qb_id", m.identity().qb_id()},
                        {"multi_file", m.multi_file()},
                        {"piece_length", m.piece_length()},
                        {"piece_count", m.piece_count()},
                        {"total_size", m.total_size()},
                        {"payload_size", m.payload_size()},
                        {"file_count", model.file_count()}};
    if (with_files) {
        nlohmann::json files = nlohmann::json::array();
        for (const auto& f : model.files()) files.push_back(file_json(f, m.piece_length()));
        j["files"] = std::move(files);
    }
    return j;
}

std::string headline(const Metainfo& m, const Context& ctx) {
    return fmt::format("'{}' ({} {})", printable(m.name()), kind_name(m.kind()), shown_hash(m.identity().qb_id(), ctx));
}

std::string piece_text(const ModelFile& f, std::int64_t piece_length) {
    if (f.size == 0) return "-";
    auto [first, last] = f.qb_piece_range(piece_length);
    return first == last ? fmt::format("{}", first) : fmt::format("{}-{}", first, last);
}

Outcome run_show(Context& ctx, const TorrentOptions& o) {
    auto meta = load_metainfo(o.file);
    if (!meta) return Outcome::failed(meta.take_error());
    const Metainfo& m = *meta;
    FileModel model(m);
    ui::Table summary({}, "  ");
    summary.add_row({"v1", shown_hash(m.identity().v1_hex(), ctx)});
    summary.add_row({"v2", shown_hash(m.identity().v2_hex(), ctx)});
    summary.add_row({"qB id", shown_hash(m.identity().qb_id(), ctx)});
    summary.add_row({"pieces", fmt::format("{} × {}", m.piece_count(), format_size(static_cast<std::uint64_t>(m.piece_length())))});
    summary.add_row({"size", fmt::format("{} in {} files ({} bytes; {} with pads)", format_size(static_cast<std::uint64_t>(m.payload_size())),
                                         model.file_count(), m.payload_size(), m.total_size())});
    // With --json the file list is in the document; stderr gets the summary only, not a second
    // copy of every file.
    if (ctx.out().json()) {
        ctx.out().result(headline(m, ctx) + "\n" + summary.render());
        return Outcome::done({{"torrent", torrent_json(m, model, true)}});
    }
    ui::Table files({ui::Align::right, ui::Align::right, ui::Align::right, ui::Align::left}, "  ");
    files.add_row({"idx", "size", "pieces", "path"});
    for (const auto& f : model.files())
        files.add_row({std::to_string(f.index), format_size(static_cast<std::uint64_t>(f.size)), piece_text(f, m.piece_length()), printable(f.path)});
    ctx.out().result(headline(m, ctx) + "\n" + summary.render() + "\n" + files.render());
    return Outcome::done({{"torrent", torrent_json(m, model, true)}});
}

std::string failure_lines(const VerifyReport& r) {
    ui::Table t({ui::Align::left, ui::Align::right, ui::Align::left, ui::Align::left}, "  ");
    for (const auto& f : r.files) {
        if (f.verdict == FileVerdict::complete) continue;
        std::string why = f.detail;
        if (!f.corrupt_pieces.empty()) why = "corrupt pieces " + piece_ranges(f.corrupt_pieces);
        if (f.verdict == FileVerdict::needs_skipped) why = "pieces " + piece_ranges(f.skipped_pieces) + " need a skipped file";
        if (f.verdict == FileVerdict::incomplete) why = "pieces " + piece_ranges(f.blocked_pieces) + " need a missing file";
        t.add_row({std::string(verdict_name(f.verdict)), fmt::format("idx {}", f.index), printable(f.path), why});
    }
    return t.render();
}

std::string piece_lines(const VerifyReport& r) {
    auto j = r.to_json()["pieces"];
    std::string out = "pieces";
    for (auto& [verdict, ranges] : j.items())
        if (!ranges.get<std::string>().empty()) out += fmt::format("\n  {:<13} {}", verdict, ranges.get<std::string>());
    return out;
}

Outcome run_verify(Context& ctx, const TorrentOptions& o) {
    auto meta = load_metainfo(o.file);
    if (!meta) return Outcome::failed(meta.take_error());
    const Metainfo& m = *meta;
    VerifyOptions vo;
    vo.pieces = o.pieces ? PieceDetail::all : PieceDetail::none;
    if (!o.files.empty()) {
        auto sel = Selection::parse(o.files);
        if (!sel) return Outcome::usage(sel.take_error());
        vo.files = *sel;
    }
    auto report = verify(m, o.dir, vo);
    if (!report) return Outcome::usage(report.take_error());
    const VerifyReport& r = *report;
    nlohmann::json result = r.to_json();
    result["torrent"] = torrent_json(m, FileModel(m), false);
    result["save_path"] = o.dir;
    double rate = r.seconds > 0 ? static_cast<double>(r.bytes_read) / r.seconds : 0;
    std::string summary = fmt::format("{} of {} verified in {}: {} checked, {} read in {:.1f} s ({}/s)",
                                      r.files.size() - r.failed_files(), count_of(static_cast<std::int64_t>(r.files.size()), "file"),
                                      headline(m, ctx), count_of(r.pieces_checked, "piece"),
                                      format_size(r.bytes_read), r.seconds, format_size(static_cast<std::uint64_t>(rate)));
    std::string text = summary;
    if (!r.all_verified()) text += "\n" + failure_lines(r);
    if (o.pieces) text += "\n" + piece_lines(r);
    ctx.out().result(text);
    if (r.all_verified()) return Outcome::done(result);
    return Outcome::failed(Error{"VERIFY_FAILED",
                                 fmt::format("verification of '{}' failed: {} of {} files did not verify", printable(m.name()),
                                             r.failed_files(), r.files.size()),
                                 "a recheck in qBittorrent would not complete; see the files listed above"},
                           result);
}

Outcome run_create(Context& ctx, const TorrentOptions& o) {
    CreateOptions co;
    co.kind = o.kind == "v1" ? Kind::v1 : o.kind == "v2" ? Kind::v2 : Kind::hybrid;
    co.name = o.name;
    if (!o.piece_length.empty()) {
        auto size = parse_size(o.piece_length);
        if (!size) return Outcome::usage(size.take_error());
        co.piece_length = static_cast<std::int64_t>(*size);
    }
    auto bytes = create_torrent(o.source, co);
    if (!bytes) return Outcome::failed(bytes.take_error());
    auto write = write_file_atomic(o.output, *bytes);
    if (!write.ok()) return Outcome::failed(write.take_error());
    auto meta = parse_metainfo(*bytes, o.output);
    if (!meta) return Outcome::failed(meta.take_error());
    FileModel model(*meta);
    ctx.out().result(fmt::format("created '{}': {}, {} in {}, {} × {}", printable(o.output), headline(*meta, ctx),
                                 format_size(static_cast<std::uint64_t>(meta->payload_size())),
                                 count_of(static_cast<std::int64_t>(model.file_count()), "file"),
                                 count_of(meta->piece_count(), "piece"), format_size(static_cast<std::uint64_t>(meta->piece_length()))));
    return Outcome::done({{"output", o.output}, {"torrent", torrent_json(*meta, model, false)}});
}

}  // namespace

Runner register_torrent(CLI::App& app) {
    auto o = std::make_shared<TorrentOptions>();
    app.require_subcommand(1, 1);

    o->show = app.add_subcommand("show", "print a .torrent's hashes, qB id, pieces and file table");
    o->show->add_option("FILE", o->file, "the .torrent file")->required()->type_name("FILE");

    o->verify = app.add_subcommand("verify", "check files on disk against a .torrent's piece hashes");
    o->verify->add_option("FILE", o->file, "the .torrent file")->required()->type_name("FILE");
    o->verify->add_option("DIR", o->dir, "the save path (holds the root folder or the single file)")->required()->type_name("DIR");
    o->verify->add_option("--files", o->files, "verify only these qB file indices, e.g. 0-3,7")->type_name("SEL");
    o->verify->add_flag("--pieces", o->pieces, "report the verdict of every piece");

    o->create = app.add_subcommand("create", "create a .torrent from a file or directory");
    o->create->add_option("PATH", o->source, "the file or directory to describe")->required()->type_name("PATH");
    o->create->add_option("-o,--output", o->output, "where to write the .torrent (atomically)")->required()->type_name("FILE");
    o->create->add_option("--kind", o->kind, "v1, v2 or hybrid (default hybrid)")
        ->check(CLI::IsMember({"v1", "v2", "hybrid"}))
        ->type_name("KIND");
    o->create->add_option("--piece-length", o->piece_length, "piece length, a power of two >= 16K (default: automatic)")
        ->type_name("N");
    o->create->add_option("--name", o->name, "torrent name (default: the file or directory name)")->type_name("NAME");

    return [o](Context& ctx) {
        if (o->show->parsed()) return run_show(ctx, *o);
        if (o->verify->parsed()) return run_verify(ctx, *o);
        return run_create(ctx, *o);
    };
}

}  // namespace archctl::cli
