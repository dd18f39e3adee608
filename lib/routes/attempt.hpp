#pragma once
// Attempt: the provisioning and verification state machine of one route record (internal to
// lib/routes; the steps are described in routes.hpp). Every durable change of the record passes
// a named crash point:
//   route.record.created   a new attempt's first record
//   route.resumed          an unfinished attempt taken up again
//   route.step             a step began
//   route.seen             what a wait observed changed
//   route.device.intent / route.device.put / route.device.recorded
//   route.folder.intent / route.folder.put / route.folder.recorded
//   route.nonce.written / route.nonce.observed
//   route.ready            verified both ways
//   route.timed_out / route.failed / route.check.recorded
//   route.rollback.deleted / route.rollback.recorded / route.rolled_back

#include <optional>
#include <string>

#include "lib/routes/nonce.hpp"
#include "lib/routes/session.hpp"

namespace archctl::routes {

class Attempt {
public:
    Attempt(Session& session, RouteRecord& record, const Deadlines& deadlines)
        : m_s(session), m_r(record), m_d(deadlines) {}

    // Configure both sides, then verify(). Hard failures roll back what the attempt created.
    [[nodiscard]] Status provision();
    // Wait for health, exchange nonces both ways, mark ready.
    [[nodiscard]] Status verify();

private:
    struct SideRef {
        std::string node, peer;
        std::string* path;
        std::string* device;
        std::string* peer_device;
    };
    SideRef side(config::Role role);

    [[nodiscard]] Status set_step(const std::string& step);
    [[nodiscard]] Status set_seen(const std::string& seen);
    // Ends a wait: timeout → record timed_out (or, for a verified route, the failed check) and
    // ROUTE_TIMEOUT; deadline/interrupt → the clean-stop error.
    [[nodiscard]] Error give_up(WaitEnd end, const std::string& what);
    [[nodiscard]] Error fail(Error error);

    // A node whose Syncthing did not answer during one look of a wait ("" node: none).
    struct Down {
        std::string node, why;
    };
    // The wait sees `down`: once the call's outage window is over, the ROUTE_WAITING error that
    // ends it (the record stays as it is, so a rerun continues under the same route ID).
    [[nodiscard]] std::optional<Error> outage_end(const Down& down);
    // The first of the two Syncthings that does not answer now, if any.
    [[nodiscard]] Down syncthing_down();

    [[nodiscard]] Status configure(config::Role role);
    // true: done; false: not possible yet (seen says why, down names an unanswering Syncthing);
    // error: hard failure.
    [[nodiscard]] Result<bool> try_configure(const SideRef& side, std::string& seen, Down& down);
    [[nodiscard]] Result<bool> ensure_device(session::NodeSession& link, const SideRef& side, std::vector<std::string> addresses);
    [[nodiscard]] Result<bool> ensure_folder(session::NodeSession& link, const SideRef& side);
    [[nodiscard]] Status wait_healthy();
    [[nodiscard]] Status exchange(config::Role from);
    [[nodiscard]] Status observe(session::NodeSession& reader, const std::string& reader_name, const NonceFile& nonce,
                                 const std::string& what);

    Session& m_s;
    RouteRecord& m_r;
    Deadlines m_d;
};

// Remove what `record`'s attempts created, while ownership is unambiguous (see routes.hpp).
[[nodiscard]] Result<RollbackReport> rollback_record(Session& session, RouteRecord& record);

// A created-object fingerprint of the object `kind`/`id` on `link`; nullopt when absent.
[[nodiscard]] Result<std::optional<nlohmann::json>> read_object(session::NodeSession& link, ObjectKind kind, const std::string& id);

}  // namespace archctl::routes
