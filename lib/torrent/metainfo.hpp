#pragma once
// Metainfo: a parsed, validated .torrent (v1 BEP 3, v2 BEP 52, hybrid), docs/torrent-format.md "Identity" to "Hybrid torrents".
//
// parse_metainfo() decodes strictly (bencode.hpp), computes the identity over the exact `info`
// bytes, and checks everything later code relies on: piece length and count, file sizes, the
// v2 file tree and piece layers (each layer's merkle root must equal its file's `pieces root`),
// hybrid consistency (same files, sizes and order once pads are set aside; every non-empty file
// on a piece boundary), BEP 47 attributes, and the path rules of path_rules.hpp. Invalid input is
// TORRENT_INVALID; unsafe or unsupported payload paths (including symlinks) TORRENT_UNSAFE_PATH.
//
// The native file list is libtorrent's: pad files included. For v1 and hybrid it is the v1
// `files` list as written (so a hybrid made by libtorrent < 2.0.8 without tail padding keeps a
// short last piece for SHA-1); for v2-only torrents archctl inserts the pad entries libtorrent
// inserts (after every non-empty file not ending on a piece boundary, the last one included).
// qBittorrent's file indices skip the pads: see file_model.hpp.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/result.hpp"
#include "lib/torrent/file_table.hpp"
#include "lib/torrent/identity.hpp"
#include "lib/torrent/path_rules.hpp"
#include "lib/torrent/sha.hpp"

namespace archctl::torrent {

struct ParseOptions {
    PathPlatform platform = PathPlatform::posix;  // windows_compatible adds the Windows rules
    // A v2 or hybrid torrent without its `piece layers` is accepted (layers present are checked
    // all the same). qBittorrent keeps such a copy in BT_backup; adding it and rechecking the
    // data rebuilds the layers from the files, each checked against its `pieces root`, which the
    // info hash covers (docs/torrent-format.md "Piece layers left out").
    bool layers_optional = false;
};

// How the job steps read a torrent's metainfo: its piece layers may be left out.
inline constexpr ParseOptions k_layers_optional{.layers_optional = true};

// What `torrent show` and `torrent create` report of a .torrent in their headline and JSON: read
// off a parse (Metainfo::facts) or reported by the creator for one it just made (CreatedTorrent).
struct Facts {
    std::string name;
    Identity identity;
    bool multi_file = false;
    std::int64_t piece_length = 0;
    std::int64_t piece_count = 0;
    std::int64_t total_size = 0;    // pads (and a v2 single file's internal one) included
    std::int64_t payload_size = 0;
};

class Metainfo {
public:
    // The torrent's name as libtorrent reports it (`name.utf-8` preferred; for a v2-only torrent
    // whose file tree holds a single file, that file's name).
    const std::string& name() const { return m_name; }
    Kind kind() const { return m_identity.kind(); }
    bool has_v1() const { return m_identity.has_v1(); }
    bool has_v2() const { return m_identity.has_v2(); }
    const Identity& identity() const { return m_identity; }
    // True for a torrent with a root folder (v1 `files`, or a v2 tree that is not one file).
    bool multi_file() const { return m_multi_file; }

    std::int64_t piece_length() const { return m_piece_length; }
    std::int64_t piece_count() const { return m_piece_count; }
    // Bytes of piece space (pads included); piece i covers [i·L, min((i+1)·L, total_size())).
    std::int64_t total_size() const { return m_total_size; }
    // Bytes of the non-pad files.
    std::int64_t payload_size() const { return m_payload_size; }
    Facts facts() const { return {m_name, m_identity, m_multi_file, m_piece_length, m_piece_count, m_total_size, m_payload_size}; }
    // Length of piece `piece` in piece space. Precondition: 0 <= piece < piece_count().
    std::int64_t piece_size(std::int64_t piece) const;

    // Native file list, pads included, in piece-space order.
    const FileTable& files() const { return m_files; }

    // v1 piece hashes (empty for v2-only).
    const std::vector<Sha1Digest>& v1_pieces() const { return m_v1_pieces; }
    // v2 piece layer of a file larger than one piece, looked up by its pieces root; nullptr when
    // the file has none (size <= piece length, or no v2).
    const std::vector<Sha256Digest>* piece_layer(const Sha256Digest& root) const;
    // True when the torrent has files larger than a piece and no `piece layers` (accepted only
    // with ParseOptions::layers_optional).
    bool layers_missing() const { return m_layers_missing; }

    // The whole .torrent as parsed.
    std::string_view bytes() const { return m_bytes; }
    // Exact bencoded `info` bytes; the identity is computed over them.
    std::string_view info_bytes() const { return std::string_view(m_bytes).substr(m_info_at, m_info_length); }
    // `created by`, `comment` (informational, may be empty).
    const std::string& created_by() const { return m_created_by; }
    const std::string& comment() const { return m_comment; }

private:
    friend class MetainfoParser;
    std::string m_name;
    Identity m_identity;
    bool m_multi_file = false;
    std::int64_t m_piece_length = 0;
    std::int64_t m_piece_count = 0;
    std::int64_t m_total_size = 0;
    std::int64_t m_payload_size = 0;
    FileTable m_files;
    std::vector<Sha1Digest> m_v1_pieces;
    std::map<Sha256Digest, std::vector<Sha256Digest>> m_layers;
    bool m_layers_missing = false;
    std::string m_bytes;  // the whole .torrent
    std::size_t m_info_at = 0;
    std::size_t m_info_length = 0;
    std::string m_created_by;
    std::string m_comment;
};

// Parses and validates a .torrent. `label` names the source in error messages (a file name);
// errors read "invalid torrent 'LABEL': ..." or "unsafe path in torrent 'NAME': ...".
[[nodiscard]] Result<Metainfo> parse_metainfo(std::string_view bytes, std::string_view label,
                                              const ParseOptions& options = {});

// parse_metainfo() of `bytes` that the Metainfo keeps (no copy of a large torrent is made).
[[nodiscard]] Result<Metainfo> take_metainfo(std::string bytes, std::string_view label, const ParseOptions& options = {});

// `bytes` (a .torrent) with its top-level `announce`, `announce-list` and `url-list` replaced by
// `tiers` (tracker tiers, tier 0 first) and `web_seeds`, written as an exported torrent has them:
// `announce` is the first tracker, `announce-list` is written when there is more than one, and
// `url-list` is a string for one web seed, a list for several. Every other key (the `info`
// dictionary above all) keeps its exact bytes, so the info hashes do not change.
[[nodiscard]] Result<std::string> with_announce(std::string_view bytes, const std::vector<std::vector<std::string>>& tiers,
                                                const std::vector<std::string>& web_seeds);

// Reads and parses a .torrent file (at most 128 MiB). I/O errors have code IO.
[[nodiscard]] Result<Metainfo> load_metainfo(const std::filesystem::path& file, const ParseOptions& options = {});

}  // namespace archctl::torrent
