#pragma once
// Selection: a set of qBittorrent file indices (pad files excluded), kept normalized — sorted,
// coalesced, inclusive ranges — so equal sets always compare and print equal.
//
// Text form: "0-3,7,9-12" (ascending, coalesced; the empty set is ""). parse() also accepts
// unsorted or overlapping input ("7,0-3,2") and normalizes it; it rejects empty items,
// reversed ranges ("3-1"), signs, spaces and numbers above 2^32-1 (code SELECTION_INVALID).
//
// JSON form (stable): {"ranges": "0-3,7", "count": 5}. from_json() accepts that object or the
// bare text form as a JSON string; `count` is informational and checked when present.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"

namespace archctl::torrent {

class FileModel;

class Selection {
public:
    struct Range {
        std::uint32_t first = 0;
        std::uint32_t last = 0;  // inclusive
        friend bool operator==(const Range&, const Range&) = default;
    };

    Selection() = default;
    // Indices 0 .. count-1.
    [[nodiscard]] static Selection all(std::size_t count);
    // Any indices, any order, duplicates allowed.
    [[nodiscard]] static Selection of(std::vector<std::uint32_t> indices);
    [[nodiscard]] static Selection of_ranges(std::vector<Range> ranges);
    [[nodiscard]] static Result<Selection> parse(std::string_view text);
    [[nodiscard]] static Result<Selection> from_json(const nlohmann::json& j);

    // Canonical text form.
    [[nodiscard]] std::string to_string() const;
    [[nodiscard]] nlohmann::json to_json() const;

    const std::vector<Range>& ranges() const { return m_ranges; }
    bool empty() const { return m_ranges.empty(); }
    // Number of indices in the set.
    [[nodiscard]] std::uint64_t count() const;
    [[nodiscard]] bool contains(std::uint32_t index) const;
    // All indices, ascending.
    [[nodiscard]] std::vector<std::uint32_t> indices() const;
    // Largest index + 1 (0 for the empty set).
    [[nodiscard]] std::uint64_t end() const { return m_ranges.empty() ? 0 : std::uint64_t{m_ranges.back().last} + 1; }

    [[nodiscard]] Selection union_with(const Selection& other) const;
    [[nodiscard]] Selection intersection(const Selection& other) const;
    // this − other.
    [[nodiscard]] Selection difference(const Selection& other) const;
    // Indices 0 .. count-1 not in this set.
    [[nodiscard]] Selection complement(std::size_t count) const;
    [[nodiscard]] bool is_subset_of(const Selection& other) const;

    // Error SELECTION_OUT_OF_RANGE when an index is >= file_count.
    [[nodiscard]] Status check_within(std::size_t file_count) const;
    // Sum of the sizes of the selected files. Precondition: check_within(model.file_count()).
    [[nodiscard]] std::int64_t bytes(const FileModel& model) const;

    friend bool operator==(const Selection&, const Selection&) = default;

private:
    void normalize();
    std::vector<Range> m_ranges;
};

}  // namespace archctl::torrent
