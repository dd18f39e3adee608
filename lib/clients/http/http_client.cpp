#include "lib/clients/http/http_client.hpp"

#include <curl/curl.h>
#include <fmt/format.h>

#include <cctype>
#include <mutex>

namespace archctl::clients::http {
namespace {

void global_init() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

CURL* handle(void* p) { return static_cast<CURL*>(p); }

std::size_t append_body(char* data, std::size_t size, std::size_t count, void* user) {
    static_cast<std::string*>(user)->append(data, size * count);
    return size * count;
}

TransportFailure failure_of(CURLcode code) {
    switch (code) {
        case CURLE_COULDNT_CONNECT: return TransportFailure::refused;
        case CURLE_OPERATION_TIMEDOUT: return TransportFailure::timeout;
        case CURLE_SEND_ERROR:
        case CURLE_RECV_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_PARTIAL_FILE:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
            return TransportFailure::reset;
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
            return TransportFailure::resolve;
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CIPHER:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_ISSUER_ERROR:
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
        case CURLE_SSL_INVALIDCERTSTATUS:
        case CURLE_USE_SSL_FAILED:
            return TransportFailure::tls;
        default:
            return TransportFailure::other;
    }
}

ErrorCode error_code_of(TransportFailure failure) {
    switch (failure) {
        case TransportFailure::timeout: return ErrorCode::HTTP_TIMEOUT;
        case TransportFailure::tls: return ErrorCode::HTTP_TLS;
        default: return ErrorCode::HTTP_UNREACHABLE;
    }
}

std::string join_url(const std::string& base, const std::string& path) {
    std::string url = base;
    while (!url.empty() && url.back() == '/') url.pop_back();
    if (!path.empty() && path.front() != '/') url.push_back('/');
    return url + path;
}

std::string first_line(std::string_view text, std::size_t max_chars) {
    std::string line(text.substr(0, text.find_first_of("\r\n")));
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())) != 0) line.pop_back();
    if (line.size() > max_chars) line = line.substr(0, max_chars) + "…";
    return line;
}

// "https://host:port/" for the scheme://authority of `url`.
std::string https_origin(const std::string& url) {
    const auto scheme_end = url.find("://");
    const auto start = scheme_end == std::string::npos ? 0 : scheme_end + 3;
    const auto end = url.find_first_of("/?#", start);
    return "https://" + url.substr(start, end == std::string::npos ? std::string::npos : end - start) + "/";
}

// The host of `url` (no port, no brackets).
std::string url_host(const std::string& url) {
    const auto scheme_end = url.find("://");
    auto start = scheme_end == std::string::npos ? 0 : scheme_end + 3;
    auto end = url.find_first_of("/?#", start);
    std::string authority = url.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (auto at = authority.rfind('@'); at != std::string::npos) authority.erase(0, at + 1);
    if (!authority.empty() && authority.front() == '[') return authority.substr(1, authority.find(']') - 1);
    return authority.substr(0, authority.find(':'));
}

// A TLS handshake with `https_url` and nothing else (CONNECT_ONLY: no request, no credentials),
// verification off: whether it succeeds, and the names of the server's certificate (its subject
// alternative names, else its common name).
struct Handshake {
    bool ok = false;
    std::vector<std::string> names;
};

std::vector<std::string> names_in(const std::string& field, const std::string& value) {
    std::vector<std::string> names;
    if (field == "X509v3 Subject Alternative Name") {
        std::size_t at = 0;
        while (at < value.size()) {
            std::size_t comma = value.find(',', at);
            std::string item = value.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
            while (!item.empty() && item.front() == ' ') item.erase(0, 1);
            for (const char* prefix : {"DNS:", "IP Address:", "IP:"})
                if (item.rfind(prefix, 0) == 0) names.push_back(item.substr(std::string(prefix).size()));
            if (comma == std::string::npos) break;
            at = comma + 1;
        }
    } else if (field == "Subject") {
        // "O = Syncthing, OU = Automatically Generated, CN = vm" or "CN=vm"
        for (const char* key : {"CN = ", "CN="}) {
            auto at = value.find(key);
            if (at == std::string::npos) continue;
            at += std::string(key).size();
            names.push_back(value.substr(at, value.find_first_of(",/", at) - at));
            break;
        }
    }
    return names;
}

