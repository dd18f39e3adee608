#pragma once
// Standard base64 (RFC 4648, with padding), for binary payloads inside JSON messages.
#include <string>
#include <string_view>

#include "lib/base/result.hpp"

namespace archctl {

std::string base64_encode(std::string_view bytes);
// BAD_VALUE on characters outside the alphabet or a wrong length.
Result<std::string> base64_decode(std::string_view text);

}  // namespace archctl
