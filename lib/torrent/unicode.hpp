#pragma once
// Unicode canonical normalisation (NFC) for torrent path elements.
//
// archctl keeps every name byte for byte as the metainfo spells it; NFC is only the key under
// which two names are compared (docs/torrent-format.md "Path safety" rule 5). The normaliser is the full UAX #15
// algorithm (canonical decomposition, canonical ordering, canonical composition) over tables
// generated from the Unicode database (gen_unicode_tables.py): the Latin, Greek, Cyrillic,
// letterlike-symbol and kana blocks, plus algorithmic Hangul. Canonical ordering uses the
// combining class of every mark. A precomposed character outside those blocks is kept as it is,
// so two spellings of it compare as different names — exactly as the file system stores them.

#include <cstddef>
#include <string>
#include <string_view>

namespace archctl::torrent {

// Decodes one UTF-8 sequence at s[i] into cp; returns its length, or 0 when malformed
// (truncated, overlong, a surrogate, past U+10FFFF).
[[nodiscard]] std::size_t decode_utf8(std::string_view s, std::size_t i, char32_t& cp);

// Appends cp to out as UTF-8.
void append_utf8(std::string& out, char32_t cp);

// `s` in Unicode Normalization Form C. Bytes that are not valid UTF-8 are kept as they are.
[[nodiscard]] std::string to_nfc(std::string_view s);

}  // namespace archctl::torrent
