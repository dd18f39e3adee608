// libFuzzer target: the node protocol's line reader (lib/node/wire/line_reader.hpp) and line
// decoder, as the exec transport reads a far end's output and `node serve` reads requests.
//
// The input's first byte picks the line limit and the chunk sizes the rest is fed in. Checked on
// every input, beyond "no crash, no sanitizer report":
//  - the lines and overlong reports are exactly those of a plain split of the whole input at
//    its newlines (empty lines skipped; a line past the limit reported by its first bytes, a
//    last unterminated one only once it is past the limit), however the bytes were chunked;
//  - the buffer never holds more than the limit and one chunk;
//  - every line either decodes or is refused with an error (never an exception), and a decoded
//    message encodes to a line that decodes again.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "lib/node/wire/line_reader.hpp"
#include "lib/node/wire/protocol.hpp"

using archctl::node::LineReader;

namespace {

void check(bool condition) {
    if (!condition) std::abort();
}

struct Event {
    LineReader::Kind kind;
    std::string text;
    bool operator==(const Event&) const = default;
};

// What a plain split of the whole input gives.
std::vector<Event> reference(std::string_view input, std::size_t limit) {
    std::vector<Event> out;
    std::size_t start = 0;
    for (;;) {
        std::size_t nl = input.find('\n', start);
        std::string_view line = input.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
        if (line.size() > limit) {
            out.push_back({LineReader::Kind::overlong, std::string(line.substr(0, LineReader::k_overlong_prefix))});
        } else if (!line.empty() && nl != std::string_view::npos) {
            out.push_back({LineReader::Kind::line, std::string(line)});
        }
        if (nl == std::string_view::npos) break;
        start = nl + 1;
    }
    return out;
}

void check_decode(const std::string& line) {
    auto msg = archctl::node::decode(line);
    if (!msg.ok()) {
        check(msg.error().code == "PROTOCOL");
        return;
    }
    auto again = archctl::node::decode(archctl::node::encode(msg.value()));
    check(again.ok());
    check(again.value().index() == msg.value().index());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    // 64 .. 505 bytes: small, so the fuzzer passes it, and never below the quoted prefix (an
    // overlong line is quoted by what had arrived when it passed the limit).
    const std::size_t limit = LineReader::k_overlong_prefix + (data[0] & 0x3f) * 7;
    const std::size_t chunk_seed = data[0] >> 6;
    std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);

    LineReader in(limit);
    std::vector<Event> seen;
    std::size_t at = 0, step = 0;
    while (at < input.size()) {
        std::size_t chunk = 1 + ((at * 31 + step * 7 + chunk_seed * 13) % (chunk_seed == 0 ? 1 : 97));
        chunk = std::min(chunk, input.size() - at);
        in.feed(input.substr(at, chunk));
        at += chunk;
        ++step;
        while (auto l = in.next()) {
            if (l->kind == LineReader::Kind::line) {
                check(!l->text.empty() && l->text.size() <= limit && l->text.find('\n') == std::string::npos);
                check_decode(l->text);
            } else {
                check(l->text.size() <= LineReader::k_overlong_prefix);
            }
            seen.push_back({l->kind, l->text});
        }
        check(in.buffered() <= limit + chunk + 1);
        check(in.partial().size() <= limit);
    }
    check(seen == reference(input, limit));
    return 0;
}
