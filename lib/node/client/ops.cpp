#include "lib/node/client/ops.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "lib/base/base64.hpp"

namespace archctl::node {
namespace {

using nlohmann::json;

// Whether a result holds a number that is not an integer where none belongs: a broken or hostile
// far end (reading one into an integer field is undefined behaviour). The one fraction a result
// carries is how long a piece check took.
bool result_holds_fraction(Op op, const json& result) {
    if (op != Op::verify_pieces || !result.is_object()) return holds_fraction(result);
    for (const auto& [key, value] : result.items()) {
        if (key != "summary" || !value.is_object()) {
            if (holds_fraction(value)) return true;
            continue;
        }
        for (const auto& [field, number] : value.items())
            if (field != "seconds" && holds_fraction(number)) return true;
    }
    return false;
}

// The result of one call: the typed result of an ok response, the error otherwise.
template <class T>
Result<T> call_typed(Transport& transport, Op op, json args, ProgressFn progress = {}) {
    struct Sink final : ProgressSink {
        ProgressFn fn;
        void on_progress(const Progress& p) override { fn(p); }
    } sink;
    sink.fn = std::move(progress);
    ARCHCTL_TRY_ASSIGN(json result, call_operation(transport, op, std::move(args), sink.fn ? &sink : nullptr));
    if (result_holds_fraction(op, result))
        return Error(ErrorCode::PROTOCOL, fmt::format("invalid result of node operation '{}': a number that is not an integer", name(op)));
    try {
        return result.get<T>();
    } catch (const json::exception& e) {
        return Error(ErrorCode::PROTOCOL, fmt::format("invalid result of node operation '{}': {}", name(op), e.what()));
    }
}

// call_typed of a request that names every file of a job: the typed request goes once it is
// JSON, so only that is held while the node works.
template <class T, class Request>
Result<T> call_releasing(Transport& transport, Op op, Request request, ProgressFn progress) {
    json args = request;
    request = Request{};
    return call_typed<T>(transport, op, std::move(args), std::move(progress));
}

}  // namespace

Result<InfoResult> Ops::info(const InfoRequest& r) { return call_typed<InfoResult>(m_transport, Op::info, r); }
Result<SpaceResult> Ops::space(const SpaceRequest& r) { return call_typed<SpaceResult>(m_transport, Op::space, r); }
Result<TreeResult> Ops::tree(const TreeRequest& r) { return call_typed<TreeResult>(m_transport, Op::tree, r); }
Result<TreeResult> Ops::tree_columns(const TreeColumnsRequest& r) {
    ARCHCTL_TRY_ASSIGN(TreeResult result, call_typed<TreeResult>(m_transport, Op::tree, r));
    // The columns form names no path: its entries are the request's paths only one for one.
    if (result.entries.size() != r.tree.paths.size())
        return Error(ErrorCode::PROTOCOL, fmt::format("invalid result of node operation 'tree': {} entries for {} paths",
                                                      result.entries.size(), r.tree.paths.size()));
    return result;
}
Result<WriteCheckResult> Ops::write_check(const WriteCheckRequest& r) {
    return call_typed<WriteCheckResult>(m_transport, Op::write_check, r);
}
Result<StageResult> Ops::stage(StageRequest r, ProgressFn progress) {
    return call_releasing<StageResult>(m_transport, Op::stage, std::move(r), std::move(progress));
}
Result<ReceiveCheckResult> Ops::receive_check(ReceiveCheckRequest r, ProgressFn progress) {
    return call_releasing<ReceiveCheckResult>(m_transport, Op::receive_check, std::move(r), std::move(progress));
}
Result<MergeResult> Ops::merge(MergeRequest r, ProgressFn progress) {
    return call_releasing<MergeResult>(m_transport, Op::merge, std::move(r), std::move(progress));
}
Result<MergeRecordResult> Ops::merge_record(const MergeRecordRequest& r) {
    return call_typed<MergeRecordResult>(m_transport, Op::merge_record, r);
}
Result<UnmergeResult> Ops::unmerge(const UnmergeRequest& r) { return call_typed<UnmergeResult>(m_transport, Op::unmerge, r); }
Result<AdoptIncompleteResult> Ops::adopt_incomplete(const AdoptIncompleteRequest& r) {
    return call_typed<AdoptIncompleteResult>(m_transport, Op::adopt_incomplete, r);
}
Result<ChmodReadableResult> Ops::chmod_readable(const ChmodReadableRequest& r) {
    return call_typed<ChmodReadableResult>(m_transport, Op::chmod_readable, r);
}
Result<CleanupResult> Ops::cleanup(const CleanupRequest& r) { return call_typed<CleanupResult>(m_transport, Op::cleanup, r); }
Result<UnlinkOwnedResult> Ops::unlink_owned(const UnlinkOwnedRequest& r) {
    return call_typed<UnlinkOwnedResult>(m_transport, Op::unlink_owned, r);
}
Result<NonceWriteResult> Ops::nonce_write(const NonceWriteRequest& r) {
    return call_typed<NonceWriteResult>(m_transport, Op::nonce_write, r);
}
Result<NonceObserveResult> Ops::nonce_observe(const NonceObserveRequest& r) {
    return call_typed<NonceObserveResult>(m_transport, Op::nonce_observe, r);
}
Result<PartfileReadResult> Ops::partfile_read(const PartfileReadRequest& r) {
    return call_typed<PartfileReadResult>(m_transport, Op::partfile_read, r);
}
Result<PartfileCopyResult> Ops::partfile_copy(const PartfileCopyRequest& r) {
    return call_typed<PartfileCopyResult>(m_transport, Op::partfile_copy, r);
}
Result<PartfileBuildResult> Ops::partfile_build(const PartfileBuildRequest& r) {
    return call_typed<PartfileBuildResult>(m_transport, Op::partfile_build, r);
}
Result<VerifyPiecesResult> Ops::verify_pieces(const VerifyPiecesRequest& r, ProgressFn progress) {
    return call_typed<VerifyPiecesResult>(m_transport, Op::verify_pieces, r, std::move(progress));
}
namespace {

// One metainfo_read call: its text moved out of the answer (not copied) and decoded. More bytes
// than the request's part (or than max_bytes, for the whole file, which a node that predates
// parts answers: no size) is PROTOCOL.
Result<MetainfoReadResult> metainfo_read_once(Transport& transport, const MetainfoReadRequest& r) {
    ARCHCTL_TRY_ASSIGN(json answer, call_operation(transport, Op::metainfo_read, json(r), nullptr));
    std::string text;
    if (auto it = answer.find("data_b64"); it != answer.end() && it->is_string()) {
        text = std::move(it->get_ref<std::string&>());
        *it = "";
    }
    MetainfoReadResult result;
    try {
        result = answer.get<MetainfoReadResult>();
    } catch (const json::exception& e) {
        return Error(ErrorCode::PROTOCOL, fmt::format("invalid result of node operation 'metainfo_read': {}", e.what()));
    }
    answer = json();
    if (!result.found) return result;
    // Decoded once, here: a far end's text that is not base64, or more bytes than were asked for,
    // stops here.
    auto decoded = base64_decode(text);
    std::string().swap(text);
    if (!decoded.ok())
        return Error(ErrorCode::PROTOCOL, fmt::format("invalid result of node operation 'metainfo_read' for '{}': data_b64 is not base64: {}",
                                                      r.path, decoded.error().message));
    const bool part = r.length && result.size;
    const std::uint64_t most = part ? r.length : r.max_bytes;
    if (decoded.value().size() > most)
        return Error(ErrorCode::PROTOCOL, fmt::format("invalid result of node operation 'metainfo_read' for '{}': {} bytes, more than {} {}",
                                                      r.path, decoded.value().size(), part ? "the part's" : "max_bytes", most));
    result.data = std::move(decoded).value();
    return result;
}

}  // namespace

Result<MetainfoReadResult> Ops::metainfo_read(const MetainfoReadRequest& r) {
    if (r.length) return metainfo_read_once(m_transport, r);
    // The file in parts (k_metainfo_read_part_bytes each), so no line and no JSON text holds a
    // large torrent whole. A node that predates parts answers the whole file at once (no size).
    MetainfoReadRequest part = r;
    part.length = std::min(k_metainfo_read_part_bytes, r.max_bytes);
    ARCHCTL_TRY_ASSIGN(MetainfoReadResult result, metainfo_read_once(m_transport, part));
    if (!result.found || !result.size) return result;
    const std::uint64_t size = *result.size;
    if (size > r.max_bytes)
        return Error(ErrorCode::PROTOCOL, fmt::format("invalid result of node operation 'metainfo_read' for '{}': a file of {} bytes, more than max_bytes {}",
                                                      r.path, size, r.max_bytes));
    std::string data = std::move(result.data);
    data.reserve(static_cast<std::size_t>(size));
    while (data.size() < size) {
        part.offset = data.size();
        ARCHCTL_TRY_ASSIGN(MetainfoReadResult next, metainfo_read_once(m_transport, part));
        if (!next.found || next.size != size || next.stamp != result.stamp)
            return Error(ErrorCode::IO, fmt::format("cannot read '{}': it changed while it was read", r.path));
        if (next.data.empty())
            return Error(ErrorCode::PROTOCOL, fmt::format("invalid result of node operation 'metainfo_read' for '{}': no bytes at offset {} of {}",
                                                          r.path, part.offset, size));
        data += next.data;
    }
    if (data.size() != size)
        return Error(ErrorCode::PROTOCOL, fmt::format("invalid result of node operation 'metainfo_read' for '{}': {} bytes for a file of {}",
                                                      r.path, data.size(), size));
    result.data = std::move(data);
    return result;
}

}  // namespace archctl::node
