// archctl torrent show | verify | create: plumbing over lib/torrent.

#include <array>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "lib/base/atomic_file.hpp"
#include "lib/base/fs.hpp"
#include "lib/base/text.hpp"
#include "lib/base/units.hpp"
#include "lib/torrent/creator.hpp"
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

// A .torrent's payload files (pads left out) in qB index order, read off its file table.
struct PayloadFile {
    std::uint32_t index = 0;
    std::size_t native = 0;
    std::int64_t size = 0;
    std::int64_t offset = 0;
    bool executable = false;
    bool hidden = false;
};

template <typename Fn>
void for_each_payload_file(const Metainfo& m, Fn&& fn) {
    const FileTable& files = m.files();
    std::uint32_t index = 0;
    for (std::size_t i = 0; i < files.size(); ++i) {
        if (files.pad(i)) continue;
        FileEntry e = files[i];
        fn(PayloadFile{index++, i, e.size, e.offset, e.executable, e.hidden});
    }
}

std::size_t payload_count(const Metainfo& m) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < m.files().size(); ++i)
        if (!m.files().pad(i)) ++n;
    return n;
}

// qBittorrent's `piece_range` [first, last] (lib/torrent/file_model.hpp, ModelFile::qb_piece_range).
std::pair<std::int64_t, std::int64_t> qb_piece_range(const PayloadFile& f, std::int64_t piece_length) {
    return {f.offset / piece_length, (f.offset + f.size - 1) / piece_length};
}

nlohmann::json file_json(const PayloadFile& f, const std::string& path, std::int64_t piece_length) {
    auto [first, last] = qb_piece_range(f, piece_length);
    std::string attr = std::string(f.executable ? "x" : "") + (f.hidden ? "h" : "");
    return {{"index", f.index}, {"path", path}, {"size", f.size}, {"offset", f.offset}, {"piece_range", {first, last}}, {"attr", attr}};
}

nlohmann::json torrent_json(const Facts& t, std::size_t file_count) {
    return {{"name", t.name},
            {"kind", kind_name(t.identity.kind())},
            {"v1", t.identity.v1_hex().empty() ? nlohmann::json(nullptr) : nlohmann::json(t.identity.v1_hex())},
            {"v2", t.identity.v2_hex().empty() ? nlohmann::json(nullptr) : nlohmann::json(t.identity.v2_hex())},
            {"qb_id", t.identity.qb_id()},
            {"multi_file", t.multi_file},
            {"piece_length", t.piece_length},
            {"piece_count", t.piece_count},
            {"total_size", t.total_size},
            {"payload_size", t.payload_size},
            {"file_count", file_count}};
}

nlohmann::json torrent_json(const Metainfo& m, std::size_t file_count) { return torrent_json(m.facts(), file_count); }

// Writing a --json member piece by piece, byte for byte as nlohmann's dump(2) would write it
// nested `level` deep, so a million-entry list is never one JSON value.
class JsonStream {
public:
    explicit JsonStream(std::FILE* out) : m_out(out) {}
    ~JsonStream() { flush(); }

    // A value's dump(2), its lines after the first indented to `level`.
    void value(const nlohmann::json& v, std::size_t level) {
        std::string text = dump_json(v, 2);
        std::string indent(2 * level, ' ');
        for (char c : text) {
            m_buffer.push_back(c);
            if (c == '\n') m_buffer += indent;
        }
        if (m_buffer.size() > (1u << 20)) flush();
    }
    void text(std::string_view t) { m_buffer.append(t); }

    // An object at `level`: `head`'s members and `key`, whose value `member` writes (at level + 1).
    void object(const nlohmann::json& head, const std::string& key, const std::function<void(JsonStream&)>& member,
                std::size_t level) {
        std::map<std::string, std::function<void(JsonStream&)>> members;
        members[key] = member;
        for (const auto& [k, v] : head.items())
            if (k != key) members[k] = [&v, level](JsonStream& s) { s.value(v, level + 1); };
        std::string inner(2 * (level + 1), ' ');
        text("{");
        const char* separator = "\n";
        for (const auto& [k, write] : members) {
            text(separator);
            text(inner);
            text(dump_json(nlohmann::json(k)));
            text(": ");
            write(*this);
            separator = ",\n";
        }
        text("\n");
        text(std::string(2 * level, ' '));
        text("}");
    }

    // An array at `level` of `count` elements, each made when it is written.
    void array(std::size_t count, const std::function<nlohmann::json(std::size_t)>& element, std::size_t level) {
        if (count == 0) {
            text("[]");
            return;
        }
        std::string inner(2 * (level + 1), ' ');
        text("[\n");
        for (std::size_t i = 0; i < count; ++i) {
            if (i != 0) text(",\n");
            text(inner);
            value(element(i), level + 1);
        }
        text("\n");
        text(std::string(2 * level, ' '));
        text("]");
    }

    void flush() {
        std::fwrite(m_buffer.data(), 1, m_buffer.size(), m_out);
        m_buffer.clear();
    }

private:
    std::FILE* m_out;
    std::string m_buffer;
};

