#pragma once
// CannedServer: a loopback HTTP/1.1 server for unit tests of the HTTP layer and of replies that
// only other qBittorrent versions produce (5.x bodies recorded from the WebAPI reference). It
// answers each request through a handler and records what it received. Keep-alive is honoured
// so connection reuse is observable (`connections()`).

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace archctl::test {

struct SeenRequest {
    std::string method;
    std::string target;  // path + query as sent
    std::string path;    // without query
    std::map<std::string, std::string> headers;  // lower-case names
    std::string body;
};

struct CannedReply {
    CannedReply(int status_ = 200, std::string body_ = {}, std::vector<std::string> headers_ = {})
        : status(status_), body(std::move(body_)), headers(std::move(headers_)) {}
    int status;
    std::string body;
    std::vector<std::string> headers;  // extra "Name: value"
};

class CannedServer {
public:
    using Handler = std::function<CannedReply(const SeenRequest&)>;
    explicit CannedServer(Handler handler);
    ~CannedServer();
    CannedServer(const CannedServer&) = delete;
    CannedServer& operator=(const CannedServer&) = delete;

    int port() const { return m_port; }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(m_port); }
    std::vector<SeenRequest> requests() const;
    int connections() const { return m_connections.load(); }

private:
    void serve();
    void handle_connection(int fd);

    Handler m_handler;
    int m_listen_fd = -1;
    int m_port = 0;
    std::atomic<bool> m_stop{false};
    std::atomic<int> m_connections{0};
    mutable std::mutex m_mutex;
    std::vector<SeenRequest> m_requests;
    std::thread m_thread;
};

// A TCP port on 127.0.0.1 that nothing listens on (bound, then closed).
int closed_port();

}  // namespace archctl::test
