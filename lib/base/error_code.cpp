#include "lib/base/error_code.hpp"

#include <array>

namespace archctl {
namespace {

constexpr std::array k_names = {
#define ARCHCTL_ERROR_CODE_NAME_(name) std::string_view(#name),
    ARCHCTL_ERROR_CODES(ARCHCTL_ERROR_CODE_NAME_)
#undef ARCHCTL_ERROR_CODE_NAME_
};

}  // namespace

std::string_view to_string(ErrorCode code) {
    auto i = static_cast<std::size_t>(code);
    return i < k_names.size() ? k_names[i] : std::string_view("UNKNOWN");
}

ErrorCode parse_error_code(std::string_view text) {
    for (std::size_t i = 0; i < k_names.size(); ++i)
        if (k_names[i] == text) return static_cast<ErrorCode>(i);
    return ErrorCode::unknown;
}

}  // namespace archctl