Handshake tls_handshake(const std::string& https_url, std::chrono::milliseconds timeout) {
    Handshake out;
    CURL* curl = curl_easy_init();
    if (curl == nullptr) return out;
    curl_easy_setopt(curl, CURLOPT_URL, https_url.c_str());
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECT_ONLY, 1L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
    curl_easy_setopt(curl, CURLOPT_CERTINFO, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout.count()));
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
    if (curl_easy_perform(curl) == CURLE_OK) {
        out.ok = true;
        curl_certinfo* info = nullptr;
        if (curl_easy_getinfo(curl, CURLINFO_CERTINFO, &info) == CURLE_OK && info != nullptr && info->num_of_certs > 0) {
            std::vector<std::string> san, cn;
            for (curl_slist* item = info->certinfo[0]; item != nullptr; item = item->next) {
                std::string line = item->data;
                auto colon = line.find(':');
                if (colon == std::string::npos) continue;
                std::string field = line.substr(0, colon);
                auto& into = field == "Subject" ? cn : san;
                for (auto& name : names_in(field, line.substr(colon + 1))) into.push_back(std::move(name));
            }
            out.names = san.empty() ? cn : san;
        }
    }
    curl_easy_cleanup(curl);
    return out;
}

bool name_mismatch(const std::string& detail) {
    return detail.find("subject name") != std::string::npos || detail.find("does not match target host") != std::string::npos;
}

// A plain request reached a TLS port, by what the server answered.
bool plain_request_refused(const Response& response, const std::string& base_url) {
    if (response.status >= 300 && response.status < 400)
        return response.location.rfind(https_origin(base_url), 0) == 0;
    if (response.status != 400) return false;
    return response.body.find("plain HTTP request was sent to HTTPS port") != std::string::npos ||  // nginx
           response.body.find("HTTP request to an HTTPS server") != std::string::npos;           // Go
}

}  // namespace

std::string to_string(Method method) {
    switch (method) {
        case Method::get: return "GET";
        case Method::post: return "POST";
        case Method::put: return "PUT";
        case Method::patch: return "PATCH";
        case Method::del: return "DELETE";
    }
    return "GET";
}

std::string url_encode(std::string_view text) {
    static constexpr char k_hex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (std::isalnum(u) != 0 || c == '-' || c == '.' || c == '_' || c == '~') {
            out.push_back(c);
        } else {
            out.push_back('%');
            out.push_back(k_hex[u >> 4]);
            out.push_back(k_hex[u & 0x0f]);
        }
    }
    return out;
}

std::string encode_params(const Params& params) {
    std::string out;
    for (const auto& [name, value] : params) {
        if (!out.empty()) out.push_back('&');
        out += url_encode(name);
        out.push_back('=');
        out += url_encode(value);
    }
    return out;
}

HttpClient::HttpClient(ClientSettings settings) : m_settings(std::move(settings)) {
    global_init();
    m_curl = curl_easy_init();
    if (m_curl != nullptr) configure_handle();
    if (!m_settings.sleep) m_settings.sleep = real_sleeper();
    const bool https = m_settings.base_url.rfind("https://", 0) == 0;
    if (m_settings.tls == TlsVerification::insecure && https && m_settings.warn) {
        m_settings.warn(fmt::format("TLS certificate verification is off for {} (insecure_tls = true)", subject()));
    }
}

HttpClient::~HttpClient() {
    if (m_curl != nullptr) curl_easy_cleanup(handle(m_curl));
}

std::string HttpClient::subject() const {
    return fmt::format("{} on '{}' ({})", m_settings.service, m_settings.node, display_url(m_settings.base_url));
}

void HttpClient::clear_cookies() {
    std::lock_guard lock(m_mutex);
    if (m_curl != nullptr) curl_easy_setopt(handle(m_curl), CURLOPT_COOKIELIST, "ALL");
}

