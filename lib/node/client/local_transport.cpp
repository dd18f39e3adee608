// The local transport: the node's server in this process, every message through its JSON line.

#include <atomic>
#include <mutex>

#include <fmt/format.h>

#include "lib/node/client/transport.hpp"
#include "lib/node/server/server.hpp"

namespace archctl::node {
namespace {

// Encodes and decodes one message, exactly as the wire would carry it.
template <class T>
T round_trip(const T& message) {
    auto decoded = decode(encode(Message{message}));
    return std::get<T>(std::move(decoded).value());
}

class LocalTransport final : public Transport {
public:
    LocalTransport(std::string name, RootSet roots) : m_name(std::move(name)), m_server(std::move(roots)) {
        m_hello = round_trip(m_server.hello());
    }

    const std::string& node_name() const override { return m_name; }
    const Hello& hello() const override { return m_hello; }

    Result<Response> call(Request request, ProgressSink* sink) override {
        std::lock_guard lock(m_call_mutex);
        const std::uint64_t id = request.id == 0 ? ++m_next_id : request.id;
        // The server reads its own decoded copy: the caller's document goes once it is a line, and
        // the line once decoded (at 100,000 files each is tens of MB).
        std::string line = encode_request(id, request.op, request.args);
        request.args = nlohmann::json();
        auto decoded = decode(line);
        std::string().swap(line);
        if (!decoded.ok()) return decoded.take_error();
        Request& received = std::get<Request>(decoded.value());
        m_cancel = false;
        m_running = true;
        Response response = m_server.handle(std::move(received), [&](const Progress& p) {
            if (sink) sink->on_progress(round_trip(p));
        }, m_cancel);
        m_running = false;
        std::string answer = encode_response(response);
        response = Response{};
        auto back = decode(answer);
        std::string().swap(answer);
        return std::get<Response>(std::move(back).value());
    }

    void cancel() override {
        if (m_running) m_cancel = true;
    }

private:
    std::string m_name;
    Server m_server;
    Hello m_hello;
    std::mutex m_call_mutex;
    std::uint64_t m_next_id = 0;
    std::atomic<bool> m_cancel{false};
    std::atomic<bool> m_running{false};
};

}  // namespace

Result<std::unique_ptr<Transport>> connect_local(std::string node_name, const std::vector<std::string>& roots) {
    ARCHCTL_TRY_ASSIGN(RootSet set, RootSet::open(roots));
    return std::unique_ptr<Transport>(std::make_unique<LocalTransport>(std::move(node_name), std::move(set)));
}

}  // namespace archctl::node
