#include "lib/node/wire/protocol.hpp"

#include <fmt/format.h>

namespace archctl::node {
namespace {

using nlohmann::json;

Error protocol_error(std::string_view cause) {
    return Error(ErrorCode::PROTOCOL, fmt::format("invalid node protocol line: {}", cause));
}

// How deep a line's arrays and objects may nest. No message nests past a handful of levels;
// the limit keeps the recursive parts of the JSON library (copying, printing a value) from
// running out of stack on a line of a million '['.
constexpr std::size_t k_max_depth = 64;

// Whether `line` nests deeper than k_max_depth, by one pass over its bytes (strings skipped).
bool nests_too_deep(std::string_view line) {
    std::size_t depth = 0;
    bool in_string = false, escaped = false;
    for (char c : line) {
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') in_string = true;
        else if (c == '[' || c == '{') {
            if (++depth > k_max_depth) return true;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return false;
}

json encode_hello(const Hello& h) {
    json roots = json::array();
    for (const auto& r : h.roots) roots.push_back(to_json(r));
    return {{"type", "hello"}, {"protocol", h.protocol}, {"archctl", h.archctl_version}, {"pid", h.pid}, {"roots", roots}};
}

json encode_progress(const Progress& p) {
    if (p.keepalive) return {{"type", "progress"}, {"id", p.id}, {"keepalive", true}};
    json j = {{"type", "progress"}, {"id", p.id},       {"bytes", p.bytes},
              {"bytes_total", p.bytes_total}, {"files", p.files}, {"files_total", p.files_total},
              {"bytes_copied", p.bytes_copied}};
    if (!p.current.empty()) j["current"] = p.current;
    return j;
}

// The envelope of a response; a successful one's result is spliced in by encode_response.
json response_envelope(const Response& r) {
    json j = {{"type", "response"}, {"id", r.id}, {"ok", r.ok}};
    if (!r.ok) {
        json e = {{"code", r.error.code}, {"message", r.error.message}};
        if (!r.error.hint.empty()) e["hint"] = r.error.hint;
        j["error"] = e;
    }
    j["io"] = {{"rchar", r.io.rchar}, {"read_bytes", r.io.read_bytes}};
    return j;
}

Capabilities capabilities_from_json(const json& j) {
    Capabilities c;
    c.hardlink = j.value("hardlink", false);
    c.reflink = j.value("reflink", false);
    c.copy_file_range = j.value("copy_file_range", false);
    c.sparse = j.value("sparse", false);
    c.probe_error = j.value("probe_error", "");
    return c;
}

Hello decode_hello(const json& j) {
    Hello h;
    h.protocol = j.at("protocol").get<int>();
    h.archctl_version = j.value("archctl", "");
    h.pid = j.value("pid", 0L);
    for (const auto& r : j.value("roots", json::array())) h.roots.push_back(root_info_from_json(r));
    return h;
}

Progress decode_progress(const json& j) {
    Progress p;
    p.id = j.at("id").get<std::uint64_t>();
    p.bytes = j.value("bytes", std::uint64_t{0});
    p.bytes_total = j.value("bytes_total", std::uint64_t{0});
    p.files = j.value("files", std::uint64_t{0});
    p.files_total = j.value("files_total", std::uint64_t{0});
    p.bytes_copied = j.value("bytes_copied", std::uint64_t{0});
    p.current = j.value("current", "");
    p.keepalive = j.value("keepalive", false);
    return p;
}

Response decode_response(json& j) {
    Response r;
    r.id = j.at("id").get<std::uint64_t>();
    r.ok = j.at("ok").get<bool>();
    if (r.ok) {
        auto result = j.find("result");
        r.result = result == j.end() ? json::object() : std::move(*result);
    } else {
        const json& e = j.at("error");
        r.error = Error(e.at("code").get<std::string>(), e.value("message", ""), e.value("hint", ""));
    }
    if (auto io = j.find("io"); io != j.end() && io->is_object()) {
        r.io.rchar = io->value("rchar", std::uint64_t{0});
        r.io.read_bytes = io->value("read_bytes", std::uint64_t{0});
    }
    return r;
}

// Invalid UTF-8 in a path must not throw: replace it on the wire.
std::string line_of(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// `envelope` as one line with `payload` as the value of `key`: the envelope written with a null
// there (keys in the library's sorted order), the null replaced by the payload's own text, which
// is written straight into the line (a large payload's text is never held twice).
std::string splice(json envelope, const char* key, const json& payload) {
    envelope[key] = nullptr;
    const std::string frame = line_of(envelope);
    const std::string slot = fmt::format("\"{}\":null", key);
    const auto at = frame.find(slot) + slot.size() - 4;
    std::string line = frame.substr(0, at);
    nlohmann::detail::serializer<json> writer(nlohmann::detail::output_adapter<char, std::string>(line), ' ', json::error_handler_t::replace);
    writer.dump(payload, /*pretty_print=*/false, /*ensure_ascii=*/false, /*indent_step=*/0);
    line.append(frame, at + 4);
    return line;
}

struct Encoder {
    std::string operator()(const Hello& h) const { return line_of(encode_hello(h)); }
    std::string operator()(const Request& r) const { return encode_request(r.id, r.op, r.args); }
    std::string operator()(const Cancel& c) const { return line_of({{"type", "cancel"}, {"id", c.id}}); }
    std::string operator()(const Progress& p) const { return line_of(encode_progress(p)); }
    std::string operator()(const Response& r) const { return encode_response(r); }
};

}  // namespace

Response Response::success(std::uint64_t id, nlohmann::json result) {
    Response r;
    r.id = id;
    r.result = std::move(result);
    return r;
}

Response Response::failure(std::uint64_t id, Error error) {
    Response r;
    r.id = id;
    r.ok = false;
    r.error = std::move(error);
    return r;
}

nlohmann::json to_json(const Capabilities& c) {
    json j = {{"hardlink", c.hardlink}, {"reflink", c.reflink}, {"copy_file_range", c.copy_file_range}, {"sparse", c.sparse}};
    if (!c.probe_error.empty()) j["probe_error"] = c.probe_error;
    return j;
}

nlohmann::json to_json(const RootInfo& r) {
    return {{"path", r.path}, {"fs_type", r.fs_type}, {"fs_id", r.fs_id}, {"capabilities", to_json(r.capabilities)}};
}

std::string encode(const Message& message) { return std::visit(Encoder{}, message); }

std::string encode_request(std::uint64_t id, const std::string& op, const nlohmann::json& args) {
    // "args" sorts first, so the null the envelope is written with is the first one in the line.
    return splice({{"type", "request"}, {"id", id}, {"op", op}}, "args", args);
}

std::string encode_response(const Response& r) {
    json envelope = response_envelope(r);
    if (!r.ok) return line_of(envelope);
    // "result" is the only key of a successful response's envelope that can be null.
    return splice(std::move(envelope), "result", r.result);
}

bool holds_fraction(const nlohmann::json& j) {
    if (j.is_number_float()) return true;
    if (j.is_structured())
        for (const auto& item : j)
            if (holds_fraction(item)) return true;
    return false;
}

Result<Message> decode(std::string_view line) {
    if (nests_too_deep(line)) return protocol_error(fmt::format("nested deeper than {} levels", k_max_depth));
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return protocol_error("not a JSON object");
    // The envelope's numbers (ids, counters, the protocol version) are integers, and reading
    // 1e300 into an integer field is undefined behaviour in the JSON library: such a line is
    // refused. A request's args and a response's result are their operation's to read.
    for (const auto& [key, value] : j.items())
        if (key != "args" && key != "result" && holds_fraction(value)) return protocol_error(fmt::format("'{}' holds a number that is not an integer", key));
    try {
        std::string type = j.value("type", "");
        if (type == "hello") return Message{decode_hello(j)};
        if (type == "request") {
            Request r;
            r.id = j.at("id").get<std::uint64_t>();
            r.op = j.at("op").get<std::string>();
            auto args = j.find("args");
            r.args = args == j.end() ? json::object() : std::move(*args);
            if (!r.args.is_object()) return protocol_error("'args' is not an object");
            return Message{std::move(r)};
        }
        if (type == "cancel") return Message{Cancel{j.at("id").get<std::uint64_t>()}};
        if (type == "progress") return Message{decode_progress(j)};
        if (type == "response") return Message{decode_response(j)};
        return protocol_error(fmt::format("unknown message type '{}'", type));
    } catch (const json::exception& e) {
        return protocol_error(e.what());
    }
}

RootInfo root_info_from_json(const nlohmann::json& r) {
    RootInfo info;
    info.path = r.at("path").get<std::string>();
    info.fs_type = r.value("fs_type", "");
    info.fs_id = r.value("fs_id", "");
    info.capabilities = capabilities_from_json(r.value("capabilities", json::object()));
    return info;
}

}  // namespace archctl::node
