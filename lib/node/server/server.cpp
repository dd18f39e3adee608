#include "lib/node/server/server.hpp"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <deque>
#include <mutex>
#include <poll.h>
#include <set>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

#include "lib/base/signals.hpp"
#include "lib/base/units.hpp"
#include "lib/base/version.hpp"
#include "lib/node/server/file_ops.hpp"
#include "lib/node/wire/line_reader.hpp"
#include "lib/node/wire/ops_inspect.hpp"
#include "lib/torrent/path_rules.hpp"

namespace archctl::node {
namespace {

// How long a running operation may be silent before a keepalive line is sent for it. The
// caller's timeout (nodes.<name>.timeout, at least 2 s) must be longer.
constexpr std::chrono::milliseconds k_keepalive_interval{1000};

// Line-oriented writer shared by the reader thread and the worker.
class LineWriter {
public:
    explicit LineWriter(int fd) : m_fd(fd) {}
    bool write(const Message& m) { return write_line(encode(m)); }
    // A response is written without copying its result into a Message first.
    bool write(const Response& r) { return write_line(encode_response(r)); }
    bool write_line(std::string line) {
        line += '\n';
        std::lock_guard lock(m_mutex);
        if (m_broken) return false;
        if (!write_all(m_fd, line, "<node output>").ok()) m_broken = true;
        m_last_write = std::chrono::steady_clock::now();
        return !m_broken;
    }
    std::chrono::steady_clock::time_point last_write() {
        std::lock_guard lock(m_mutex);
        return m_last_write;
    }
    bool broken() {
        std::lock_guard lock(m_mutex);
        return m_broken;
    }

private:
    int m_fd;
    std::mutex m_mutex;
    bool m_broken = false;
    std::chrono::steady_clock::time_point m_last_write = std::chrono::steady_clock::now();
};

// Requests waiting for the worker, and the cancel flags of the running one.
struct Queue {
    std::mutex mutex;
    std::condition_variable cv;
    std::deque<Request> pending;
    std::set<std::uint64_t> cancelled;  // ids cancelled before they started
    std::optional<std::uint64_t> running;
    std::atomic<bool> cancel_running{false};
    bool input_closed = false;
    std::atomic<bool> stop_reader{false};
    bool stop_keepalive = false;
};

// Requests read ahead of the running one: a caller sends one at a time, so one waiting is
// plenty; past it the reader waits (a request's memory is bounded by the line limit, their
// number by this).
constexpr std::size_t k_max_waiting_requests = 1;

// While an operation runs, a line at least every k_keepalive_interval: a silent stretch (one
// large file hashed or copied) gets a keepalive, so the caller can tell slow from gone.
void keepalive_loop(Queue& q, LineWriter& out) {
    std::unique_lock lock(q.mutex);
    while (!q.stop_keepalive) {
        q.cv.wait_for(lock, k_keepalive_interval / 4);
        if (q.stop_keepalive || !q.running) continue;
        if (std::chrono::steady_clock::now() - out.last_write() < k_keepalive_interval) continue;
        Progress alive;
        alive.id = *q.running;
        alive.keepalive = true;
        lock.unlock();
        out.write(alive);
        lock.lock();
    }
}

void handle_line(const std::string& line, Queue& q, LineWriter& out) {
    auto msg = decode(line);
    if (!msg.ok()) {
        out.write(Response::failure(0, msg.error()));
        return;
    }
    std::lock_guard lock(q.mutex);
    if (auto* r = std::get_if<Request>(&msg.value())) {
        q.pending.push_back(std::move(*r));
        q.cv.notify_all();
    } else if (auto* c = std::get_if<Cancel>(&msg.value())) {
        if (q.running && *q.running == c->id) {
            q.cancel_running = true;
        } else if (std::any_of(q.pending.begin(), q.pending.end(), [&](const Request& waiting) { return waiting.id == c->id; })) {
            q.cancelled.insert(c->id);  // a cancel for no request it knows is dropped, never kept
        }
    } else {
        out.write(Response::failure(0, Error(ErrorCode::PROTOCOL, "invalid node protocol line: only requests and cancels are accepted")));
    }
}

// Reads lines until the input ends or a stop is requested (SIGTERM or Ctrl-C to `node serve`:
// the running operation stops at its next chunk, and serve() returns once it has answered).
// An overlong line is answered with an error as soon as it passes the limit, in time
// proportional to the limit; its rest is dropped as it arrives and the next line is read.
void read_loop(int in_fd, Queue& q, LineWriter& out) {
    LineReader lines(k_max_line_bytes);
    char chunk[65536];
    while (!q.stop_reader && !stop_requested()) {
        {
            std::unique_lock lock(q.mutex);
            if (q.pending.size() >= k_max_waiting_requests) {
                q.cv.wait_for(lock, std::chrono::milliseconds(200));
                continue;
            }
        }
        pollfd p{in_fd, POLLIN, 0};
        int r = ::poll(&p, 1, 200);
        if (r < 0 && errno != EINTR) break;
        if (r <= 0) continue;
        ssize_t n = ::read(in_fd, chunk, sizeof chunk);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) break;
        lines.feed(std::string_view(chunk, static_cast<std::size_t>(n)));
        while (auto line = lines.next()) {
            if (line->kind == LineReader::Kind::line) {
                handle_line(line->text, q, out);
                continue;
            }
            out.write(Response::failure(0, Error(ErrorCode::PROTOCOL,
                                                 fmt::format("invalid node protocol line: longer than {} (it begins '{}')",
                                                             format_size(k_max_line_bytes), torrent::printable(line->text)))));
        }
    }
    std::lock_guard lock(q.mutex);
    q.input_closed = true;
    q.cancel_running = q.cancel_running || out.broken();
    q.cv.notify_all();
}

}  // namespace

