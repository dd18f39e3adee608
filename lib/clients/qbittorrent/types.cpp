#include "lib/clients/qbittorrent/types.hpp"

#include <algorithm>
#include <map>
#include <string_view>

namespace archctl::clients::qbittorrent {
namespace {

// Both spellings are accepted whatever the server version (a 4.x name never means something
// else on 5.x), so the mapping needs no version.
const std::map<std::string, RunState, std::less<>>& state_table() {
    static const std::map<std::string, RunState, std::less<>> table = {
        {"uploading", RunState::running},      {"stalledUP", RunState::running},
        {"forcedUP", RunState::running},       {"pausedUP", RunState::stopped},
        {"stoppedUP", RunState::stopped},      {"pausedDL", RunState::stopped},
        {"stoppedDL", RunState::stopped},      {"checkingUP", RunState::checking},
        {"checkingDL", RunState::checking},    {"checkingResumeData", RunState::checking},
        {"downloading", RunState::downloading}, {"stalledDL", RunState::downloading},
        {"forcedDL", RunState::downloading},   {"error", RunState::error},
        {"missingFiles", RunState::missing_files}, {"moving", RunState::moving},
        {"metaDL", RunState::metadata},        {"forcedMetaDL", RunState::metadata},
        {"queuedUP", RunState::queued},        {"queuedDL", RunState::queued},
    };
    return table;
}

std::string trim_spaces(std::string_view text) {
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
    return std::string(text);
}

std::string str(const nlohmann::json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::int64_t int64(const nlohmann::json& o, const char* key) {
    auto it = o.find(key);
    if (it == o.end() || !it->is_number()) return 0;
    if (it->is_number_float()) return static_cast<std::int64_t>(it->get<double>());
    return it->get<std::int64_t>();
}

// A time or duration where qBittorrent writes -1 or 0 for "never": 0 for both.
std::int64_t positive(const nlohmann::json& o, const char* key) {
    return std::max<std::int64_t>(int64(o, key), 0);
}

double real(const nlohmann::json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_number() ? it->get<double>() : 0.0;
}

bool boolean(const nlohmann::json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace

RunState parse_run_state(const std::string& state) {
    const auto& table = state_table();
    auto it = table.find(state);
    return it == table.end() ? RunState::unknown : it->second;
}

std::string to_string(RunState state) {
    switch (state) {
        case RunState::running: return "running";
        case RunState::stopped: return "stopped";
        case RunState::checking: return "checking";
        case RunState::downloading: return "downloading";
        case RunState::error: return "error";
        case RunState::missing_files: return "missing_files";
        case RunState::moving: return "moving";
        case RunState::metadata: return "metadata";
        case RunState::queued: return "queued";
        case RunState::unknown: return "unknown";
    }
    return "unknown";
}

bool is_busy(RunState state) {
    return state == RunState::checking || state == RunState::moving || state == RunState::metadata ||
           state == RunState::unknown;
}

bool is_started(RunState state) {
    return state == RunState::running || state == RunState::downloading || state == RunState::metadata ||
           state == RunState::queued;
}

std::vector<std::uint32_t> selected_files(const std::vector<TorrentFile>& files) {
    std::vector<std::uint32_t> out;
    for (const auto& f : files) if (f.priority > 0) out.push_back(f.index);
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::uint32_t> complete_files(const std::vector<TorrentFile>& files) {
    std::vector<std::uint32_t> out;
    for (const auto& f : files) if (f.priority > 0 && f.progress == 1.0) out.push_back(f.index);
    std::sort(out.begin(), out.end());
    return out;
}

TorrentInfo parse_torrent_info(const nlohmann::json& o, const std::string& id) {
    TorrentInfo t;
    if (!o.is_object()) return t;
    t.id = id.empty() ? str(o, "hash") : id;
    t.infohash_v1 = str(o, "infohash_v1");
    t.infohash_v2 = str(o, "infohash_v2");
    t.name = str(o, "name");
    t.save_path = str(o, "save_path");
    t.content_path = str(o, "content_path");
    t.download_path = str(o, "download_path");
    t.state = str(o, "state");
    t.run_state = parse_run_state(t.state);
    t.progress = real(o, "progress");
    t.amount_left = int64(o, "amount_left");
    t.size = int64(o, "size");
    t.total_size = int64(o, "total_size");
    t.auto_tmm = boolean(o, "auto_tmm");
    t.category = str(o, "category");
    t.added_on = positive(o, "added_on");
    t.completion_on = positive(o, "completion_on");
    t.last_activity = positive(o, "last_activity");
    t.seeding_time = positive(o, "seeding_time");
    t.ratio = real(o, "ratio");
    auto limit = [&o](const char* key, double missing) {
        auto it = o.find(key);
        return it != o.end() && it->is_number() ? it->get<double>() : missing;
    };
    t.ratio_limit = limit("ratio_limit", -2);
    t.seeding_time_limit = static_cast<std::int64_t>(limit("seeding_time_limit", -2));
    t.inactive_seeding_time_limit = static_cast<std::int64_t>(limit("inactive_seeding_time_limit", -1));
    t.share_limit_action = str(o, "share_limit_action");
    if (auto it = o.find("max_ratio"); it != o.end() && it->is_number()) t.max_ratio = it->get<double>();
    if (auto it = o.find("max_seeding_time"); it != o.end() && it->is_number()) t.max_seeding_time = static_cast<std::int64_t>(it->get<double>());
    if (auto it = o.find("max_inactive_seeding_time"); it != o.end() && it->is_number())
        t.max_inactive_seeding_time = static_cast<std::int64_t>(it->get<double>());
    std::string tags = str(o, "tags");
    for (std::size_t start = 0; start < tags.size();) {
        std::size_t comma = tags.find(',', start);
        std::string tag = trim_spaces(std::string_view(tags).substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (!tag.empty()) t.tags.push_back(tag);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return t;
}

std::vector<TorrentFile> parse_files(const nlohmann::json& array) {
    std::vector<TorrentFile> files;
    if (!array.is_array()) return files;
    files.reserve(array.size());
    for (const auto& o : array) {
        if (!o.is_object()) continue;
        TorrentFile f;
        f.index = static_cast<std::uint32_t>(std::max<std::int64_t>(int64(o, "index"), 0));
        f.name = str(o, "name");
        f.size = int64(o, "size");
        f.progress = real(o, "progress");
        f.priority = static_cast<int>(int64(o, "priority"));
        files.push_back(std::move(f));
    }
    return files;
}

namespace {

// SAX events of a torrents/files array into TorrentFile rows, as parse_files reads the document:
// only the elements that are objects count, only their top-level keys are read, a field of
// another type reads as its default, and a repeated key's last value wins.
class FilesSax final : public nlohmann::json_sax<nlohmann::json> {
public:
    std::vector<TorrentFile> files;
    bool top_is_array = false;

    bool null() override { return scalar(Scalar{}); }
    bool boolean(bool) override { return scalar(Scalar{}); }
    bool number_integer(number_integer_t v) override { return scalar(Scalar{Kind::number, static_cast<std::int64_t>(v), static_cast<double>(v)}); }
    bool number_unsigned(number_unsigned_t v) override {
        return scalar(Scalar{Kind::number, static_cast<std::int64_t>(v), static_cast<double>(v)});
    }
    bool number_float(number_float_t v, const string_t&) override {
        return scalar(Scalar{Kind::number, static_cast<std::int64_t>(v), static_cast<double>(v)});
    }
    bool string(string_t& v) override {
        if (in_field()) {
            m_key_string = std::move(v);
            return scalar(Scalar{Kind::string, 0, 0.0});
        }
        return scalar(Scalar{});
    }
    bool binary(binary_t&) override { return scalar(Scalar{}); }
    bool start_object(std::size_t) override {
        if (m_depth == 1 && top_is_array) {
            files.emplace_back();
            m_in_file = true;
        } else if (in_field()) {
            reset_field();
        }
        ++m_depth;
        return true;
    }
    bool key(string_t& k) override {
        if (m_in_file && m_depth == 2) m_key = std::move(k);
        return true;
    }
    bool end_object() override {
        --m_depth;
        if (m_depth == 1) m_in_file = false;
        return true;
    }
    bool start_array(std::size_t) override {
        if (m_depth == 0) top_is_array = true;
        else if (in_field()) reset_field();
        ++m_depth;
        return true;
    }
    bool end_array() override {
        --m_depth;
        return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

private:
    enum class Kind { other, number, string };
    struct Scalar {
        Kind kind = Kind::other;
        std::int64_t integer = 0;
        double real = 0.0;
    };

    bool in_field() const { return m_in_file && m_depth == 2; }
    // A nested array or object as a field's value: the field reads as its default.
    void reset_field() { scalar(Scalar{}); }

    bool scalar(const Scalar& v) {
        if (!in_field()) return true;
        TorrentFile& f = files.back();
        const bool number = v.kind == Kind::number;
        if (m_key == "index") f.index = static_cast<std::uint32_t>(std::max<std::int64_t>(number ? v.integer : 0, 0));
        else if (m_key == "name") f.name = v.kind == Kind::string ? std::move(m_key_string) : std::string();
        else if (m_key == "size") f.size = number ? v.integer : 0;
        else if (m_key == "progress") f.progress = number ? v.real : 0.0;
        else if (m_key == "priority") f.priority = static_cast<int>(number ? v.integer : 0);
        return true;
    }

    std::size_t m_depth = 0;
    bool m_in_file = false;
    std::string m_key;
    std::string m_key_string;
};

}  // namespace

std::optional<std::vector<TorrentFile>> parse_files_body(std::string_view body) {
    FilesSax sax;
    if (!nlohmann::json::sax_parse(body, &sax, nlohmann::json::input_format_t::json, false)) return std::nullopt;
    if (!sax.top_is_array) return std::vector<TorrentFile>{};
    return std::move(sax.files);
}

TorrentProperties parse_properties(const nlohmann::json& o) {
    TorrentProperties p;
    if (!o.is_object()) return p;
    p.id = str(o, "hash");
    p.name = str(o, "name");
    p.infohash_v1 = str(o, "infohash_v1");
    p.infohash_v2 = str(o, "infohash_v2");
    p.save_path = str(o, "save_path");
    p.download_path = str(o, "download_path");
    p.total_size = int64(o, "total_size");
    p.piece_size = int64(o, "piece_size");
    p.pieces_num = int64(o, "pieces_num");
    p.pieces_have = int64(o, "pieces_have");
    p.raw = o;
    return p;
}

BuildInfo parse_build_info(const nlohmann::json& o) {
    BuildInfo b;
    if (!o.is_object()) return b;
    b.qt = str(o, "qt");
    b.libtorrent = str(o, "libtorrent");
    b.boost = str(o, "boost");
    b.openssl = str(o, "openssl");
    b.zlib = str(o, "zlib");
    b.bitness = static_cast<int>(int64(o, "bitness"));
    b.raw = o;
    return b;
}

}  // namespace archctl::clients::qbittorrent
