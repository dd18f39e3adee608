#pragma once
// Typed node operations: one request and one result struct per operation, shared by the caller
// (through the Ops facade, lib/node/client/ops.hpp) and the node's handlers
// (lib/node/server/op_*.cpp), so both sides use one definition of each message. The wire stays
// the JSON lines of lib/node/wire/protocol.hpp, each request naming its operation from
// lib/node/wire/op_names.hpp: every struct's to_json/from_json writes and reads the keys listed
// beside its fields.
//
// nlohmann/json conversions (`nlohmann::json j = request;`, `j.get<TreeResult>()`): a request's
// from_json throws nlohmann::json::exception on a missing required key or a wrong type (the
// server answers BAD_REQUEST); a result's from_json takes absent keys as their defaults.
//
// The messages, by what the operations do:
//   ops_inspect.hpp   open_roots, info, space, tree, write_check, nonce_write, nonce_observe,
//                     metainfo_read
//   ops_transfer.hpp  stage, receive_check, merge, merge_record, adopt_incomplete, unmerge
//   ops_cleanup.hpp   chmod_readable, cleanup, unlink_owned
//   ops_pieces.hpp    partfile_read, partfile_copy, partfile_build, verify_pieces

#include "lib/node/wire/op_names.hpp"
#include "lib/node/wire/ops_cleanup.hpp"
#include "lib/node/wire/ops_inspect.hpp"
#include "lib/node/wire/ops_pieces.hpp"
#include "lib/node/wire/ops_transfer.hpp"