Server::Server(RootSet roots) : Server(std::move(roots), true) {}

Server::Server(RootSet roots, bool fixed) : m_roots(std::move(roots)), m_fixed(fixed), m_opened(fixed) {}

Server::Server(CallerRoots) : Server(RootSet(), false) {}

// The roots this connection serves from now on, probed as the hello describes them.
Result<OpenRootsResult> Server::open_roots(const OpenRootsRequest& request) {
    const std::vector<std::string>& wanted = request.roots;
    if (wanted.empty())
        return Error(ErrorCode::BAD_REQUEST, fmt::format("{} names no roots", name(Op::open_roots)), "configure qb_root and sync_root for this node");
    if (m_fixed) {
        std::string served;
        for (const auto& p : m_roots.paths()) served += (served.empty() ? "" : ", ") + p;
        for (const auto& root : wanted) {
            auto dir = m_roots.open_dir(root);
            if (dir.ok()) continue;
            if (!dir.error().is(ErrorCode::PATH_OUTSIDE_ROOT)) return dir.take_error();
            return Error(ErrorCode::PATH_OUTSIDE_ROOT,
                         fmt::format("root '{}' is not below the roots this node serves ({})", root, served),
                         fmt::format("add '--root {}' to the node's exec command, or drop its --root options so the configured roots are used", root));
        }
    } else {
        ARCHCTL_TRY_ASSIGN(RootSet opened, RootSet::open(wanted));
        m_roots = std::move(opened);
        m_hello.reset();
        m_opened = true;
    }
    return OpenRootsResult{hello().roots};
}

const Hello& Server::hello() {
    if (!m_hello) {
        Hello h;
        h.archctl_version = k_version;
        h.pid = static_cast<long>(::getpid());
        for (std::size_t i = 0; i < m_roots.paths().size(); ++i)
            h.roots.push_back(probe_directory(m_roots.root_fd(i), m_roots.paths()[i]));
        m_hello = std::move(h);
    }
    return *m_hello;
}

namespace {

// What `run` answers for operation `op`: BAD_REQUEST when its arguments do not read, and an
// error (never the end of the server) for anything else a request could make it throw. The
// operations check sizes, counts and offsets before acting; this is the net under them.
template <class Run>
Result<nlohmann::json> run_guarded(std::string_view op, Run&& run) {
    try {
        return run();
    } catch (const nlohmann::json::exception& e) {
        return Error(ErrorCode::BAD_REQUEST, fmt::format("invalid arguments for node operation '{}': {}", op, e.what()));
    } catch (const std::bad_alloc&) {
        return Error(ErrorCode::BAD_REQUEST, fmt::format("node operation '{}' needs more memory than this node has", op),
                     "the request is larger than any archctl sends: check the node runs the same archctl version");
    } catch (const std::exception& e) {
        return Error(ErrorCode::INTERNAL, fmt::format("node operation '{}' failed: {}", op, e.what()));
    }
}

}  // namespace

