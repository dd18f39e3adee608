#pragma once
// Redactor: the one place that keeps secrets out of text archctl shows or stores.
//
// Clients register every credential they hold (passwords, API keys) and every text that leaves
// the HTTP layer for a log, an error message or a JSON document passes through redact(). Besides
// the registered values it masks the shapes secrets travel in even when their value is unknown:
// session cookies (SID=…, QBT_SID_<port>=…), Cookie/Set-Cookie/X-API-Key/Authorization header
// values, and password/api key fields of url-encoded forms or query strings.

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace archctl::clients::http {

// What a masked value is replaced with.
inline constexpr std::string_view k_redacted = "<redacted>";

class Redactor {
public:
    // Remember `secret` so redact() masks it. Empty values are ignored; so are values shorter
    // than 3 characters, which would mask ordinary words (such secrets are still masked in the
    // known shapes above). Thread-safe.
    void add_secret(std::string secret);

    // `text` with every registered secret and every known secret shape masked. Thread-safe.
    [[nodiscard]] std::string redact(std::string_view text) const;

private:
    mutable std::mutex m_mutex;
    std::vector<std::string> m_secrets;
};

// Mask only the known shapes (cookies, auth headers, password/key form fields); no registry.
[[nodiscard]] std::string redact_patterns(std::string_view text);

// `url` without user:password@ and without its query string: what an error message may show.
[[nodiscard]] std::string display_url(std::string_view url);

}  // namespace archctl::clients::http
