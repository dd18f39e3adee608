#include "lib/torrent/bencode.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace archctl::torrent::bencode {

Value Value::integer(std::int64_t v) {
    Value out;
    out.m_type = Type::integer;
    out.m_int = v;
    return out;
}

Value Value::string(std::string v) {
    Value out;
    out.m_type = Type::string;
    out.m_string = std::move(v);
    return out;
}

Value Value::list() { return list(std::vector<Value>{}); }

Value Value::dict() { return dict(std::vector<DictEntry>{}); }

Value Value::list(std::vector<Value> items) {
    Value out;
    out.m_type = Type::list;
    out.m_list = std::move(items);
    return out;
}

Value Value::dict(std::vector<DictEntry> entries) {
    Value out;
    out.m_type = Type::dict;
    out.m_dict = std::move(entries);
    return out;
}

const Value* Value::find(std::string_view key) const {
    if (m_type != Type::dict) return nullptr;
    // Decoded dictionaries are sorted; built ones may not be, so fall back to a scan.
    auto it = std::lower_bound(m_dict.begin(), m_dict.end(), key,
                               [](const DictEntry& e, std::string_view k) { return std::string_view(e.key) < k; });
    if (it != m_dict.end() && it->key == key) return &it->value;
    for (const auto& e : m_dict)
        if (e.key == key) return &e.value;
    return nullptr;
}

Value& Value::set(std::string key, Value value) {
    m_type = Type::dict;
    for (auto& e : m_dict) {
        if (e.key == key) {
            e.value = std::move(value);
            return e.value;
        }
    }
    m_dict.push_back(DictEntry{std::move(key), std::move(value)});
    return m_dict.back().value;
}

namespace {

// Checks canonical bencoding in one pass; builds nothing.
class Validator {
public:
    Validator(std::string_view in, const Limits& limits) : m_in(in), m_limits(limits) {}

    Status run() {
        if (m_in.size() > m_limits.max_input)
            return fail(0, fmt::format("input of {} bytes exceeds the limit of {} bytes", m_in.size(),
                                       m_limits.max_input));
        if (m_in.empty()) return fail(0, "empty input");
        if (!check_value(1)) return take_error();
        if (m_pos != m_in.size()) return fail(m_pos, "trailing data after the value");
        return ok_status();
    }

private:
    Error take_error() { return std::move(m_error); }

    Error fail(std::size_t at, std::string_view cause) {
        return Error{"TORRENT_INVALID", fmt::format("invalid bencoding: {} at offset {}", cause, at)};
    }
    bool set_error(std::size_t at, std::string_view cause) {
        m_error = fail(at, cause);
        return false;
    }

    bool check_value(std::size_t depth) {
        if (++m_items > m_limits.max_items) return set_error(m_pos, "too many values");
        if (m_pos >= m_in.size()) return set_error(m_pos, "truncated input");
        char c = m_in[m_pos];
        if (c == 'i') return check_integer();
        if (c >= '0' && c <= '9') {
            std::string_view ignored;
            return check_string(ignored);
        }
        if (c == 'l' || c == 'd') {
            if (depth > m_limits.max_depth) return set_error(m_pos, "nesting deeper than the limit");
            return c == 'l' ? check_list(depth) : check_dict(depth);
        }
        if (c == '-') return set_error(m_pos, "negative string length");
        return set_error(m_pos, fmt::format("unexpected byte 0x{:02x}", static_cast<unsigned char>(c)));
    }

    // Reads the digits of a canonical non-negative decimal into `value`; m_pos at first digit.
    bool parse_digits(std::uint64_t max, std::uint64_t& value, std::string_view what) {
        std::size_t start = m_pos;
        value = 0;
        while (m_pos < m_in.size() && m_in[m_pos] >= '0' && m_in[m_pos] <= '9') {
            auto digit = static_cast<std::uint64_t>(m_in[m_pos] - '0');
            if (value > (max - digit) / 10) return set_error(start, fmt::format("{} out of range", what));
            value = value * 10 + digit;
            ++m_pos;
        }
        if (m_pos == start) return set_error(start, fmt::format("{} has no digits", what));
        if (m_in[start] == '0' && m_pos - start > 1) return set_error(start, fmt::format("{} has a leading zero", what));
        return true;
    }

