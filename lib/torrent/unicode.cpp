#include "lib/torrent/unicode.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace archctl::torrent {
namespace {

struct Decomposition {
    char32_t cp;
    char32_t first;
    char32_t second;  // 0 for a singleton decomposition
    bool composes;    // false for composition exclusions and singletons
};

struct CombiningRange {
    char32_t first;
    char32_t last;
    std::uint8_t ccc;
};

#include "lib/torrent/unicode_tables.inc"

// Hangul syllables (Unicode §3.12), composed and decomposed arithmetically.
constexpr char32_t k_s_base = 0xAC00, k_l_base = 0x1100, k_v_base = 0x1161, k_t_base = 0x11A7;
constexpr char32_t k_l_count = 19, k_v_count = 21, k_t_count = 28;
constexpr char32_t k_n_count = k_v_count * k_t_count, k_s_count = k_l_count * k_n_count;

std::uint8_t combining_class(char32_t cp) {
    if (cp < 0x300) return 0;
    auto it = std::upper_bound(std::begin(k_combining), std::end(k_combining), cp,
                               [](char32_t c, const CombiningRange& r) { return c < r.first; });
    if (it == std::begin(k_combining)) return 0;
    --it;
    return cp <= it->last ? it->ccc : 0;
}

const Decomposition* find_decomposition(char32_t cp) {
    auto it = std::lower_bound(std::begin(k_decompositions), std::end(k_decompositions), cp,
                               [](const Decomposition& d, char32_t c) { return d.cp < c; });
    return it != std::end(k_decompositions) && it->cp == cp ? &*it : nullptr;
}

void decompose(char32_t cp, std::vector<char32_t>& out) {
    if (cp >= k_s_base && cp < k_s_base + k_s_count) {
        char32_t s = cp - k_s_base;
        out.push_back(k_l_base + s / k_n_count);
        out.push_back(k_v_base + (s % k_n_count) / k_t_count);
        if (s % k_t_count != 0) out.push_back(k_t_base + s % k_t_count);
        return;
    }
    const Decomposition* d = find_decomposition(cp);
    if (d == nullptr) {
        out.push_back(cp);
        return;
    }
    decompose(d->first, out);
    if (d->second != 0) decompose(d->second, out);
}

// The primary composite of a starter and a following character, or 0.
char32_t compose_pair(char32_t a, char32_t b) {
    if (a >= k_l_base && a < k_l_base + k_l_count && b >= k_v_base && b < k_v_base + k_v_count)
        return k_s_base + ((a - k_l_base) * k_v_count + (b - k_v_base)) * k_t_count;
    if (a >= k_s_base && a < k_s_base + k_s_count && (a - k_s_base) % k_t_count == 0 && b > k_t_base &&
        b < k_t_base + k_t_count)
        return a + (b - k_t_base);
    struct Pair {
        std::uint64_t key;
        char32_t composite;
    };
    static const std::vector<Pair> pairs = [] {
        std::vector<Pair> v;
        for (const auto& d : k_decompositions)
            if (d.composes) v.push_back({(std::uint64_t{d.first} << 21) | d.second, d.cp});
        std::sort(v.begin(), v.end(), [](const Pair& x, const Pair& y) { return x.key < y.key; });
        return v;
    }();
    std::uint64_t key = (std::uint64_t{a} << 21) | b;
    auto it = std::lower_bound(pairs.begin(), pairs.end(), key, [](const Pair& p, std::uint64_t k) { return p.key < k; });
    return it != pairs.end() && it->key == key ? it->composite : 0;
}

void normalise_run(std::vector<char32_t>& cps, std::string& out) {
    // Canonical ordering: each run of non-starters sorted stably by combining class.
    for (std::size_t i = 0; i < cps.size();) {
        if (combining_class(cps[i]) == 0) {
            ++i;
            continue;
        }
        std::size_t j = i;
        while (j < cps.size() && combining_class(cps[j]) != 0) ++j;
        std::stable_sort(cps.begin() + static_cast<std::ptrdiff_t>(i), cps.begin() + static_cast<std::ptrdiff_t>(j),
                         [](char32_t x, char32_t y) { return combining_class(x) < combining_class(y); });
        i = j;
    }
    // Canonical composition: a character joins the last starter unless something between them
    // blocks it (a starter, or a mark of the same or a higher class).
    std::vector<char32_t> result;
    std::ptrdiff_t starter = -1;
    int last_class = -1;  // class of the last character kept after the starter; -1: none
    for (char32_t cp : cps) {
        int cc = combining_class(cp);
        if (starter >= 0 && (last_class == -1 || (last_class != 0 && last_class < cc))) {
            if (char32_t c = compose_pair(result[static_cast<std::size_t>(starter)], cp); c != 0) {
                result[static_cast<std::size_t>(starter)] = c;
                continue;
            }
        }
        if (cc == 0) {
            starter = static_cast<std::ptrdiff_t>(result.size());
            last_class = -1;
        } else {
            last_class = cc;
        }
        result.push_back(cp);
    }
    for (char32_t cp : result) append_utf8(out, cp);
    cps.clear();
}

}  // namespace

std::string to_nfc(std::string_view s) {
    // ASCII is its own NFC (most names of a large torrent): no decomposition needed.
    if (std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; })) return std::string(s);
    std::string out;
    out.reserve(s.size());
    std::vector<char32_t> cps;
    for (std::size_t i = 0; i < s.size();) {
        char32_t cp = 0;
        std::size_t len = decode_utf8(s, i, cp);
        if (len == 0) {  // not UTF-8: flush what came before and keep the byte as it is
            normalise_run(cps, out);
            out.push_back(s[i]);
            ++i;
            continue;
        }
        decompose(cp, cps);
        i += len;
    }
    normalise_run(cps, out);
    return out;
}

}  // namespace archctl::torrent
