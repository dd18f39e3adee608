#pragma once
// The directories a job's payload files lie in (lib/node/wire/job_layout.hpp, PayloadLayout):
// p/ itself in the flat layout, p/<shard> in the sharded one. Shared by the operations that
// create, read and remove payload files by index (stage, receive_check, merge, cleanup).
//
// One shard directory is open at a time: an operation that visits files shard by shard opens each
// once. A writer (stage) makes a shard when it first needs it and fsyncs each shard it wrote into
// when it moves on, and p/ at the end (sync()).

#include <cstdint>
#include <optional>
#include <string>

#include "lib/base/fs.hpp"
#include "lib/base/result.hpp"
#include "lib/node/wire/job_layout.hpp"

namespace archctl::node {

class PayloadDirs {
public:
    // `payload`: the job's p/, open (or invalid when it is not there); `job_display`: the job
    // directory's path, for messages.
    PayloadDirs(UniqueFd payload, std::string job_display, PayloadLayout layout);

    [[nodiscard]] bool exists() const { return m_payload.valid(); }
    [[nodiscard]] int payload_fd() const { return m_payload.get(); }
    [[nodiscard]] PayloadLayout layout() const { return m_layout; }

    // The directory that holds file `index`: -1 when it is not there. A writer makes it
    // (`create`), fsyncing p/ for the new entry and the shard it leaves.
    [[nodiscard]] Result<int> dir_of(std::uint32_t index, bool create = false);
    // "<job>/p/<shard>/<index>" (flat: "<job>/p/<index>").
    [[nodiscard]] std::string display(std::uint32_t index) const;
    // A writer's end: fsyncs the shard it wrote last and p/.
    [[nodiscard]] Status sync();

private:
    UniqueFd m_payload;
    std::string m_job_display;
    PayloadLayout m_layout;
    std::optional<std::uint32_t> m_shard;  // the open shard's number (index / k_shard_files)
    UniqueFd m_shard_fd;                   // invalid when that shard is not there
    bool m_wrote = false;                  // dir_of(…, create) handed out the open shard
};

// The shard number of file `index` (index / k_shard_files): files sorted by it visit each shard once.
[[nodiscard]] inline std::uint32_t shard_of(std::uint32_t index) { return index / k_shard_files; }

}  // namespace archctl::node
