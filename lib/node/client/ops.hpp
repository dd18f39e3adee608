#pragma once
// Ops: the typed facade over one node's transport. Each method sends its operation's request
// struct (lib/node/wire/ops.hpp) under the operation's name (lib/node/wire/op_names.hpp) and reads
// the answer into its result struct; a result the struct cannot read is a PROTOCOL error.
//
// Usage:
//   node::Ops ops(transport);
//   auto tree = ops.tree({.base = "/srv/a/x", .paths = {"f"}});
//   if (tree.ok()) for (const auto& e : tree->entries) ...

#include "lib/base/result.hpp"
#include "lib/node/client/transport.hpp"
#include "lib/node/wire/ops.hpp"

namespace archctl::node {

// The operations of one node, called through its transport (lib/node/client/transport.hpp).
// `progress` receives the node's progress lines while the operation runs; cancel() (e.g. from
// inside `progress`) stops the running operation at its next chunk boundary.
class Ops {
public:
    explicit Ops(Transport& transport) : m_transport(transport) {}

    [[nodiscard]] Result<InfoResult> info(const InfoRequest& request = {});
    [[nodiscard]] Result<SpaceResult> space(const SpaceRequest& request);
    [[nodiscard]] Result<TreeResult> tree(const TreeRequest& request);
    // The columns form (its entries' paths empty: each is the request's path at its place); a
    // result with another number of entries than paths is a PROTOCOL error.
    [[nodiscard]] Result<TreeResult> tree_columns(const TreeColumnsRequest& request);
    [[nodiscard]] Result<WriteCheckResult> write_check(const WriteCheckRequest& request);
    // The three whose requests name every file of a job take them by value: moved in, a request
    // is held as its JSON alone while the node works.
    [[nodiscard]] Result<StageResult> stage(StageRequest request, ProgressFn progress = {});
    [[nodiscard]] Result<ReceiveCheckResult> receive_check(ReceiveCheckRequest request, ProgressFn progress = {});
    [[nodiscard]] Result<MergeResult> merge(MergeRequest request, ProgressFn progress = {});
    [[nodiscard]] Result<MergeRecordResult> merge_record(const MergeRecordRequest& request);
    [[nodiscard]] Result<UnmergeResult> unmerge(const UnmergeRequest& request);
    [[nodiscard]] Result<AdoptIncompleteResult> adopt_incomplete(const AdoptIncompleteRequest& request);
    [[nodiscard]] Result<ChmodReadableResult> chmod_readable(const ChmodReadableRequest& request);
    [[nodiscard]] Result<CleanupResult> cleanup(const CleanupRequest& request);
    [[nodiscard]] Result<UnlinkOwnedResult> unlink_owned(const UnlinkOwnedRequest& request);
    [[nodiscard]] Result<NonceWriteResult> nonce_write(const NonceWriteRequest& request);
    [[nodiscard]] Result<NonceObserveResult> nonce_observe(const NonceObserveRequest& request);
    [[nodiscard]] Result<PartfileReadResult> partfile_read(const PartfileReadRequest& request);
    [[nodiscard]] Result<PartfileCopyResult> partfile_copy(const PartfileCopyRequest& request);
    [[nodiscard]] Result<PartfileBuildResult> partfile_build(const PartfileBuildRequest& request);
    [[nodiscard]] Result<VerifyPiecesResult> verify_pieces(const VerifyPiecesRequest& request, ProgressFn progress = {});
    // A found result's data_b64 is checked to decode (base64_decode of it cannot fail) to at most
    // max_bytes; one that does not is a PROTOCOL error.
    [[nodiscard]] Result<MetainfoReadResult> metainfo_read(const MetainfoReadRequest& request);

    void cancel() { m_transport.cancel(); }
    Transport& transport() { return m_transport; }

private:
    Transport& m_transport;
};

}  // namespace archctl::node
