#include "lib/clients/http/redactor.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace archctl::clients::http {
namespace {

bool iequals_at(std::string_view text, std::size_t pos, std::string_view word) {
    if (pos + word.size() > text.size()) return false;
    for (std::size_t i = 0; i < word.size(); ++i) {
        const auto a = static_cast<unsigned char>(text[pos + i]);
        const auto b = static_cast<unsigned char>(word[i]);
        if (std::tolower(a) != std::tolower(b)) return false;
    }
    return true;
}

bool is_word_char(char c) {
    const auto u = static_cast<unsigned char>(c);
    return std::isalnum(u) != 0 || c == '_' || c == '-';
}

// Replace the value that follows every `key` (matched case-insensitively at a word start) up to
// the first character in `stops`. The key itself stays visible.
std::string mask_after(std::string_view text, std::string_view key, std::string_view stops) {
    std::string out;
    out.reserve(text.size());
    std::size_t i = 0;
    while (i < text.size()) {
        const bool at_word_start = i == 0 || !is_word_char(text[i - 1]);
        if (at_word_start && iequals_at(text, i, key)) {
            std::size_t j = i + key.size();
            while (j < text.size() && text[j] == ' ') ++j;  // "Name: value" and "Name:value"
            out.append(text.substr(i, j - i));
            const std::size_t value_start = j;
            while (j < text.size() && stops.find(text[j]) == std::string_view::npos) ++j;
            if (j > value_start) out.append(k_redacted);
            i = j;
            continue;
        }
        out.push_back(text[i]);
        ++i;
    }
    return out;
}

// qBittorrent 5.2 names its cookie QBT_SID_<port>; mask "QBT_SID_<digits>=value".
std::string mask_port_cookie(std::string_view text) {
    static constexpr std::string_view k_prefix = "QBT_SID_";
    std::string out;
    std::size_t i = 0;
    while (i < text.size()) {
        if (iequals_at(text, i, k_prefix)) {
            std::size_t j = i + k_prefix.size();
            while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])) != 0) ++j;
            if (j < text.size() && text[j] == '=') {
                out.append(text.substr(i, j + 1 - i));
                std::size_t k = j + 1;
                while (k < text.size() && std::string_view(";&\r\n \t\"'").find(text[k]) == std::string_view::npos) ++k;
                out.append(k_redacted);
                i = k;
                continue;
            }
        }
        out.push_back(text[i]);
        ++i;
    }
    return out;
}

}  // namespace

std::string redact_patterns(std::string_view text) {
    // Header values run to the end of the line; cookie and form values to their separator.
    static constexpr std::array<std::string_view, 4> k_headers = {"cookie:", "set-cookie:", "x-api-key:", "authorization:"};
    static constexpr std::array<std::string_view, 9> k_fields = {
        "SID=", "password=", "passwd=", "api_key=", "apikey=", "api-key=", "token=", "web_ui_password=", "sessionid-"};
    std::string out(text);
    for (auto header : k_headers) out = mask_after(out, header, "\r\n");
    for (auto field : k_fields) out = mask_after(out, field, ";&\r\n \t\"'");
    out = mask_after(out, "\"password\":\"", "\"");
    out = mask_after(out, "\"apiKey\":\"", "\"");
    out = mask_after(out, "\"web_ui_password\":\"", "\"");
    return mask_port_cookie(out);
}

void Redactor::add_secret(std::string secret) {
    if (secret.size() < 3) return;
    std::lock_guard lock(m_mutex);
    if (std::find(m_secrets.begin(), m_secrets.end(), secret) != m_secrets.end()) return;
    m_secrets.push_back(std::move(secret));
    // Longest first, so a secret that contains another is masked whole.
    std::sort(m_secrets.begin(), m_secrets.end(),
              [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
}

std::string Redactor::redact(std::string_view text) const {
    std::string out(text);
    {
        std::lock_guard lock(m_mutex);
        for (const auto& secret : m_secrets) {
            std::size_t pos = 0;
            while ((pos = out.find(secret, pos)) != std::string::npos) {
                out.replace(pos, secret.size(), k_redacted);
                pos += k_redacted.size();
            }
        }
    }
    return redact_patterns(out);
}

std::string display_url(std::string_view url) {
    std::string out(url.substr(0, url.find_first_of("?#")));
    const auto scheme_end = out.find("://");
    const auto authority_start = scheme_end == std::string::npos ? 0 : scheme_end + 3;
    const auto authority_end = out.find('/', authority_start);
    const auto at = out.rfind('@', authority_end == std::string::npos ? out.size() : authority_end);
    if (at != std::string::npos && at >= authority_start) out.erase(authority_start, at + 1 - authority_start);
    return out;
}

}  // namespace archctl::clients::http
