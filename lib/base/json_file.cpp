#include "lib/base/json_file.hpp"

#include <memory>

#include "lib/base/atomic_file.hpp"
#include "lib/base/fs.hpp"

namespace archctl {
namespace {

// The serializer's output, passed on a MiB at a time; the first error is kept and nothing is
// passed on after it.
class ChunkedOutput final : public nlohmann::detail::output_adapter_protocol<char> {
public:
    explicit ChunkedOutput(const std::function<Status(std::string_view)>& write) : m_write(write) { m_buffer.reserve(k_chunk); }
    void write_character(char c) override {
        m_buffer.push_back(c);
        if (m_buffer.size() >= k_chunk) flush();
    }
    void write_characters(const char* s, std::size_t length) override {
        m_buffer.append(s, length);
        if (m_buffer.size() >= k_chunk) flush();
    }
    Status finish() {
        flush();
        return m_status;
    }

private:
    static constexpr std::size_t k_chunk = 1u << 20;
    void flush() {
        if (m_status.ok() && !m_buffer.empty()) m_status = m_write(m_buffer);
        m_buffer.clear();
    }
    const std::function<Status(std::string_view)>& m_write;
    std::string m_buffer;
    Status m_status;
};

}  // namespace

Status write_json_text(const nlohmann::json& doc, int indent, const std::function<Status(std::string_view)>& write) {
    auto out = std::make_shared<ChunkedOutput>(write);
    nlohmann::detail::serializer<nlohmann::json> writer(out, ' ');
    if (indent >= 0) writer.dump(doc, /*pretty_print=*/true, /*ensure_ascii=*/false, static_cast<unsigned>(indent));
    else writer.dump(doc, /*pretty_print=*/false, /*ensure_ascii=*/false, 0);
    out->write_character('\n');
    return out->finish();
}

Status write_json_atomic(const std::string& path, const nlohmann::json& doc, int indent, unsigned mode) {
    ARCHCTL_TRY_ASSIGN(AtomicFile file, AtomicFile::create(path, mode));
    ARCHCTL_TRY_STATUS(write_json_text(doc, indent, [&file](std::string_view chunk) { return file.write(chunk); }));
    return file.commit();
}

Status write_json_exclusive(const std::string& path, const nlohmann::json& doc, int indent, unsigned mode) {
    return write_file_exclusive_with(path, mode, [&](int fd, const std::string& temp) {
        return write_json_text(doc, indent, [&](std::string_view chunk) { return write_all(fd, chunk, temp); });
    });
}

}  // namespace archctl