Result<nlohmann::json> Server::dispatch(Request& request, const ProgressFn& emit, const std::atomic<bool>& cancel) {
    // A request the local transport hands over without a line to decode gets the same check.
    if (holds_fraction(request.args))
        return Error(ErrorCode::BAD_REQUEST, fmt::format("invalid arguments for node operation '{}': a number that is not an integer", request.op),
                     "every number in a node request is an integer: check the node runs the same archctl version");
    const std::optional<Op> op = parse_op(request.op);
    if (op == Op::open_roots) {
        return run_guarded(request.op, [&]() -> Result<nlohmann::json> {
            ARCHCTL_TRY_ASSIGN(OpenRootsResult opened, open_roots(request.args.get<OpenRootsRequest>()));
            return nlohmann::json(opened);
        });
    }
    if (!m_opened)
        return Error(ErrorCode::BAD_REQUEST,
                     fmt::format("node operation '{}' before {}: this node was started without --root and the caller named no roots",
                                 request.op, name(Op::open_roots)),
                     "run the same archctl version on both ends, or add --root DIR to the node's exec command");
    const Operation handler = op ? find_operation(*op) : nullptr;
    if (!handler) return Error(ErrorCode::UNKNOWN_OPERATION, fmt::format("unknown node operation '{}'", request.op));
    ProgressFn tagged = [&](const Progress& p) {
        Progress copy = p;
        copy.id = request.id;
        if (emit) emit(copy);
    };
    OpContext ctx(m_roots, m_state, tagged, cancel);
    return run_guarded(request.op, [&] { return handler(ctx, std::move(request.args)); });
}

Response Server::handle(Request request, const ProgressFn& emit, const std::atomic<bool>& cancel) {
    IoCounters before = read_self_io();
    Result<nlohmann::json> result = dispatch(request, emit, cancel);
    Response response = result.ok() ? Response::success(request.id, std::move(result).value())
                                     : Response::failure(request.id, result.take_error());
    IoCounters after = read_self_io();
    response.io.rchar = after.rchar - before.rchar;
    response.io.read_bytes = after.read_bytes - before.read_bytes;
    return response;
}

Status Server::serve(int in_fd, int out_fd) {
    std::signal(SIGPIPE, SIG_IGN);
    LineWriter out(out_fd);
    if (!out.write(hello())) return Error(ErrorCode::IO, "cannot write to the node connection: the caller went away");
    Queue q;
    std::thread reader(read_loop, in_fd, std::ref(q), std::ref(out));
    std::thread keepalive(keepalive_loop, std::ref(q), std::ref(out));
    for (;;) {
        Request request;
        {
            std::unique_lock lock(q.mutex);
            q.cv.wait(lock, [&] { return !q.pending.empty() || q.input_closed; });
            if (q.pending.empty() || out.broken()) break;
            request = std::move(q.pending.front());
            q.pending.pop_front();
            q.cv.notify_all();  // the reader may be waiting for room
            q.running = request.id;
            q.cancel_running = q.cancelled.erase(request.id) > 0;
        }
        Response response = handle(std::move(request), [&](const Progress& p) {
            if (!out.write(p)) q.cancel_running = true;
        }, q.cancel_running);
        out.write(response);
        std::lock_guard lock(q.mutex);
        q.running.reset();
    }
    {
        std::lock_guard lock(q.mutex);
        q.stop_keepalive = true;
        q.cv.notify_all();
    }
    keepalive.join();
    q.stop_reader = true;
    reader.join();
    if (out.broken()) return Error(ErrorCode::IO, "cannot write to the node connection: the caller went away");
    return {};
}

bool OpContext::cancelled() const { return m_cancel.load() || stop_requested(); }

void OpContext::progress(const Progress& p, bool force) {
    auto now = std::chrono::steady_clock::now();
    if (!force && now - m_last < std::chrono::milliseconds(200)) return;
    m_last = now;
    if (m_emit) m_emit(p);
}

Operation find_operation(Op op) {
    switch (op) {
        case Op::open_roots: return nullptr;  // the server's own (Server::open_roots)
        case Op::info: return op_info;
        case Op::space: return op_space;
        case Op::tree: return op_tree;
        case Op::write_check: return op_write_check;
        case Op::stage: return op_stage;
        case Op::receive_check: return op_receive_check;
        case Op::merge: return op_merge;
        case Op::merge_record: return op_merge_record;
        case Op::unmerge: return op_unmerge;
        case Op::adopt_incomplete: return op_adopt_incomplete;
        case Op::chmod_readable: return op_chmod_readable;
        case Op::cleanup: return op_cleanup;
        case Op::unlink_owned: return op_unlink_owned;
        case Op::nonce_write: return op_nonce_write;
        case Op::nonce_observe: return op_nonce_observe;
        case Op::partfile_read: return op_partfile_read;
        case Op::partfile_copy: return op_partfile_copy;
        case Op::partfile_build: return op_partfile_build;
        case Op::verify_pieces: return op_verify_pieces;
        case Op::metainfo_read: return op_metainfo_read;
    }
    return nullptr;
}

}  // namespace archctl::node
