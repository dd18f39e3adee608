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
// parse() runs the same checks without building anything and returns a View: the value as its
// exact bytes in the input. Walking a View re-reads those bytes (they are known to be canonical),
// so a torrent of a million files costs no memory per value. decode() builds a Value tree.
//
// encode() writes canonical bencoding of a Value (it sorts dictionary keys itself); Writer
// writes it piece by piece, for metainfo archctl creates.

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

class View;

// One dictionary entry of a View.
struct ViewEntry;

// A value checked by parse(): a view of its exact encoding in the input, which must outlive it.
// A default View is absent (no type; every accessor gives an empty value).
class View {
public:
    View() = default;

    bool present() const { return !m_bytes.empty(); }
    Type type() const;
    bool is_integer() const { return present() && m_bytes.front() == 'i'; }
    bool is_string() const { return present() && m_bytes.front() >= '0' && m_bytes.front() <= '9'; }
    bool is_list() const { return present() && m_bytes.front() == 'l'; }
    bool is_dict() const { return present() && m_bytes.front() == 'd'; }

    // Accessors; the one that does not match type() returns a zero/empty value.
    std::int64_t as_integer() const;
    std::string_view as_string() const;
    // The exact encoding of this value.
    std::string_view bytes() const { return m_bytes; }

    // Items of a list / entries of a dictionary, in input order; empty ranges otherwise.
    class ListIterator;
    class DictIterator;
    struct ListRange {
        std::string_view body;
        ListIterator begin() const;
        ListIterator end() const;
    };
    struct DictRange {
        std::string_view body;
        DictIterator begin() const;
        DictIterator end() const;
    };
    ListRange items() const;
    DictRange entries() const;
    // Number of items or entries (walks the value).
    std::size_t size() const;

    // Dictionary lookup by raw key; absent when missing or when this is not a dictionary.
    View find(std::string_view key) const;

    // The value that starts `bytes`, which parse() has checked (a part of a checked input).
    static View starting(std::string_view bytes);

private:
    explicit View(std::string_view bytes) : m_bytes(bytes) {}
    std::string_view m_bytes;
};

struct ViewEntry {
    std::string_view key;
    View value;
};

class View::ListIterator {
public:
    ListIterator() = default;
    ListIterator(std::string_view rest) : m_rest(rest) { load(); }
    View operator*() const { return m_value; }
    const View* operator->() const { return &m_value; }
    ListIterator& operator++();
    bool operator==(const ListIterator& o) const { return m_rest.data() == o.m_rest.data(); }
    bool operator!=(const ListIterator& o) const { return !(*this == o); }

private:
    void load();
    std::string_view m_rest;  // from this item to the end of the list body
    View m_value;
};

class View::DictIterator {
public:
    DictIterator() = default;
    DictIterator(std::string_view rest) : m_rest(rest) { load(); }
    const ViewEntry& operator*() const { return m_entry; }
    const ViewEntry* operator->() const { return &m_entry; }
    DictIterator& operator++();
    bool operator==(const DictIterator& o) const { return m_rest.data() == o.m_rest.data(); }
    bool operator!=(const DictIterator& o) const { return !(*this == o); }

private:
    void load();
    std::string_view m_rest;  // from this entry's key to the end of the dictionary body
    ViewEntry m_entry;
    std::size_t m_length = 0;  // bytes of key and value
};

// Resource limits for decode(); exceeding one is an error, not a truncation.
struct Limits {
    std::size_t max_input = 128u << 20;   // bytes
    std::size_t max_depth = 100;          // nesting of lists/dicts (the top value is depth 1)
    std::size_t max_items = 8'000'000;    // total number of values
};

// Checks that `input` is exactly one canonical value (the checks and errors of decode()) and
// returns it as a View into `input`.
[[nodiscard]] Result<View> parse(std::string_view input, const Limits& limits = {});

// Decodes exactly one canonical value covering all of `input`. Errors have code TORRENT_INVALID
// and a message like "invalid bencoding: dictionary keys not sorted at offset 42".
[[nodiscard]] Result<Value> decode(std::string_view input, const Limits& limits = {});

// Canonical encoding of `value` (dictionary keys sorted as raw bytes; duplicate keys keep the
// last one set).
[[nodiscard]] std::string encode(const Value& value);

// Appends canonical bencoding piece by piece. The caller writes dictionary keys in ascending raw
// byte order; nothing is checked.
class Writer {
public:
    explicit Writer(std::string& out) : m_out(out) {}
    void integer(std::int64_t v);
    void string(std::string_view v);
    void begin_list() { m_out.push_back('l'); }
    void begin_dict() { m_out.push_back('d'); }
    void end() { m_out.push_back('e'); }
    // A dictionary key (a string).
    void key(std::string_view k) { string(k); }
    // Already-encoded bytes.
    void raw(std::string_view bytes) { m_out.append(bytes); }

private:
    std::string& m_out;
};

}  // namespace archctl::torrent::bencode