    bool check_integer() {
        std::size_t start = m_pos++;
        bool negative = false;
        if (m_pos < m_in.size() && m_in[m_pos] == '-') {
            negative = true;
            ++m_pos;
        }
        std::uint64_t magnitude = 0;
        auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + (negative ? 1u : 0u);
        if (m_pos >= m_in.size()) return set_error(m_pos, "truncated input");
        if (!parse_digits(max, magnitude, "integer")) return false;
        if (m_pos >= m_in.size()) return set_error(m_pos, "truncated input");
        if (m_in[m_pos] != 'e') return set_error(m_pos, "integer not terminated by 'e'");
        ++m_pos;
        if (negative && magnitude == 0) return set_error(start, "negative zero integer");
        return true;
    }

    bool check_string(std::string_view& out) {
        std::size_t start = m_pos;
        std::uint64_t len = 0;
        if (!parse_digits(m_in.size(), len, "string length")) return false;
        if (m_pos >= m_in.size()) return set_error(m_pos, "truncated input");
        if (m_in[m_pos] != ':') return set_error(m_pos, "string length not followed by ':'");
        ++m_pos;
        if (len > m_in.size() - m_pos) return set_error(start, "truncated string");
        out = m_in.substr(m_pos, static_cast<std::size_t>(len));
        m_pos += static_cast<std::size_t>(len);
        return true;
    }

    bool check_list(std::size_t depth) {
        ++m_pos;
        while (true) {
            if (m_pos >= m_in.size()) return set_error(m_pos, "truncated input");
            if (m_in[m_pos] == 'e') break;
            if (!check_value(depth + 1)) return false;
        }
        ++m_pos;
        return true;
    }

    bool check_dict(std::size_t depth) {
        ++m_pos;
        std::string_view previous;
        bool first = true;
        while (true) {
            if (m_pos >= m_in.size()) return set_error(m_pos, "truncated input");
            if (m_in[m_pos] == 'e') break;
            std::size_t key_at = m_pos;
            if (m_in[m_pos] < '0' || m_in[m_pos] > '9') return set_error(m_pos, "dictionary key is not a string");
            std::string_view key;
            if (!check_string(key)) return false;
            if (!first) {
                int order = previous.compare(key);
                if (order == 0) return set_error(key_at, "duplicate dictionary key");
                if (order > 0) return set_error(key_at, "dictionary keys not sorted");
            }
            if (m_pos >= m_in.size()) return set_error(m_pos, "truncated input");
            if (!check_value(depth + 1)) return false;
            previous = key;
            first = false;
        }
        ++m_pos;
        return true;
    }

    std::string_view m_in;
    const Limits& m_limits;
    std::size_t m_pos = 0;
    std::size_t m_items = 0;
    Error m_error;
};

// Length of the checked value that starts `s`, without recursion.
std::size_t value_length(std::string_view s) {
    std::size_t pos = 0;
    std::size_t depth = 0;
    do {
        char c = s[pos];
        if (c == 'i') {
            pos = s.find('e', pos) + 1;
        } else if (c == 'l' || c == 'd') {
            ++depth;
            ++pos;
        } else if (c == 'e') {
            --depth;
            ++pos;
        } else {
            std::size_t len = 0;
            while (s[pos] != ':') len = len * 10 + static_cast<std::size_t>(s[pos++] - '0');
            pos += 1 + len;
        }
    } while (depth > 0);
    return pos;
}

// A checked string's bytes; `s` starts with its length.
std::string_view string_at(std::string_view s) {
    std::size_t colon = s.find(':');
    std::size_t len = 0;
    for (std::size_t i = 0; i < colon; ++i) len = len * 10 + static_cast<std::size_t>(s[i] - '0');
    return s.substr(colon + 1, len);
}

// A Value tree of a checked View; spans are offsets from `base`.
Value to_value(const View& v, const char* base) {
    Value out;
    switch (v.type()) {
    case Type::integer: out = Value::integer(v.as_integer()); break;
    case Type::string: out = Value::string(std::string(v.as_string())); break;
    case Type::list: {
        std::vector<Value> items;
        for (View item : v.items()) items.push_back(to_value(item, base));
        out = Value::list(std::move(items));
        break;
    }
    case Type::dict: {
        std::vector<DictEntry> entries;
        for (const ViewEntry& e : v.entries()) entries.push_back(DictEntry{std::string(e.key), to_value(e.value, base)});
        out = Value::dict(std::move(entries));
        break;
    }
    }
    out.set_span(Span{static_cast<std::size_t>(v.bytes().data() - base), v.bytes().size()});
    return out;
}

void encode_into(const Value& v, std::string& out) {
    switch (v.type()) {
    case Type::integer:
        out += fmt::format("i{}e", v.as_integer());
        break;
    case Type::string:
        out += fmt::format("{}:", v.as_string().size());
        out += v.as_string();
        break;
    case Type::list:
        out.push_back('l');
        for (const auto& item : v.as_list()) encode_into(item, out);
        out.push_back('e');
        break;
    case Type::dict: {
        std::vector<const DictEntry*> sorted;
        for (const auto& e : v.as_dict()) sorted.push_back(&e);
        std::stable_sort(sorted.begin(), sorted.end(),
                         [](const DictEntry* a, const DictEntry* b) { return a->key < b->key; });
        out.push_back('d');
        for (std::size_t i = 0; i < sorted.size(); ++i) {
            if (i + 1 < sorted.size() && sorted[i]->key == sorted[i + 1]->key) continue;  // keep last
            out += fmt::format("{}:", sorted[i]->key.size());
            out += sorted[i]->key;
            encode_into(sorted[i]->value, out);
        }
        out.push_back('e');
        break;
    }
    }
}

}  // namespace

