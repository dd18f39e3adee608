// libFuzzer target: request lines into the node server's dispatch (lib/node/server), over a
// scratch root rebuilt before every input.
//
// An input is up to four lines; each is decoded as `node serve` decodes a line, and a request is
// run by Server::handle as `node serve` runs it. In a line, "$Q" and "$S" stand for the scratch's
// two roots (a qB root holding two files and a part file, a sync root), so the seed corpus
// (tests/fuzz/corpus-node) reaches past the path checks wherever the scratch lives. A line that
// begins with '!' runs its request already cancelled.
//
// Checked on every input, beyond "no crash, no sanitizer report, no leak": every request gets a
// response, never one of the server's last-resort errors (INTERNAL: an operation threw something
// other than a JSON error, i.e. a request reached code that did not check it), and every response
// and progress record encodes to a line that decodes again.

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <unistd.h>

#include "lib/node/server/root_set.hpp"
#include "lib/node/server/server.hpp"
#include "lib/node/wire/protocol.hpp"

using namespace archctl;
using namespace archctl::node;

namespace {

void check(bool condition) {
    if (!condition) std::abort();
}

namespace fs = std::filesystem;

void remove_scratch();

// The scratch of this process, removed when it exits (libFuzzer ends a timed run with exit()).
const fs::path& scratch() {
    static const fs::path dir = fs::temp_directory_path() / ("archctl-fuzz-node-" + std::to_string(::getpid()));
    // Registered after `dir` exists, so it runs before `dir` is destroyed.
    static const bool removed_at_exit = std::atexit(remove_scratch) == 0;
    (void)removed_at_exit;
    return dir;
}

void remove_scratch() {
    std::error_code ec;
    fs::remove_all(scratch(), ec);
}

void put(const fs::path& path, const std::string& bytes) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
}

std::string be32(std::uint32_t v) {
    std::string out(4, '\0');
    for (int i = 0; i < 4; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((v >> (24 - 8 * i)) & 0xff);
    return out;
}

// The scratch as every input finds it: qb/save/T/{a.bin,b.bin}, a part file of 3 pieces of
// 16 KiB with piece 1 in slot 0, a .torrent in qb/BT_backup, and an empty sync root.
void rebuild_scratch() {
    std::error_code ec;
    fs::remove_all(scratch(), ec);
    fs::create_directories(scratch() / "qb" / "save" / "T");
    fs::create_directories(scratch() / "sync" / "route");
    put(scratch() / "qb" / "save" / "T" / "a.bin", std::string(10000, 'a'));
    put(scratch() / "qb" / "save" / "T" / "b.bin", std::string(20000, 'b'));
    std::string partfile = be32(3) + be32(16384) + be32(0xFFFFFFFFu) + be32(0) + be32(0xFFFFFFFFu);
    partfile.resize(1024, '\0');
    partfile += std::string(16384, 'p');
    put(scratch() / "qb" / "save" / ".T.parts", partfile);
    put(scratch() / "qb" / "BT_backup" / "0123456789abcdef0123456789abcdef01234567.torrent",
        std::string("d4:infod6:lengthi10000e4:name1:a12:piece lengthi16384e6:pieces20:") + std::string(20, '\xff') + "ee");
}

std::string with_roots(std::string_view line) {
    const std::string qb = (scratch() / "qb").string(), sync = (scratch() / "sync").string();
    std::string out;
    for (std::size_t i = 0; i < line.size(); ++i) {
        if (line[i] == '$' && i + 1 < line.size() && (line[i + 1] == 'Q' || line[i + 1] == 'S')) {
            out += line[i + 1] == 'Q' ? qb : sync;
            ++i;
        } else {
            out += line[i];
        }
    }
    return out;
}

void check_round_trip(const Message& m) {
    auto back = decode(encode(m));
    check(back.ok());
    check(back.value().index() == m.index());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    rebuild_scratch();
    auto roots = RootSet::open({(scratch() / "qb").string(), (scratch() / "sync").string()});
    check(roots.ok());
    Server server(std::move(roots).value());
    std::string_view input(reinterpret_cast<const char*>(data), size);
    for (int n = 0; n < 4 && !input.empty(); ++n) {
        std::size_t nl = input.find('\n');
        std::string_view line = input.substr(0, nl);
        input.remove_prefix(nl == std::string_view::npos ? input.size() : nl + 1);
        const bool cancelled = !line.empty() && line.front() == '!';
        if (cancelled) line.remove_prefix(1);
        auto msg = decode(with_roots(line));
        if (!msg.ok()) continue;
        const auto* request = std::get_if<Request>(&msg.value());
        if (!request) continue;
        std::atomic<bool> cancel{cancelled};
        Response response = server.handle(*request, [](const Progress& p) { check_round_trip(Message{p}); }, cancel);
        check(response.id == request->id);
        check(response.ok || response.error.code != "INTERNAL");
        check_round_trip(Message{response});
    }
    return 0;
}
