#include "tests/unit/clients/canned_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace archctl::test {
namespace {

int listen_loopback(int& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd, 16);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
    return fd;
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

const char* reason(int status) {
    switch (status) {
        case 200: return "OK";
        case 204: return "No Content";
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 403: return "Forbidden";
        case 404: return "Not Found";
        case 409: return "Conflict";
        case 415: return "Unsupported Media Type";
        case 500: return "Internal Server Error";
        case 503: return "Service Unavailable";
        default: return "Status";
    }
}

}  // namespace

int closed_port() {
    int port = 0;
    const int fd = listen_loopback(port);
    ::close(fd);
    return port;
}

CannedServer::CannedServer(Handler handler) : m_handler(std::move(handler)) {
    m_listen_fd = listen_loopback(m_port);
    m_thread = std::thread([this] { serve(); });
}

CannedServer::~CannedServer() {
    m_stop = true;
    ::shutdown(m_listen_fd, SHUT_RDWR);
    m_thread.join();
    ::close(m_listen_fd);
}

std::vector<SeenRequest> CannedServer::requests() const {
    std::lock_guard lock(m_mutex);
    return m_requests;
}

void CannedServer::serve() {
    std::vector<std::thread> workers;
    while (!m_stop) {
        pollfd p{m_listen_fd, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) continue;
        const int fd = ::accept(m_listen_fd, nullptr, nullptr);
        if (fd < 0) continue;
        ++m_connections;
        workers.emplace_back([this, fd] { handle_connection(fd); });
    }
    for (auto& w : workers) w.join();
}

void CannedServer::handle_connection(int fd) {
    std::string buffer;
    char chunk[65536];
    while (!m_stop) {
        std::size_t header_end;
        while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 50) <= 0) {
                if (m_stop) break;
                continue;
            }
            const auto n = ::recv(fd, chunk, sizeof chunk, 0);
            if (n <= 0) { ::close(fd); return; }
            buffer.append(chunk, static_cast<std::size_t>(n));
        }
        if (header_end == std::string::npos) break;
        SeenRequest req;
        const std::string head = buffer.substr(0, header_end);
        std::size_t line_end = head.find("\r\n");
        const std::string request_line = head.substr(0, line_end);
        const auto sp1 = request_line.find(' ');
        const auto sp2 = request_line.find(' ', sp1 + 1);
        req.method = request_line.substr(0, sp1);
        req.target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
        req.path = req.target.substr(0, req.target.find('?'));
        std::size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
        while (pos < head.size()) {
            auto next = head.find("\r\n", pos);
            if (next == std::string::npos) next = head.size();
            const std::string line = head.substr(pos, next - pos);
            const auto colon = line.find(':');
            if (colon != std::string::npos) {
                std::string value = line.substr(colon + 1);
                value.erase(0, value.find_first_not_of(' '));
                req.headers[lower(line.substr(0, colon))] = value;
            }
            pos = next + 2;
        }
        std::size_t length = 0;
        if (auto it = req.headers.find("content-length"); it != req.headers.end()) length = std::stoul(it->second);
        buffer.erase(0, header_end + 4);
        while (buffer.size() < length) {
            const auto n = ::recv(fd, chunk, sizeof chunk, 0);
            if (n <= 0) { ::close(fd); return; }
            buffer.append(chunk, static_cast<std::size_t>(n));
        }
        req.body = buffer.substr(0, length);
        buffer.erase(0, length);
        {
            std::lock_guard lock(m_mutex);
            m_requests.push_back(req);
        }
        const CannedReply reply = m_handler(req);
        std::string out = "HTTP/1.1 " + std::to_string(reply.status) + " " + reason(reply.status) + "\r\n";
        for (const auto& h : reply.headers) out += h + "\r\n";
        if (reply.status != 204) out += "Content-Length: " + std::to_string(reply.body.size()) + "\r\n";
        out += "\r\n";
        if (reply.status != 204) out += reply.body;
        std::size_t sent = 0;
        while (sent < out.size()) {
            const auto n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
            if (n <= 0) { ::close(fd); return; }
            sent += static_cast<std::size_t>(n);
        }
    }
    ::close(fd);
}

}  // namespace archctl::test
