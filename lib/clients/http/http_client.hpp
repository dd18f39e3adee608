#pragma once
// HttpClient: one libcurl easy handle per remote service, reused for every request.
//
// A client talks to one base URL (one service on one node). It keeps the connection alive
// between requests, keeps cookies in libcurl's in-memory engine (never a cookie file, never a
// hard-coded cookie name), verifies TLS unless the node opts out explicitly, and repeats
// transient failures through with_retry(). Every attempt is counted; every log line and error
// passes through the client's Redactor, names the node and shows the URL without query string
// or user info:
//     cannot reach qBittorrent on 'nas' (http://127.0.0.1:18081): connection refused
//
// Non-2xx statuses are not errors at this layer: they come back as a Response so the service
// client can interpret them (qBittorrent's 403 means "log in again"). One request runs at a time
// per client (a mutex serializes callers); use a second client for a long poll that must not
// block other calls.
//
// TLS set-ups a user gets wrong are named with their fix (HTTP_TLS): an http:// URL whose server
// speaks TLS (it redirects to https://, answers that a plain request reached its TLS port, or
// sends nothing back while a TLS handshake with it succeeds), and a certificate that does not
// name the URL's host (the names it has, read by a handshake that sends no request).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/result.hpp"
#include "lib/clients/http/redactor.hpp"
#include "lib/clients/http/retry.hpp"

struct curl_slist;
struct curl_mime;

namespace archctl::clients::http {

enum class TlsVerification { verify, insecure };

// A line of diagnostic output (already redacted when the client calls it).
using LogSink = std::function<void(const std::string&)>;

struct ClientSettings {
    std::string node;       // node name, for messages: "nas"
    std::string service;    // "qBittorrent", "Syncthing"
    std::string base_url;   // "http://127.0.0.1:8080" (no trailing slash needed)
    std::string ca_file;    // extra CA bundle; empty: system store
    TlsVerification tls = TlsVerification::verify;
    std::chrono::milliseconds connect_timeout{3000};
    std::chrono::milliseconds total_timeout{30000};
    RetryPolicy retry;
    LogSink log;   // per-request lines (method, path, status, time); may be empty
    LogSink warn;  // warnings, e.g. TLS verification switched off; may be empty
    Sleeper sleep; // backoff sleeper; empty: real sleeping
};

enum class Method { get, post, put, patch, del };

using Params = std::vector<std::pair<std::string, std::string>>;

// A file part of a multipart/form-data body.
struct FilePart {
    std::string field;         // form field name
    std::string filename;      // part filename (qBittorrent keys uploads by it: keep unique)
    std::string content_type;  // e.g. "application/x-bittorrent"
    std::string data;          // raw bytes
};

enum class BodyKind { none, form, multipart, raw };

struct Request {
    Method method = Method::get;
    std::string path;                 // appended to the base URL: "/api/v2/app/version"
    Params query;                     // URL-encoded into the query string (never logged)
    BodyKind body_kind = BodyKind::none;
    Params form;                      // form fields (url-encoded body or multipart fields)
    std::vector<FilePart> files;      // multipart file parts
    std::string body;                 // raw body (BodyKind::raw)
    std::string content_type;         // raw body type, e.g. "application/json"
    std::vector<std::string> headers; // extra "Name: value" headers (values redacted in logs)
    std::optional<std::chrono::milliseconds> total_timeout;  // overrides the client's (long polls)
    RetryMode retry = RetryMode::transient;
};

struct Response {
    long status = 0;
    std::string body;
    std::string content_type;
    std::string location;  // where a redirect points (never followed)
    bool ok() const { return status >= 200 && status < 300; }
};

class HttpClient {
public:
    explicit HttpClient(ClientSettings settings);
    ~HttpClient();
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    // Send `request` (with retries). Transport failures become errors with code HTTP_UNREACHABLE
    // (refused, reset, resolve), HTTP_TIMEOUT or HTTP_TLS; any HTTP status is a Response.
    [[nodiscard]] Result<Response> send(const Request& request);

    // Forget every cookie (before logging in again).
    void clear_cookies();

    // Requests actually sent (each retry counts), since construction.
    [[nodiscard]] std::uint64_t request_count() const { return m_requests.load(); }

    // Register a secret with this client's redactor.
    void add_secret(std::string secret) { m_redactor.add_secret(std::move(secret)); }
    [[nodiscard]] const Redactor& redactor() const { return m_redactor; }
    [[nodiscard]] const ClientSettings& settings() const { return m_settings; }

    // "qBittorrent on 'nas' (http://127.0.0.1:8080)": the subject of error messages.
    [[nodiscard]] std::string subject() const;
    // Error for a response with an unexpected status, naming method path and status; the body
    // (redacted, first line, shortened) is the cause: "qBittorrent on 'nas': POST
    // /api/v2/torrents/add answered 415: not a valid torrent file".
    [[nodiscard]] Error status_error(const Request& request, const Response& response,
                                     ErrorCode code) const;

private:
    // "nodes.<node>.<service>.<key>": the setting a hint names.
    std::string setting(const std::string& key) const;
    // An http:// URL whose server speaks TLS; a TLS failure with its cause and fix.
    Error speaks_tls_error() const;
    Error tls_error(const std::string& detail) const;
    void configure_handle();
    Attempt perform(const Request& request, Response& response);
    void configure(const Request& request, ::curl_slist** headers, ::curl_mime** mime,
                   std::string& form_body);

    ClientSettings m_settings;
    Redactor m_redactor;
    std::mutex m_mutex;
    void* m_curl = nullptr;  // CURL*
    std::atomic<std::uint64_t> m_requests{0};
};

// Percent-encode `text` per RFC 3986 (unreserved characters kept), for query strings and forms.
[[nodiscard]] std::string url_encode(std::string_view text);

// "a=1&b=x%20y": `params` url-encoded and joined.
[[nodiscard]] std::string encode_params(const Params& params);

[[nodiscard]] std::string to_string(Method method);

}  // namespace archctl::clients::http
