#pragma once
// Text from others, made safe to show: names and paths come from qBittorrent, Syncthing, torrent
// files and the disk, and any of them may hold terminal escapes or bytes that are not UTF-8.
//
//   printable("evil\x1b]0;x\x07")   → "evil\x1b]0;x\x07" as visible text (backslash, x, 1, b, …)
//   terminal_text("a\nb\x1b[2J")    → lines kept, the escape shown visibly
//   dump_json(doc, 2)                → doc.dump(2), or the same with every byte that is not UTF-8
//                                      written as \udcXX (Python's surrogateescape), never a throw

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace archctl {

// Decodes one UTF-8 sequence at s[i] into cp; returns its length, or 0 when malformed
// (truncated, overlong, a surrogate, past U+10FFFF).
[[nodiscard]] std::size_t decode_utf8(std::string_view s, std::size_t i, char32_t& cp);
// Appends cp to out as UTF-8.
void append_utf8(std::string& out, char32_t cp);

// `s` with control bytes (C0, DEL and the C1 controls U+0080–U+009F), invalid UTF-8 and bidi
// controls escaped (\xNN, \u202E), so a hostile name cannot corrupt a terminal or a log line.
[[nodiscard]] std::string printable(std::string_view s);

// `s` as an error message echoes an argument back: whole up to `max` bytes, else its first bytes
// (cut at a character boundary) and "… (N bytes)", so a huge argument is not printed whole.
[[nodiscard]] std::string clipped(std::string_view s, std::size_t max = 80);

// A service's error text (Syncthing, qBittorrent) folded to one line before it is put into a
// message: trimmed, and every run of CR/LF with the spaces around it becomes "; " (or nothing
// where the text before it already ends a clause with ':' ';' ',' or '-'), so a message built
// around it never has a line of its own such as ") (and 1 more)".
//   one_line("open x: no space\n")          → "open x: no space"
//   one_line("pull failed\r\n  disk full")  → "pull failed; disk full"
[[nodiscard]] std::string one_line(std::string_view text);

// Torrent file indices as a person reads them, never as a count: "0" → "file #0",
// "1,4" → "files #1, #4", "0-3,7" → "files #0-3, #7"; "" → "no file".
[[nodiscard]] std::string file_indices(std::string_view ranges);

// Text for a person's terminal: printable() line by line, newlines and tabs kept.
[[nodiscard]] std::string terminal_text(std::string_view s);

// `j` as j.dump(indent) prints it. Where a string or key is not UTF-8 (an argument, a name on
// disk), each byte that is not part of a valid sequence is written as the escape \udcXX of its
// value 0xXX, which a reader reverses (Python: json.loads, then .encode('utf-8',
// 'surrogateescape')); the document stays one valid JSON text.
[[nodiscard]] std::string dump_json(const nlohmann::json& j, int indent = -1);

}  // namespace archctl