void HttpClient::configure(const Request& request, curl_slist** headers, curl_mime** mime,
                           std::string& form_body) {
    CURL* curl = handle(m_curl);
    std::string url = join_url(m_settings.base_url, request.path);
    if (!request.query.empty()) url += "?" + encode_params(request.query);
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    const auto total = request.total_timeout.value_or(m_settings.total_timeout);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(total.count()));
    // Method state left by the previous request: back to a plain GET, then set what this one needs.
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, nullptr);
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);

    *headers = curl_slist_append(*headers, "Expect:");
    for (const auto& h : request.headers) *headers = curl_slist_append(*headers, h.c_str());

    switch (request.body_kind) {
        case BodyKind::none:
            if (request.method == Method::post) {
                curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, 0L);
                curl_easy_setopt(curl, CURLOPT_COPYPOSTFIELDS, "");
            }
            break;
        case BodyKind::form:
            form_body = encode_params(request.form);
            *headers = curl_slist_append(*headers, "Content-Type: application/x-www-form-urlencoded");
            curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(form_body.size()));
            curl_easy_setopt(curl, CURLOPT_COPYPOSTFIELDS, form_body.c_str());
            break;
        case BodyKind::raw: {
            const std::string type = "Content-Type: " + request.content_type;
            *headers = curl_slist_append(*headers, type.c_str());
            curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
            curl_easy_setopt(curl, CURLOPT_COPYPOSTFIELDS, request.body.c_str());
            break;
        }
        case BodyKind::multipart: {
            *mime = curl_mime_init(curl);
            for (const auto& [name, value] : request.form) {
                curl_mimepart* part = curl_mime_addpart(*mime);
                curl_mime_name(part, name.c_str());
                curl_mime_data(part, value.data(), value.size());
            }
            for (const auto& file : request.files) {
                curl_mimepart* part = curl_mime_addpart(*mime);
                curl_mime_name(part, file.field.c_str());
                curl_mime_filename(part, file.filename.c_str());
                if (!file.content_type.empty()) curl_mime_type(part, file.content_type.c_str());
                curl_mime_data(part, file.data.data(), file.data.size());
            }
            curl_easy_setopt(curl, CURLOPT_MIMEPOST, *mime);
            break;
        }
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, *headers);
    switch (request.method) {
        case Method::get:
        case Method::post: break;
        case Method::put: curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "PUT"); break;
        case Method::patch: curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "PATCH"); break;
        case Method::del: curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "DELETE"); break;
    }
}

void HttpClient::configure_handle() {
    // Options that hold for every request of this client; set once so the cookie engine and the
    // connection cache live as long as the handle.
    CURL* curl = handle(m_curl);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_COOKIEFILE, "");  // in-memory cookie engine, no file
    curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(m_settings.connect_timeout.count()));
    const bool verify = m_settings.tls == TlsVerification::verify;
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, verify ? 1L : 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, verify ? 2L : 0L);
    if (!m_settings.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, m_settings.ca_file.c_str());
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
}

Attempt HttpClient::perform(const Request& request, Response& response) {
    CURL* curl = handle(m_curl);
    curl_slist* headers = nullptr;
    curl_mime* mime = nullptr;
    std::string form_body;
    configure(request, &headers, &mime, form_body);

    response = Response{};
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
    char error_buffer[CURL_ERROR_SIZE] = {};
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);

    const auto started = std::chrono::steady_clock::now();
    ++m_requests;
    const CURLcode code = curl_easy_perform(curl);
    const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, nullptr);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
    curl_slist_free_all(headers);
    if (mime != nullptr) {
        curl_easy_setopt(curl, CURLOPT_MIMEPOST, nullptr);
        curl_mime_free(mime);
    }

    Attempt attempt;
    if (code != CURLE_OK) {
        attempt.failure = failure_of(code);
        attempt.detail = error_buffer[0] != '\0' ? std::string(error_buffer) : curl_easy_strerror(code);
    } else {
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &attempt.status);
        response.status = attempt.status;
        char* type = nullptr;
        if (curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &type) == CURLE_OK && type != nullptr) response.content_type = type;
        char* location = nullptr;
        if (curl_easy_getinfo(curl, CURLINFO_REDIRECT_URL, &location) == CURLE_OK && location != nullptr) response.location = location;
    }
    if (m_settings.log) {
        const std::string outcome = code == CURLE_OK ? std::to_string(attempt.status) : describe(attempt.failure);
        m_settings.log(m_redactor.redact(fmt::format("{} '{}': {} {} -> {} ({} ms)", m_settings.service, m_settings.node,
                                                     to_string(request.method), request.path, outcome, elapsed.count())));
    }
    return attempt;
}

