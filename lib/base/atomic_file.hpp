#pragma once
// AtomicFile: the one way archctl replaces a file durably (docs/style.md "Practices" 7).
//
//   auto f = AtomicFile::create(path);   // opens "<dir>/.<name>.tmp.<pid>.<n>" in the same directory
//   f->write(bytes);                      // any number of times
//   f->commit();                          // fsync file → rename over path → fsync directory
//
// Until commit() the target keeps its old content (or stays absent). The destructor of an
// uncommitted AtomicFile removes the temp file. A crash leaves at most a stray temp file, which
// readers never look at. Crash points: "atomic.<name>.written", "atomic.<name>.renamed".

#include <string>
#include <string_view>

#include "lib/base/fs.hpp"
#include "lib/base/result.hpp"

namespace archctl {

class AtomicFile {
public:
    static Result<AtomicFile> create(const std::string& path, unsigned mode = 0644);

    AtomicFile(AtomicFile&& other) noexcept;
    AtomicFile& operator=(AtomicFile&&) = delete;
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;
    ~AtomicFile();

    [[nodiscard]] Status write(std::string_view data);
    // Make the new content durable and visible at `path`. After success the object is inert.
    [[nodiscard]] Status commit();

    const std::string& path() const { return m_path; }

private:
    AtomicFile(std::string path, std::string temp, UniqueFd fd);

    std::string m_path;
    std::string m_temp;
    UniqueFd m_fd;
    bool m_committed = false;
};

}  // namespace archctl