// The "torrent" member with its "files" list, streamed.
std::function<void(std::FILE*)> torrent_with_files(std::shared_ptr<const Metainfo> meta) {
    return [meta](std::FILE* out) {
        const Metainfo& m = *meta;
        std::vector<std::uint32_t> natives;
        for_each_payload_file(m, [&](const PayloadFile& f) { natives.push_back(static_cast<std::uint32_t>(f.native)); });
        JsonStream stream(out);
        auto files = [&](JsonStream& s) {
            std::uint32_t index = 0;
            s.array(natives.size(), [&](std::size_t n) {
                FileEntry e = m.files()[natives[n]];
                PayloadFile f{index++, natives[n], e.size, e.offset, e.executable, e.hidden};
                return file_json(f, e.path_string(), m.piece_length());
            }, 2);
        };
        stream.object(torrent_json(m, natives.size()), "files", files, 1);
    };
}

std::string headline(const Facts& t, const Context& ctx) {
    return fmt::format("'{}' ({} {})", printable(t.name), kind_name(t.identity.kind()), shown_hash(t.identity.qb_id(), ctx));
}

std::string headline(const Metainfo& m, const Context& ctx) { return headline(m.facts(), ctx); }

std::string piece_text(const PayloadFile& f, std::int64_t piece_length) {
    if (f.size == 0) return "-";
    auto [first, last] = qb_piece_range(f, piece_length);
    return first == last ? fmt::format("{}", first) : fmt::format("{}-{}", first, last);
}

// The file table of `torrent show`, as ui::Table would render it (right-aligned idx, size and
// pieces, then the path; two-space indent and gaps; trailing spaces cut), written in chunks.
void print_file_table(Context& ctx, const Metainfo& m, std::string head) {
    auto cells = [&](const PayloadFile& f) {
        return std::array<std::string, 4>{std::to_string(f.index), format_size(static_cast<std::uint64_t>(f.size)),
                                          piece_text(f, m.piece_length()), printable(m.files().path_string(f.native))};
    };
    std::array<std::string, 4> header{"idx", "size", "pieces", "path"};
    std::array<std::size_t, 3> widths{};
    auto widen = [&](const std::array<std::string, 4>& row) {
        for (std::size_t c = 0; c < 3; ++c) widths[c] = std::max(widths[c], ui::display_width(row[c]));
    };
    widen(header);
    for_each_payload_file(m, [&](const PayloadFile& f) { widen(cells(f)); });
    std::string chunk = std::move(head);
    auto line = [&](const std::array<std::string, 4>& row) {
        chunk += "  ";
        for (std::size_t c = 0; c < 3; ++c) {
            chunk.append(widths[c] - ui::display_width(row[c]), ' ');
            chunk += row[c];
            chunk += "  ";
        }
        chunk += row[3];
        while (!chunk.empty() && chunk.back() == ' ') chunk.pop_back();
        chunk.push_back('\n');
        if (chunk.size() > (1u << 20)) {
            ctx.out().result(chunk);
            chunk.clear();
        }
    };
    line(header);
    for_each_payload_file(m, [&](const PayloadFile& f) { line(cells(f)); });
    if (!chunk.empty()) ctx.out().result(chunk);
}

Outcome run_show(Context& ctx, const TorrentOptions& o) {
    auto loaded = load_metainfo(o.file);
    if (!loaded) return Outcome::failed(loaded.take_error());
    auto meta = std::make_shared<const Metainfo>(std::move(*loaded));
    const Metainfo& m = *meta;
    std::size_t file_count = payload_count(m);
    ui::Table summary({}, "  ");
    summary.add_row({"v1", shown_hash(m.identity().v1_hex(), ctx)});
    summary.add_row({"v2", shown_hash(m.identity().v2_hex(), ctx)});
    summary.add_row({"qB id", shown_hash(m.identity().qb_id(), ctx)});
    summary.add_row({"pieces", fmt::format("{} × {}", m.piece_count(), format_size(static_cast<std::uint64_t>(m.piece_length())))});
    summary.add_row({"size", fmt::format("{} in {} files ({} bytes; {} with pads)", format_size(static_cast<std::uint64_t>(m.payload_size())),
                                         file_count, m.payload_size(), m.total_size())});
    // With --json the file list is in the document; stderr gets the summary only, not a second
    // copy of every file.
    if (ctx.out().json()) {
        ctx.out().result(headline(m, ctx) + "\n" + summary.render());
        Outcome out = Outcome::done();
        out.streamed["torrent"] = torrent_with_files(meta);
        return out;
    }
    print_file_table(ctx, m, headline(m, ctx) + "\n" + summary.render() + "\n");
    return Outcome::done({{"torrent", torrent_json(m, file_count)}});
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
    auto j = r.pieces_json();
    std::string out = "pieces";
    for (auto& [verdict, ranges] : j.items())
        if (!ranges.get<std::string>().empty()) out += fmt::format("\n  {:<13} {}", verdict, ranges.get<std::string>());
    return out;
}

