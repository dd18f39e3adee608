// libFuzzer target: strict bencode decoding and metainfo parsing (lib/torrent).
//
// Properties checked on every input, beyond "no crash, no sanitizer report":
//  - the strict decoder accepts only canonical bencoding, so re-encoding what it accepted gives
//    back the exact input bytes;
//  - a parsed metainfo's identity is the hash of the info span, its file model is consistent
//    with its piece count, every path it holds (pad files' included) passes the path rules, and
//    selection text round-trips.

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "lib/torrent/bencode.hpp"
#include "lib/torrent/file_model.hpp"
#include "lib/torrent/metainfo.hpp"
#include "lib/torrent/selection.hpp"

using namespace archctl::torrent;

namespace {

void check(bool condition) {
    if (!condition) std::abort();
}

void check_metainfo(const Metainfo& m) {
    check(m.identity().has_v1() ? *m.identity().v1() == sha1(m.info_bytes()) : true);
    check(m.identity().has_v2() ? *m.identity().v2() == sha256(m.info_bytes()) : true);
    for (const auto& e : m.files())
        check(!path_violation(e.path_elements(), PathPlatform::posix, e.pad ? PathRole::pad : PathRole::payload).has_value());
    FileModel model(m);
    check(model.piece_count() == m.piece_count());
    std::int64_t last_end = 0;
    for (const auto& f : model.files()) {
        check(f.offset >= last_end || f.size == 0);
        check(f.end_piece <= m.piece_count());
        last_end = f.offset + f.size;
    }
    Selection all = model.all();
    check(all.count() == model.file_count());
    (void)model.boundary_pieces(Selection::of({0}));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view input(reinterpret_cast<const char*>(data), size);
    bencode::Limits limits;
    limits.max_input = 1 << 20;
    auto decoded = bencode::decode(input, limits);
    if (decoded.ok()) check(bencode::encode(*decoded) == input);

    auto meta = parse_metainfo(input, "fuzz.torrent");
    if (meta.ok()) check_metainfo(*meta);

    auto sel = Selection::parse(input.substr(0, 64));
    if (sel.ok()) check(Selection::parse(sel->to_string()).ok() && *Selection::parse(sel->to_string()) == *sel);
    return 0;
}
