#pragma once
// Content hashes that are not torrent hashes: xxh3-128 for transit checks (docs/design.md "Step 1: stage"),
// streaming so a copy can hash in the same pass. Hex helpers.

#include <cstdint>
#include <string>
#include <string_view>

namespace archctl {

class Xxh3Hasher {
public:
    Xxh3Hasher();
    ~Xxh3Hasher();
    Xxh3Hasher(const Xxh3Hasher&) = delete;
    Xxh3Hasher& operator=(const Xxh3Hasher&) = delete;

    void update(const void* data, std::size_t size);
    // 32 lowercase hex characters (canonical big-endian form, as `xxhsum -H2` prints).
    std::string hex_digest() const;
    void reset();

private:
    void* m_state;
};

std::string xxh3_128_hex(std::string_view data);

std::string to_hex(std::string_view bytes);
// Decodes lowercase/uppercase hex; false on odd length or a non-hex character.
bool from_hex(std::string_view hex, std::string& out);
bool is_hex(std::string_view text);

}  // namespace archctl