Result<Response> HttpClient::send(const Request& request) {
    std::lock_guard lock(m_mutex);
    if (m_curl == nullptr) return Error(ErrorCode::HTTP_INIT, fmt::format("cannot reach {}: libcurl could not start", subject()));
    Response response;
    const Attempt last = with_retry(m_settings.retry, request.retry,
                                    [&] { return perform(request, response); }, m_settings.sleep);
    const bool plain = m_settings.base_url.rfind("http://", 0) == 0;
    if (last.failure == TransportFailure::none) {
        if (plain && plain_request_refused(response, m_settings.base_url)) return speaks_tls_error();
        return response;
    }
    // Nothing came back from an http:// URL: a server that speaks TLS on that port does that.
    if (plain && (last.failure == TransportFailure::reset || last.failure == TransportFailure::other) &&
        tls_handshake(https_origin(m_settings.base_url), m_settings.connect_timeout).ok)
        return speaks_tls_error();
    if (last.failure == TransportFailure::tls) return tls_error(last.detail);
    std::string cause = describe(last.failure);
    if (last.failure == TransportFailure::other || last.failure == TransportFailure::resolve) {
        cause += " (" + first_line(last.detail, 200) + ")";
    }
    return Error(error_code_of(last.failure), m_redactor.redact(fmt::format("cannot reach {}: {}", subject(), cause)));
}

std::string HttpClient::setting(const std::string& key) const {
    std::string service = m_settings.service;
    for (char& c : service) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return fmt::format("nodes.{}.{}.{}", m_settings.node, service, key);
}

Error HttpClient::speaks_tls_error() const {
    const std::string https = display_url(https_origin(m_settings.base_url));
    return Error(ErrorCode::HTTP_TLS,
                 m_redactor.redact(fmt::format("cannot reach {}: the server speaks TLS (HTTPS), not plain HTTP", subject())),
                 fmt::format("set {} to {} (and {} to its certificate or CA when no public CA signed it)", setting("url"),
                             https.substr(0, https.size() - 1), setting("ca_file")));
}

Error HttpClient::tls_error(const std::string& detail) const {
    const std::string host = url_host(m_settings.base_url);
    if (name_mismatch(detail)) {
        Handshake seen = tls_handshake(https_origin(m_settings.base_url), m_settings.connect_timeout);
        std::string names;
        for (const auto& name : seen.names) names += (names.empty() ? "'" : ", '") + name + "'";
        if (!names.empty()) {
            std::string example = display_url(m_settings.base_url);
            if (auto at = example.find(host); at != std::string::npos) example.replace(at, host.size(), seen.names.front());
            return Error(ErrorCode::HTTP_TLS,
                         m_redactor.redact(fmt::format("cannot reach {}: its TLS certificate is for {}, not '{}'", subject(), names, host)),
                         fmt::format("set {} to a URL whose host the certificate names (such as {}, if that name reaches the "
                                     "server), or give the server a certificate that names '{}'",
                                     setting("url"), example, host));
        }
    }
    return Error(ErrorCode::HTTP_TLS,
                 m_redactor.redact(fmt::format("cannot reach {}: TLS failure ({})", subject(), first_line(detail, 200))),
                 fmt::format("set {} to the PEM file of the server's certificate or of the CA that signed it, or {} = true "
                             "to skip verification",
                             setting("ca_file"), setting("insecure_tls")));
}

Error HttpClient::status_error(const Request& request, const Response& response, ErrorCode code) const {
    std::string message = fmt::format("{} on '{}': {} {} answered {}", m_settings.service, m_settings.node,
                                      to_string(request.method), request.path, response.status);
    const std::string body = first_line(response.body, 160);
    if (!body.empty()) message += ": " + body;
    return Error(code, m_redactor.redact(message));
}

}  // namespace archctl::clients::http
