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

#include "lib/base/text.hpp"

namespace archctl::torrent {

// UTF-8 decoding and encoding are lib/base/text.hpp's.
using archctl::append_utf8;
using archctl::decode_utf8;

// `s` in Unicode Normalization Form C. Bytes that are not valid UTF-8 are kept as they are.
[[nodiscard]] std::string to_nfc(std::string_view s);

}  // namespace archctl::torrent
