#pragma once
// Error codes: the stable, machine-readable part of an Error (docs/style.md "Practices" 3). The enum is
// what the library compares; the string form ("LOCKED") is what --json prints and what node
// operations carry over the wire, and it never changes for a code once released.

#include <string_view>

namespace archctl {

// Every code archctl produces, in one list.
#define ARCHCTL_ERROR_CODES(X) \
    X(AMBIGUOUS) \
    X(BAD_PATH) \
    X(BAD_REQUEST) \
    X(BAD_RESPONSE) \
    X(BAD_VALUE) \
    X(CANCELLED) \
    X(CLEANUP_REQUIRED) \
    X(CONFIG_INVALID) \
    X(CONFIG_MISSING) \
    X(CONFIRM_REQUIRED) \
    X(CORRUPT) \
    X(DISK_INSUFFICIENT) \
    X(DOWNLOAD_ATTEMPT) \
    X(EXISTS) \
    X(HTTP_INIT) \
    X(HTTP_TIMEOUT) \
    X(HTTP_TLS) \
    X(HTTP_UNREACHABLE) \
    X(IDENTITY_MISMATCH) \
    X(INTERNAL) \
    X(INVALID) \
    X(IO) \
    X(JOB_ACTIVE) \
    X(JOB_DAMAGED) \
    X(JOB_FINISHED) \
    X(JOB_MISMATCH) \
    X(LINK_FAILED) \
    X(LOCKED) \
    X(MERGE_CONFLICT) \
    X(MESH_INCOMPLETE) \
    X(NODES_UNREACHABLE) \
    X(NODE_UNKNOWN) \
    X(NODE_UNREACHABLE) \
    X(NOT_A_DIRECTORY) \
    X(NOT_A_TRANSFER) \
    X(NOT_CONFIRMED) \
    X(NOT_COVERED) \
    X(NOT_FOUND) \
    X(NOT_IN_TORRENT) \
    X(NOT_RECEIVED) \
    X(NOT_REGULAR) \
    X(PARTFILE_EXISTS) \
    X(PARTFILE_INVALID) \
    X(PARTFILE_UNSUPPORTED) \
    X(PATH_OUTSIDE_ROOT) \
    X(PATH_SYMLINK) \
    X(PROOF_DRIFT) \
    X(PROOF_FAILED) \
    X(PROTOCOL) \
    X(PROTOCOL_MISMATCH) \
    X(QB_ADD_REFUSED) \
    X(QB_AUTH) \
    X(QB_BAD_REPLY) \
    X(QB_BAD_REQUEST) \
    X(QB_BANNED) \
    X(QB_CONFLICT) \
    X(QB_ERROR) \
    X(QB_FORBIDDEN) \
    X(QB_GONE) \
    X(QB_INVALID_TORRENT) \
    X(QB_NOT_FOUND) \
    X(QB_RECHECK_STALLED) \
    X(QB_REJECTED) \
    X(QB_SERVER_ERROR) \
    X(QB_TIMEOUT) \
    X(QB_UNEXPECTED) \
    X(QB_UNSUPPORTED) \
    X(REFLINK_UNSUPPORTED) \
    X(RENAMED) \
    X(RENAMED_IN_QB) \
    X(RESERVED) \
    X(RESTORE_INCOMPLETE) \
    X(ROLLBACK_INCOMPLETE) \
    X(ROUTE_BAD_PAIR) \
    X(ROUTE_CHECK_FAILED) \
    X(ROUTE_CONFIG_REFUSED) \
    X(ROUTE_CONFLICT) \
    X(ROUTE_DEADLINE) \
    X(ROUTE_IN_USE) \
    X(ROUTE_INTERRUPTED) \
    X(ROUTE_TIMEOUT) \
    X(ROUTE_VALVE) \
    X(ROUTE_VERIFIED) \
    X(ROUTE_WAITING) \
    X(SHARED_STORAGE) \
    X(SOURCE_CHANGED) \
    X(SOURCE_INCOMPLETE) \
    X(STAGING_FOREIGN) \
    X(STALE_STATE) \
    X(STATE_UNREADABLE) \
    X(ST_AUTH) \
    X(ST_BAD_REPLY) \
    X(ST_BAD_REQUEST) \
    X(ST_INVALID) \
    X(ST_NOT_FOUND) \
    X(ST_SERVER_ERROR) \
    X(ST_UNEXPECTED) \
    X(TARGET_INCOMPLETE) \
    X(TIER_GOAL_UNREACHABLE) \
    X(TOKEN_EXPIRED) \
    X(TOKEN_MISMATCH) \
    X(TOKEN_SPENT) \
    X(TOKEN_UNKNOWN) \
    X(TOO_LARGE) \
    X(TRANSIT_MISMATCH) \
    X(UNKNOWN_OPERATION) \
    X(UNMERGE_FAILED) \
    X(USAGE) \
    X(VERIFY_FAILED)

enum class ErrorCode {
#define ARCHCTL_ERROR_CODE_ENUM_(name) name,
    ARCHCTL_ERROR_CODES(ARCHCTL_ERROR_CODE_ENUM_)
#undef ARCHCTL_ERROR_CODE_ENUM_
    unknown,  // a code this build does not know (from a node of another version)
};

// "LOCKED" for ErrorCode::LOCKED; "UNKNOWN" for unknown.
std::string_view to_string(ErrorCode code);
// The code named by `text`, or unknown.
ErrorCode parse_error_code(std::string_view text);

}  // namespace archctl
