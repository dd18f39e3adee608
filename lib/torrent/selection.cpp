#include "lib/torrent/selection.hpp"

#include <algorithm>
#include <charconv>
#include <limits>

#include <fmt/format.h>

#include "lib/torrent/file_model.hpp"

namespace archctl::torrent {

void Selection::normalize() {
    std::sort(m_ranges.begin(), m_ranges.end(), [](const Range& a, const Range& b) { return a.first < b.first; });
    std::vector<Range> out;
    for (const Range& r : m_ranges) {
        if (!out.empty() && std::uint64_t{r.first} <= std::uint64_t{out.back().last} + 1) {
            out.back().last = std::max(out.back().last, r.last);
        } else {
            out.push_back(r);
        }
    }
    m_ranges = std::move(out);
}

Selection Selection::all(std::size_t count) {
    Selection s;
    if (count > 0) s.m_ranges.push_back(Range{0, static_cast<std::uint32_t>(count - 1)});
    return s;
}

Selection Selection::of(std::vector<std::uint32_t> indices) {
    Selection s;
    for (auto i : indices) s.m_ranges.push_back(Range{i, i});
    s.normalize();
    return s;
}

Selection Selection::of_ranges(std::vector<Range> ranges) {
    Selection s;
    for (const Range& r : ranges)
        if (r.first <= r.last) s.m_ranges.push_back(r);
    s.normalize();
    return s;
}

namespace {

Error selection_error(std::string_view text, std::string_view cause) {
    return Error{"SELECTION_INVALID", fmt::format("invalid file selection '{}': {}", text.substr(0, 200), cause),
                 "write file indices like 0-3,7,9-12"};
}

bool parse_index(std::string_view s, std::uint32_t& out) {
    if (s.empty()) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

Result<Selection> Selection::parse(std::string_view text) {
    Selection s;
    if (text.empty()) return s;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        std::size_t comma = text.find(',', pos);
        std::string_view item = text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
        if (item.empty()) return selection_error(text, "empty item");
        std::size_t dash = item.find('-');
        Range r;
        if (dash == std::string_view::npos) {
            if (!parse_index(item, r.first)) return selection_error(text, fmt::format("'{}' is not a file index", item));
            r.last = r.first;
        } else {
            if (!parse_index(item.substr(0, dash), r.first) || !parse_index(item.substr(dash + 1), r.last))
                return selection_error(text, fmt::format("'{}' is not a range of file indices", item));
            if (r.last < r.first) return selection_error(text, fmt::format("range '{}' is reversed", item));
        }
        s.m_ranges.push_back(r);
        if (comma == std::string_view::npos) break;
        pos = comma + 1;
    }
    s.normalize();
    return s;
}

Result<Selection> Selection::from_json(const nlohmann::json& j) {
    if (j.is_string()) return parse(j.get<std::string>());
    if (!j.is_object() || !j.contains("ranges") || !j["ranges"].is_string())
        return Error{"SELECTION_INVALID", "invalid file selection: expected {\"ranges\": \"0-3,7\", \"count\": 5}"};
    ARCHCTL_TRY_ASSIGN(Selection s, parse(j["ranges"].get<std::string>()));
    if (j.contains("count") && (!j["count"].is_number_unsigned() || j["count"].get<std::uint64_t>() != s.count()))
        return Error{"SELECTION_INVALID",
                     fmt::format("invalid file selection '{}': count does not match the ranges", s.to_string())};
    return s;
}

std::string Selection::to_string() const {
    std::string out;
    for (const Range& r : m_ranges) {
        if (!out.empty()) out.push_back(',');
        out += r.first == r.last ? fmt::format("{}", r.first) : fmt::format("{}-{}", r.first, r.last);
    }
    return out;
}

nlohmann::json Selection::to_json() const { return nlohmann::json{{"ranges", to_string()}, {"count", count()}}; }

std::uint64_t Selection::count() const {
    std::uint64_t n = 0;
    for (const Range& r : m_ranges) n += std::uint64_t{r.last} - r.first + 1;
    return n;
}

bool Selection::contains(std::uint32_t index) const {
    auto it = std::upper_bound(m_ranges.begin(), m_ranges.end(), index,
                               [](std::uint32_t i, const Range& r) { return i < r.first; });
    if (it == m_ranges.begin()) return false;
    --it;
    return index <= it->last;
}

std::vector<std::uint32_t> Selection::indices() const {
    std::vector<std::uint32_t> out;
    for (const Range& r : m_ranges)
        for (std::uint64_t i = r.first; i <= r.last; ++i) out.push_back(static_cast<std::uint32_t>(i));
    return out;
}

Selection Selection::union_with(const Selection& other) const {
    Selection s;
    s.m_ranges = m_ranges;
    s.m_ranges.insert(s.m_ranges.end(), other.m_ranges.begin(), other.m_ranges.end());
    s.normalize();
    return s;
}

Selection Selection::intersection(const Selection& other) const {
    Selection s;
    std::size_t i = 0, j = 0;
    while (i < m_ranges.size() && j < other.m_ranges.size()) {
        const Range& a = m_ranges[i];
        const Range& b = other.m_ranges[j];
        std::uint32_t lo = std::max(a.first, b.first);
        std::uint32_t hi = std::min(a.last, b.last);
        if (lo <= hi) s.m_ranges.push_back(Range{lo, hi});
        if (a.last < b.last) ++i;
        else ++j;
    }
    return s;
}

Selection Selection::difference(const Selection& other) const {
    Selection s;
    for (const Range& a : m_ranges) {
        std::uint64_t cur = a.first;
        for (const Range& b : other.m_ranges) {
            if (b.last < cur) continue;
            if (b.first > a.last) break;
            if (b.first > cur) s.m_ranges.push_back(Range{static_cast<std::uint32_t>(cur), b.first - 1});
            cur = std::uint64_t{b.last} + 1;
            if (cur > a.last) break;
        }
        if (cur <= a.last) s.m_ranges.push_back(Range{static_cast<std::uint32_t>(cur), a.last});
    }
    return s;
}

Selection Selection::complement(std::size_t count) const { return all(count).difference(*this); }

bool Selection::is_subset_of(const Selection& other) const { return difference(other).empty(); }

Status Selection::check_within(std::size_t file_count) const {
    if (end() > file_count)
        return Error{"SELECTION_OUT_OF_RANGE",
                     fmt::format("invalid file selection '{}': the torrent has {} files (indices 0-{})", to_string(),
                                 file_count, file_count == 0 ? 0 : file_count - 1)};
    return ok_status();
}

std::int64_t Selection::bytes(const FileModel& model) const {
    std::int64_t total = 0;
    for (const Range& r : m_ranges)
        for (std::uint64_t i = r.first; i <= r.last && i < model.file_count(); ++i)
            total += model.files()[static_cast<std::size_t>(i)].size;
    return total;
}

}  // namespace archctl::torrent
