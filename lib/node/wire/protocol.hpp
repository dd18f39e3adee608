#pragma once
// The node protocol (docs/design.md "Where things run"): JSON lines over a byte stream.
//
// A connection opens with one `hello` line from the node: protocol version, archctl version,
// pid, and per root its filesystem type and id and the proven capabilities (hard link, reflink,
// copy_file_range, sparse files). A node started without --root lists no roots: the caller's
// first request is then `open_roots` naming them (the exec transport always sends one when its
// node has roots configured; a node with --root accepts only roots at or below its own), and
// its result carries the roots as the hello would. The caller then sends requests; each carries an id, an
// operation name and its arguments. While an operation runs the node may send any number of
// `progress` lines for that id (bytes and files so far, so a caller can render a panel and
// enforce byte budgets; a progress line with "keepalive": true only says the operation is
// still running), then exactly one `response` line: ok with a result object, or an error
// with a code and message. A `cancel` line naming a running request's id stops it at the next
// chunk boundary; the operation then answers ok with `"complete": false, "stopped": "cancel"`,
// leaving a state that a rerun of the same request resumes from.
//
//   node → caller  {"type":"hello","protocol":1,"archctl":"0.1.0","pid":42,"roots":[...]}
//   caller → node  {"type":"request","id":1,"op":"open_roots","args":{"roots":["/srv/a","/srv/b"]}}
//   node → caller  {"type":"response","id":1,"ok":true,"result":{"roots":[...]},"io":{...}}
//   caller → node  {"type":"request","id":7,"op":"stage","args":{...}}
//   caller → node  {"type":"cancel","id":7}
//   node → caller  {"type":"progress","id":7,"bytes":..,"bytes_total":..,"files":..,...}
//   node → caller  {"type":"response","id":7,"ok":true,"result":{...},"io":{"rchar":..,"read_bytes":..}}
//   node → caller  {"type":"response","id":7,"ok":false,"error":{"code":"PATH_OUTSIDE_ROOT","message":".."}}
//
// Every response carries the node process's own read counters for the operation (`io`), so tests
// and benchmarks can check the payload read budget of docs/design.md "Performance rules" on either transport.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"

namespace archctl::node {

// 2: the stage, receive_check and merge requests carry the payload layout (job_layout.hpp); a node
// that speaks 1 would stage and look for every file in one directory. 3: a tree request may ask
// for its result in columns (ops_inspect.hpp TreeResult), which a node of 2 would answer with an
// object per file. 4: a torrent's .torrent is read from qBittorrent's BT_backup through the node
// (metainfo_read, ops_inspect.hpp), which a node of 3 would answer UNKNOWN_OPERATION.
inline constexpr int k_protocol_version = 4;

// The longest line either end accepts (lib/node/wire/line_reader.hpp). A line is one whole
// message, so this bounds the largest request and result: a tree of 100,000 files with paths of
// 80 bytes is a 27 MB line (268 bytes a file), its stage request 10 MB; 64 MiB leaves room for
// paths five times as long, and carries a .torrent of up to 48 MiB in base64 (metainfo_read). A
// longer line is refused: `node serve` answers it with an error and reads on, the exec transport
// gives up on the far end that sent it.
inline constexpr std::size_t k_max_line_bytes = std::size_t{64} << 20;

// What a root supports, proven by creating files in it (device ids lie across bind mounts).
struct Capabilities {
    bool hardlink = false;
    bool reflink = false;
    bool copy_file_range = false;
    bool sparse = false;
    std::string probe_error;  // set when the probe could not run (e.g. read-only directory)
};

struct RootInfo {
    std::string path;
    std::string fs_type;  // "ext4", "tmpfs", "xfs", ... or "0x<magic>"
    std::string fs_id;    // statvfs f_fsid, hex
    Capabilities capabilities;
};

struct Hello {
    int protocol = k_protocol_version;
    std::string archctl_version;
    long pid = 0;
    std::vector<RootInfo> roots;
};

struct Request {
    std::uint64_t id = 0;
    std::string op;
    nlohmann::json args = nlohmann::json::object();
};

struct Cancel {
    std::uint64_t id = 0;  // the request to stop
};

struct Progress {
    std::uint64_t id = 0;
    std::uint64_t bytes = 0;         // payload bytes handled so far (linked, cloned, copied, hashed)
    std::uint64_t bytes_total = 0;
    std::uint64_t files = 0;
    std::uint64_t files_total = 0;
    std::uint64_t bytes_copied = 0;  // of `bytes`, those that were copied (the budgeted kind)
    std::string current;             // file being worked on, e.g. "p/11"
    // A keepalive carries only the id: `node serve` sends one when an operation has been
    // silent for a second (hashing or copying one large file), so the caller's timeout
    // measures silence, not the length of the operation. Not a progress report.
    bool keepalive = false;
};

// Receives an operation's progress records.
using ProgressFn = std::function<void(const Progress&)>;

// The node's own read counters over one operation (/proc/self/io deltas).
struct IoCounters {
    std::uint64_t rchar = 0;       // bytes read by read()-like calls, page cache included
    std::uint64_t read_bytes = 0;  // bytes fetched from storage
};

struct Response {
    std::uint64_t id = 0;
    bool ok = true;
    nlohmann::json result = nlohmann::json::object();
    Error error;  // meaningful when !ok
    IoCounters io;

    static Response success(std::uint64_t id, nlohmann::json result);
    static Response failure(std::uint64_t id, Error error);
};

using Message = std::variant<Hello, Request, Cancel, Progress, Response>;

// One line (no trailing newline) for each message type.
[[nodiscard]] std::string encode(const Message& message);
// The same line for a request (with id `id`) or a response, without copying its arguments or its
// result first: a stage request or a receive check of 100,000 files is a JSON tree of ~100 MB.
[[nodiscard]] std::string encode_request(std::uint64_t id, const std::string& op, const nlohmann::json& args);
[[nodiscard]] std::string encode_response(const Response& response);
// Parses one line. Errors: PROTOCOL (not JSON, nested deeper than 64 levels, an envelope number
// that is not an integer, unknown type, missing fields).
[[nodiscard]] Result<Message> decode(std::string_view line);
// Whether `j` holds a number that is not an integer anywhere (no protocol field is one).
[[nodiscard]] bool holds_fraction(const nlohmann::json& j);

nlohmann::json to_json(const Capabilities& c);
nlohmann::json to_json(const RootInfo& r);
RootInfo root_info_from_json(const nlohmann::json& j);

}  // namespace archctl::node
