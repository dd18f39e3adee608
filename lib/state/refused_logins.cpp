#include "lib/state/refused_logins.hpp"

#include <cerrno>
#include <cstring>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include "lib/base/clock.hpp"
#include "lib/base/fs.hpp"
#include "lib/base/hash.hpp"

namespace archctl::state {
namespace {

// Enough work that a stolen record is not a fast password oracle, little enough (a few ms) that
// a command checking each node once does not notice.
constexpr int k_iterations = 20000;

std::string login_digest(const std::string& salt, const std::string& username, const std::string& password) {
    // The username and password, each length-prefixed so no two pairs share an input.
    const std::string secret = fmt::format("{}:{}{}:{}", username.size(), username, password.size(), password);
    unsigned char out[32];
    PKCS5_PBKDF2_HMAC(secret.data(), static_cast<int>(secret.size()), reinterpret_cast<const unsigned char*>(salt.data()),
                      static_cast<int>(salt.size()), k_iterations, EVP_sha256(), sizeof out, out);
    return to_hex(std::string_view(reinterpret_cast<const char*>(out), sizeof out));
}

}  // namespace

std::string RefusedLogins::path_of(const std::string& node) const { return m_dir.logins() + "/" + node + ".json"; }

bool RefusedLogins::refused(const std::string& node, const std::string& username, const std::string& password) const {
    auto text = read_file(path_of(node));
    if (!text.ok()) return false;
    auto j = nlohmann::json::parse(text.value(), nullptr, false);
    if (!j.is_object() || !j.contains("salt") || !j["salt"].is_string() || !j.contains("digest") || !j["digest"].is_string())
        return false;
    std::string salt;
    if (!from_hex(j["salt"].get<std::string>(), salt)) return false;
    return login_digest(salt, username, password) == j["digest"].get<std::string>();
}

Status RefusedLogins::remember(const std::string& node, const std::string& username, const std::string& password) const {
    std::string salt;
    if (!from_hex(random_hex(32), salt)) return Error(ErrorCode::INTERNAL, "cannot make a salt");
    const nlohmann::json j = {{"salt", to_hex(salt)},
                              {"digest", login_digest(salt, username, password)},
                              {"refused_at", format_rfc3339(system_now())}};
    return write_file_atomic(path_of(node), j.dump(2) + "\n", 0600);
}

Status RefusedLogins::forget(const std::string& node) const {
    const std::string path = path_of(node);
    if (::unlink(path.c_str()) == 0) return fsync_dir(m_dir.logins());
    if (errno == ENOENT) return ok_status();
    return Error(ErrorCode::IO, fmt::format("cannot remove '{}': {}", path, std::strerror(errno)));
}

}  // namespace archctl::state