View View::starting(std::string_view bytes) { return View(bytes.substr(0, value_length(bytes))); }

Type View::type() const {
    if (is_list()) return Type::list;
    if (is_dict()) return Type::dict;
    if (is_string()) return Type::string;
    return Type::integer;
}

std::int64_t View::as_integer() const {
    if (!is_integer()) return 0;
    bool negative = m_bytes[1] == '-';
    std::uint64_t magnitude = 0;
    for (std::size_t i = negative ? 2 : 1; m_bytes[i] != 'e'; ++i)
        magnitude = magnitude * 10 + static_cast<std::uint64_t>(m_bytes[i] - '0');
    return negative ? static_cast<std::int64_t>(0u - magnitude) : static_cast<std::int64_t>(magnitude);
}

std::string_view View::as_string() const { return is_string() ? string_at(m_bytes) : std::string_view(); }

View::ListRange View::items() const {
    return ListRange{is_list() ? m_bytes.substr(1, m_bytes.size() - 2) : std::string_view()};
}

View::DictRange View::entries() const {
    return DictRange{is_dict() ? m_bytes.substr(1, m_bytes.size() - 2) : std::string_view()};
}

View::ListIterator View::ListRange::begin() const { return ListIterator(body); }
View::ListIterator View::ListRange::end() const { return ListIterator(body.substr(body.size())); }
View::DictIterator View::DictRange::begin() const { return DictIterator(body); }
View::DictIterator View::DictRange::end() const { return DictIterator(body.substr(body.size())); }

std::size_t View::size() const {
    std::size_t n = 0;
    if (is_list())
        for (auto it = items().begin(), end = items().end(); it != end; ++it) ++n;
    if (is_dict())
        for (auto it = entries().begin(), end = entries().end(); it != end; ++it) ++n;
    return n;
}

View View::find(std::string_view key) const {
    for (const ViewEntry& e : entries()) {
        int order = e.key.compare(key);
        if (order == 0) return e.value;
        if (order > 0) break;  // checked dictionaries are sorted
    }
    return View();
}

void View::ListIterator::load() { m_value = m_rest.empty() ? View() : View::starting(m_rest); }

View::ListIterator& View::ListIterator::operator++() {
    m_rest.remove_prefix(m_value.bytes().size());
    load();
    return *this;
}

void View::DictIterator::load() {
    if (m_rest.empty()) {
        m_entry = ViewEntry{};
        m_length = 0;
        return;
    }
    std::size_t key_length = value_length(m_rest);
    m_entry.key = string_at(m_rest);
    m_entry.value = View::starting(m_rest.substr(key_length));
    m_length = key_length + m_entry.value.bytes().size();
}

View::DictIterator& View::DictIterator::operator++() {
    m_rest.remove_prefix(m_length);
    load();
    return *this;
}

Result<View> parse(std::string_view input, const Limits& limits) {
    ARCHCTL_TRY_STATUS(Validator(input, limits).run());
    return View::starting(input);
}

Result<Value> decode(std::string_view input, const Limits& limits) {
    ARCHCTL_TRY_ASSIGN(View v, parse(input, limits));
    return to_value(v, input.data());
}

void Writer::integer(std::int64_t v) { fmt::format_to(std::back_inserter(m_out), "i{}e", v); }

void Writer::string(std::string_view v) {
    fmt::format_to(std::back_inserter(m_out), "{}:", v.size());
    m_out.append(v);
}

std::string encode(const Value& value) {
    std::string out;
    encode_into(value, out);
    return out;
}

}  // namespace archctl::torrent::bencode
