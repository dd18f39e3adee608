#pragma once
// Bencoding (BEP 3): a strict decoder and an encoder.
//
// decode() accepts only canonical bencoding — dictionary keys are byte strings in strictly
// ascending raw byte order without duplicates, integers have no leading zeros and no "-0",
// string lengths are plain non-negative decimals — and the whole input must be exactly one
// value. Anything else is an error (code TORRENT_INVALID), never silently repaired, because the
// info hash is the SHA-1/SHA-256 of the exact `info` bytes: every decoded Value records the byte
// span it occupied in the input so callers can hash those bytes without re-encoding.
//
// encode() writes canonical bencoding of a Value (it sorts dictionary keys itself), for
// metainfo archctl creates.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/result.hpp"

namespace archctl::torrent::bencode {

enum class Type { integer, string, list, dict };

// Where a decoded value sat in the input: input.substr(offset, length) is its exact encoding.
struct Span {
    std::size_t offset = 0;
    std::size_t length = 0;
};

struct DictEntry;

// One bencoded value. Strings hold raw bytes (not necessarily UTF-8).
class Value {
public:
    Value() = default;
    static Value integer(std::int64_t v);
    static Value string(std::string v);
    static Value list();
    static Value list(std::vector<Value> items);
    static Value dict();
    static Value dict(std::vector<DictEntry> entries);

    Type type() const { return m_type; }
    bool is_integer() const { return m_type == Type::integer; }
    bool is_string() const { return m_type == Type::string; }
    bool is_list() const { return m_type == Type::list; }
    bool is_dict() const { return m_type == Type::dict; }

    // Accessors; calling the one that does not match type() returns a zero/empty value.
    std::int64_t as_integer() const { return m_int; }
    const std::string& as_string() const { return m_string; }
    const std::vector<Value>& as_list() const { return m_list; }
    const std::vector<DictEntry>& as_dict() const { return m_dict; }
    std::vector<Value>& mutable_list() { return m_list; }
    std::vector<DictEntry>& mutable_dict() { return m_dict; }

    // Dictionary lookup by raw key; nullptr when absent or when this is not a dictionary.
    const Value* find(std::string_view key) const;
    // Adds or replaces a dictionary entry (for building values to encode).
    Value& set(std::string key, Value value);

    // The byte span of this value in the decoded input; {0,0} for values built in code.
    Span span() const { return m_span; }
    void set_span(Span s) { m_span = s; }

private:
    Type m_type = Type::integer;
    std::int64_t m_int = 0;
    std::string m_string;
    std::vector<Value> m_list;
    std::vector<DictEntry> m_dict;
    Span m_span;
};

struct DictEntry {
    std::string key;
    Value value;
};

// Resource limits for decode(); exceeding one is an error, not a truncation.
struct Limits {
    std::size_t max_input = 128u << 20;   // bytes
    std::size_t max_depth = 100;          // nesting of lists/dicts (the top value is depth 1)
    std::size_t max_items = 8'000'000;    // total number of values
};

// Decodes exactly one canonical value covering all of `input`. Errors have code TORRENT_INVALID
// and a message like "invalid bencoding: dictionary keys not sorted at offset 42".
[[nodiscard]] Result<Value> decode(std::string_view input, const Limits& limits = {});

// Canonical encoding of `value` (dictionary keys sorted as raw bytes; duplicate keys keep the
// last one set).
[[nodiscard]] std::string encode(const Value& value);

}  // namespace archctl::torrent::bencode
