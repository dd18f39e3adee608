#pragma once
// Path safety for torrent payload paths (docs/torrent-format.md "Path safety").
//
// Every path element of a torrent is validated before any use. archctl refuses what libtorrent
// would silently rewrite on disk (so the on-disk path would differ from the metainfo) and
// anything that could escape the save path. The checks are pure (no filesystem access); the
// use-time rule (O_NOFOLLOW walk below the root) lives in safe_open.hpp.
//
// Rejected (error code TORRENT_UNSAFE_PATH, message
// "unsafe path in torrent 'NAME': file 'a/../b': element '..' is not allowed"):
//  - an empty path list, an empty element, "." or "..";
//  - '/', '\' or NUL inside an element; a leading drive letter ("C:");
//  - bytes < 0x20 or 0x7F; invalid or overlong UTF-8, surrogates, code points > U+10FFFF;
//  - bidi controls U+202A–U+202E, U+2066–U+2069, U+200E, U+200F;
//  - an element longer than 255 bytes, a full path longer than 4095 bytes;
//  - pad-like names (".pad" directory, "_____padding_file_") on non-pad files;
//  (BEP 47 pad files obey every rule above except the pad-like name; they are never on disk, so
//  the set rules below do not apply to them: pads of equal length often share one path.)
//  - two paths equal after Unicode NFC normalisation and case folding (an NFD name alone is
//    kept: Linux stores it byte for byte), or a file path that is a directory prefix of another;
//  - with PathPlatform::windows_compatible also Windows device names, trailing '.' or space and
//    the characters < > : " | ? *.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/result.hpp"
#include "lib/base/text.hpp"

namespace archctl::torrent {

// Which file systems the path must be safe on.
enum class PathPlatform { posix, windows_compatible };

// What a path names: a payload file, or a BEP 47 pad file (attr 'p'), which may be named like a
// pad but must be as safe as any other path.
enum class PathRole { payload, pad };

inline constexpr std::size_t k_max_element_bytes = 255;
inline constexpr std::size_t k_max_path_bytes = 4095;

// The first rule `element` breaks, as a phrase for the error message ("element '..' is not
// allowed"), or nullopt when the element is acceptable.
[[nodiscard]] std::optional<std::string> element_violation(std::string_view element,
                                                           PathPlatform platform = PathPlatform::posix);

// The first rule a full path (root folder first) breaks, element rules included; nullopt if ok.
[[nodiscard]] std::optional<std::string> path_violation(const std::vector<std::string>& path,
                                                        PathPlatform platform = PathPlatform::posix,
                                                        PathRole role = PathRole::payload);

// Checks a torrent's payload paths as a set: each path individually, then case-folded
// duplicates and file-vs-directory prefix collisions. `paths` are full paths (root folder first
// for multi-file torrents). Pad files must not be passed.
[[nodiscard]] Status check_payload_paths(std::string_view torrent_name,
                                         const std::vector<std::vector<std::string>>& paths,
                                         PathPlatform platform = PathPlatform::posix);

// The same checks over `count` paths that `path_at(n)` makes on demand (each may be asked for
// more than once), so a large torrent's paths need not all be held as element vectors.
using PathSource = std::function<std::vector<std::string>(std::size_t)>;
[[nodiscard]] Status check_payload_paths(std::string_view torrent_name, std::size_t count, const PathSource& path_at,
                                         PathPlatform platform = PathPlatform::posix);

// Builds the TORRENT_UNSAFE_PATH error for one file and one broken rule.
[[nodiscard]] Error unsafe_path_error(std::string_view torrent_name, std::string_view file, std::string_view rule);

// True when `s` is well-formed UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF).
[[nodiscard]] bool is_valid_utf8(std::string_view s);

// Case folding used for duplicate detection: ASCII, Latin-1 Supplement, Latin Extended-A,
// basic Greek and Cyrillic capitals map to lower case; everything else is kept. Input must be
// valid UTF-8.
[[nodiscard]] std::string fold_case(std::string_view s);

// `s` with control bytes, invalid UTF-8 and bidi controls escaped (\xNN, \u202E), so a hostile
// name cannot corrupt a terminal or a log line: lib/base/text.hpp's.
using archctl::printable;

// Joins path elements with '/'.
[[nodiscard]] std::string join_path(const std::vector<std::string>& path);

}  // namespace archctl::torrent
