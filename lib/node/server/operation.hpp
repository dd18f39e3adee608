#pragma once
// What every node operation receives: the confined roots, a throttled progress channel, the
// cancel flag it must poll at chunk boundaries, and state that lives as long as the node process
// (the receive-check hash cache).
//
// Operations are functions `Result<json> op_<name>(OpContext&, const json& args)`; the server
// turns the result into a response. Each reads its arguments and writes its result with the
// request and result structs of lib/node/wire/ops.hpp, the ones callers use; the server finds it
// by its name in lib/node/wire/op_names.hpp (find_operation). A stop at a chunk boundary (cancel
// or budget) is not an error: the operation answers ok with "complete": false and "stopped":
// "cancel" | "budget".

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/node/server/root_set.hpp"
#include "lib/node/wire/op_names.hpp"
#include "lib/node/wire/protocol.hpp"

namespace archctl::node {

// Process-lifetime caches of one node.
struct NodeState {
    struct FileKey {
        std::uint64_t dev, ino, size;
        std::int64_t mtime_ns;
        auto operator<=>(const FileKey&) const = default;
    };
    std::mutex mutex;
    std::map<FileKey, std::string> xxh3_by_file;  // hash of a file, valid while the key matches
};

class OpContext {
public:
    OpContext(const RootSet& roots, NodeState& state, ProgressFn emit, const std::atomic<bool>& cancel)
        : m_roots(roots), m_state(state), m_emit(std::move(emit)), m_cancel(cancel) {}

    const RootSet& roots() const { return m_roots; }
    NodeState& state() { return m_state; }

    // True once the caller cancelled this request or the node process was asked to stop.
    [[nodiscard]] bool cancelled() const;
    // Sends a progress record, at most every 200 ms unless `force`.
    void progress(const Progress& p, bool force = false);

private:
    const RootSet& m_roots;
    NodeState& m_state;
    ProgressFn m_emit;
    const std::atomic<bool>& m_cancel;
    std::chrono::steady_clock::time_point m_last{};
};

using Operation = Result<nlohmann::json> (*)(OpContext&, nlohmann::json);

// The handler of `op`; nullptr for open_roots, which the server answers itself.
[[nodiscard]] Operation find_operation(Op op);

Result<nlohmann::json> op_info(OpContext&, nlohmann::json);
Result<nlohmann::json> op_space(OpContext&, nlohmann::json);
Result<nlohmann::json> op_tree(OpContext&, nlohmann::json);
Result<nlohmann::json> op_stage(OpContext&, nlohmann::json);
Result<nlohmann::json> op_receive_check(OpContext&, nlohmann::json);
Result<nlohmann::json> op_merge(OpContext&, nlohmann::json);
Result<nlohmann::json> op_merge_record(OpContext&, nlohmann::json);
Result<nlohmann::json> op_unmerge(OpContext&, nlohmann::json);
Result<nlohmann::json> op_adopt_incomplete(OpContext&, nlohmann::json);
Result<nlohmann::json> op_chmod_readable(OpContext&, nlohmann::json);
Result<nlohmann::json> op_cleanup(OpContext&, nlohmann::json);
Result<nlohmann::json> op_nonce_write(OpContext&, nlohmann::json);
Result<nlohmann::json> op_nonce_observe(OpContext&, nlohmann::json);
Result<nlohmann::json> op_partfile_read(OpContext&, nlohmann::json);
Result<nlohmann::json> op_partfile_copy(OpContext&, nlohmann::json);
Result<nlohmann::json> op_partfile_build(OpContext&, nlohmann::json);
Result<nlohmann::json> op_unlink_owned(OpContext&, nlohmann::json);
Result<nlohmann::json> op_verify_pieces(OpContext&, nlohmann::json);
Result<nlohmann::json> op_metainfo_read(OpContext&, nlohmann::json);
Result<nlohmann::json> op_write_check(OpContext&, nlohmann::json);

}  // namespace archctl::node
