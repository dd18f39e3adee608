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

class Decoder {
public:
    Decoder(std::string_view in, const Limits& limits) : m_in(in), m_limits(limits) {}

    Result<Value> run() {
        if (m_in.size() > m_limits.max_input)
            return fail(0, fmt::format("input of {} bytes exceeds the limit of {} bytes", m_in.size(),
                                       m_limits.max_input));
        if (m_in.empty()) return fail(0, "empty input");
        Value v;
        if (!parse_value(v, 1)) return take_error();
        if (m_pos != m_in.size()) return fail(m_pos, "trailing data after the value");
        return v;
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

    bool parse_value(Value& out, std::size_t depth) {
        if (++m_items > m_limits.max_items) return set_error(m_pos, "too many values");
        if (m_pos >= m_in.size()) return set_error(m_pos, "truncated input");
        std::size_t start = m_pos;
        char c = m_in[m_pos];
        bool ok = false;
        if (c == 'i') {
            ok = parse_integer(out);
        } else if (c >= '0' && c <= '9') {
            std::string s;
            ok = parse_string(s);
            if (ok) out = Value::string(std::move(s));
        } else if (c == 'l' || c == 'd') {
            if (depth > m_limits.max_depth) return set_error(m_pos, "nesting deeper than the limit");
            ok = c == 'l' ? parse_list(out, depth) : parse_dict(out, depth);
        } else if (c == '-') {
            return set_error(m_pos, "negative string length");
        } else {
            return set_error(m_pos, fmt::format("unexpected byte 0x{:02x}", static_cast<unsigned char>(c)));
        }
        if (!ok) return false;
        out.set_span(Span{start, m_pos - start});
        return true;
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

    bool parse_integer(Value& out) {
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
        std::int64_t v = negative ? static_cast<std::int64_t>(0u - magnitude) : static_cast<std::int64_t>(magnitude);
        out = Value::integer(v);
        return true;
    }

    bool parse_string(std::string& out) {
        std::size_t start = m_pos;
        std::uint64_t len = 0;
        if (!parse_digits(m_in.size(), len, "string length")) return false;
        if (m_pos >= m_in.size()) return set_error(m_pos, "truncated input");
        if (m_in[m_pos] != ':') return set_error(m_pos, "string length not followed by ':'");
        ++m_pos;
        if (len > m_in.size() - m_pos) return set_error(start, "truncated string");
        out.assign(m_in.substr(m_pos, static_cast<std::size_t>(len)));
        m_pos += static_cast<std::size_t>(len);
        return true;
    }

    bool parse_list(Value& out, std::size_t depth) {
        ++m_pos;
        std::vector<Value> items;
        while (true) {
            if (m_pos >= m_in.size()) return set_error(m_pos, "truncated input");
            if (m_in[m_pos] == 'e') break;
            items.emplace_back();
            if (!parse_value(items.back(), depth + 1)) return false;
        }
        ++m_pos;
        out = Value::list(std::move(items));
        return true;
    }

    bool parse_dict(Value& out, std::size_t depth) {
        ++m_pos;
        std::vector<DictEntry> entries;
        while (true) {
            if (m_pos >= m_in.size()) return set_error(m_pos, "truncated input");
            if (m_in[m_pos] == 'e') break;
            std::size_t key_at = m_pos;
            if (m_in[m_pos] < '0' || m_in[m_pos] > '9') return set_error(m_pos, "dictionary key is not a string");
            DictEntry entry;
            if (!parse_string(entry.key)) return false;
            if (!entries.empty()) {
                int order = std::string_view(entries.back().key).compare(entry.key);
                if (order == 0) return set_error(key_at, "duplicate dictionary key");
                if (order > 0) return set_error(key_at, "dictionary keys not sorted");
            }
            if (m_pos >= m_in.size()) return set_error(m_pos, "truncated input");
            if (!parse_value(entry.value, depth + 1)) return false;
            entries.push_back(std::move(entry));
        }
        ++m_pos;
        out = Value::dict(std::move(entries));
        return true;
    }

    std::string_view m_in;
    const Limits& m_limits;
    std::size_t m_pos = 0;
    std::size_t m_items = 0;
    Error m_error;
};

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

Result<Value> decode(std::string_view input, const Limits& limits) { return Decoder(input, limits).run(); }

std::string encode(const Value& value) {
    std::string out;
    encode_into(value, out);
    return out;
}

}  // namespace archctl::torrent::bencode
