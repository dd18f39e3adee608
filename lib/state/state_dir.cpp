#include "lib/state/state_dir.hpp"

#include <openssl/rand.h>

#include "lib/base/clock.hpp"
#include "lib/base/fs.hpp"
#include "lib/base/hash.hpp"

namespace archctl::state {

Result<StateDir> StateDir::open(const std::string& root) {
    StateDir dir(root);
    for (const std::string& sub : {dir.jobs(), dir.reservations(), dir.placements(), dir.routes(), dir.tokens(),
                                   dir.tombstones(), dir.tiers(), dir.logins(), dir.index(), dir.index() + "/active"})
        ARCHCTL_TRY_STATUS(make_dirs(sub, 0700));
    return dir;
}

std::string random_hex(size_t chars) {
    std::string bytes((chars + 1) / 2, '\0');
    RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
    return to_hex(bytes).substr(0, chars);
}

std::string new_job_id() { return format_compact_utc(system_now()) + "-" + random_hex(4); }

}  // namespace archctl::state
