#pragma once
// Test-side torrent builder: makes v1, v2 and hybrid metainfo from in-memory files with real
// hashes, independently of lib/torrent/creator (only bencode, sha and merkle helpers are used),
// so tests can hand-craft valid and deliberately broken torrents.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "lib/torrent/bencode.hpp"

namespace archctl::torrent::test {

struct MemFile {
    std::vector<std::string> rel;  // below the root folder
    std::string data;
    std::string attr;              // BEP 47 attr to write, if any
};

enum class MemKind { v1, v2, hybrid };

struct MemTorrent {
    std::string name = "root";
    std::vector<MemFile> files;
    std::int64_t piece_length = 16384;
    MemKind kind = MemKind::hybrid;
    bool single_file = false;  // v1 `length` form / one top-level file in the v2 tree
    bool tail_pad = true;      // hybrid: pad after the last file too (libtorrent >= 2.0.8)

    // The whole metainfo as a Value (tests may edit it before encoding).
    bencode::Value build() const;
    std::string encode() const { return bencode::encode(build()); }
    // Writes the payload under `save_path` (root folder for multi-file torrents).
    void write_payload(const std::filesystem::path& save_path) const;
};

// Deterministic pseudo-random bytes.
std::string random_bytes(std::size_t n, std::uint32_t seed);

}  // namespace archctl::torrent::test