// The "files" member of `torrent verify --json`: every selected file, the failures from the
// report and the others complete.
std::function<void(std::FILE*)> verified_files(std::shared_ptr<const Metainfo> meta, std::shared_ptr<const VerifyReport> report) {
    return [meta, report](std::FILE* out) {
        std::vector<std::uint32_t> natives;
        for_each_payload_file(*meta, [&](const PayloadFile& f) { natives.push_back(static_cast<std::uint32_t>(f.native)); });
        std::vector<std::uint32_t> selected;
        for (const auto& range : report->selection.ranges())
            for (std::uint64_t i = range.first; i <= range.last; ++i) selected.push_back(static_cast<std::uint32_t>(i));
        std::size_t failure = 0;
        JsonStream stream(out);
        stream.array(selected.size(), [&](std::size_t n) {
            std::uint32_t index = selected[n];
            while (failure < report->files.size() && report->files[failure].index < index) ++failure;
            if (failure < report->files.size() && report->files[failure].index == index)
                return VerifyReport::file_json(report->files[failure]);
            FileReport complete;
            complete.index = index;
            complete.path = meta->files().path_string(natives[index]);
            complete.expected_size = meta->files().size_of(natives[index]);
            complete.actual_size = complete.expected_size;
            return VerifyReport::file_json(complete);
        }, 1);
    };
}

Outcome run_verify(Context& ctx, const TorrentOptions& o) {
    auto loaded = load_metainfo(o.file);
    if (!loaded) return Outcome::failed(loaded.take_error());
    auto meta = std::make_shared<const Metainfo>(std::move(*loaded));
    const Metainfo& m = *meta;
    VerifyOptions vo;
    vo.pieces = o.pieces ? PieceDetail::all : PieceDetail::none;
    vo.keep_complete = false;
    if (!o.files.empty()) {
        auto sel = Selection::parse(o.files);
        if (!sel) return Outcome::usage(sel.take_error());
        vo.files = *sel;
    }
    auto verified = verify(m, o.dir, vo);
    if (!verified) return Outcome::usage(verified.take_error());
    auto report = std::make_shared<const VerifyReport>(std::move(*verified));
    const VerifyReport& r = *report;
    const auto total = static_cast<std::size_t>(r.selection.count());
    nlohmann::json result = {{"verified", r.all_verified()},
                             {"selection", r.selection.to_json()},
                             {"summary", r.summary_json(total, r.failed_files())},
                             {"torrent", torrent_json(m, payload_count(m))},
                             {"save_path", o.dir}};
    if (!r.pieces.empty()) result["pieces"] = r.pieces_json();
    double rate = r.seconds > 0 ? static_cast<double>(r.bytes_read) / r.seconds : 0;
    std::string summary = fmt::format("{} of {} verified in {}: {} checked, {} read in {:.1f} s ({}/s)",
                                      total - r.failed_files(), count_of(static_cast<std::int64_t>(total), "file"),
                                      headline(m, ctx), count_of(r.pieces_checked, "piece"),
                                      format_size(r.bytes_read), r.seconds, format_size(static_cast<std::uint64_t>(rate)));
    std::string text = summary;
    if (!r.all_verified()) text += "\n" + failure_lines(r);
    if (o.pieces) text += "\n" + piece_lines(r);
    ctx.out().result(text);
    Outcome out = r.all_verified()
                      ? Outcome::done(result)
                      : Outcome::failed(Error{"VERIFY_FAILED",
                                              fmt::format("verification of '{}' failed: {} of {} files did not verify",
                                                          printable(m.name()), r.failed_files(), total),
                                              "a recheck in qBittorrent would not complete; see the files listed above"},
                                        result);
    if (ctx.out().json()) out.streamed["files"] = verified_files(meta, report);
    return out;
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
    // The .torrent is written as it is made (never held whole); its temporary file is created
    // with the first chunk, after the source was scanned, so an output inside the source is not
    // part of it.
    std::optional<AtomicFile> file;
    ByteSink sink = [&](std::string_view chunk) -> Status {
        if (!file) {
            ARCHCTL_TRY_ASSIGN(auto created_file, AtomicFile::create(o.output));
            file.emplace(std::move(created_file));
        }
        return file->write(chunk);
    };
    auto created = build_torrent(o.source, co, sink);
    if (!created) return Outcome::failed(created.take_error());
    auto commit = file->commit();
    if (!commit.ok()) return Outcome::failed(commit.take_error());
    const Facts& t = *created;
    std::size_t file_count = created->file_count;
    ctx.out().result(fmt::format("created '{}': {}, {} in {}, {} × {}", printable(o.output), headline(t, ctx),
                                 format_size(static_cast<std::uint64_t>(t.payload_size)),
                                 count_of(static_cast<std::int64_t>(file_count), "file"),
                                 count_of(t.piece_count, "piece"), format_size(static_cast<std::uint64_t>(t.piece_length))));
    return Outcome::done({{"output", o.output}, {"torrent", torrent_json(t, file_count)}});
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
