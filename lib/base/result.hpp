#pragma once
// Result<T>: errors are values inside the library (docs/style.md "Practices" 3).
//
// A Result holds either a value or an Error. Error carries a stable machine code (used by
// --json and by callers that branch on it), a one-line human message already in the project's
// message style, and an optional hint line. Exceptions are caught at the edges (nlohmann, toml++,
// CLI11) and turned into Errors there.

#include <cassert>
#include <string>
#include <utility>
#include <variant>

#include "lib/base/error_code.hpp"

namespace archctl {

struct Error {
    std::string code;     // stable, UPPER_SNAKE: "CONFIG_INVALID", "IO", "LOCKED", ... (ErrorCode's string form)
    std::string message;  // "<what failed> '<subject>': <cause>" — lowercase, no secrets
    std::string hint;     // optional next step for the user, without the "hint: " prefix

    Error() = default;
    Error(ErrorCode code_, std::string message_, std::string hint_ = {})
        : code(to_string(code_)), message(std::move(message_)), hint(std::move(hint_)) {}
    // A code as text: carried over the wire from a node, or built by a client (HTTP_*).
    Error(std::string code_, std::string message_, std::string hint_ = {})
        : code(std::move(code_)), message(std::move(message_)), hint(std::move(hint_)) {}

    [[nodiscard]] bool is(ErrorCode c) const { return code == to_string(c); }
};

template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : m_v(std::in_place_index<0>, std::move(value)) {}
    Result(Error error) : m_v(std::in_place_index<1>, std::move(error)) {}

    [[nodiscard]] bool ok() const { return m_v.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & { assert(ok()); return std::get<0>(m_v); }
    const T& value() const& { assert(ok()); return std::get<0>(m_v); }
    T&& value() && { assert(ok()); return std::get<0>(std::move(m_v)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

    const Error& error() const { assert(!ok()); return std::get<1>(m_v); }
    Error&& take_error() { assert(!ok()); return std::get<1>(std::move(m_v)); }

private:
    std::variant<T, Error> m_v;
};

template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error) : m_error(std::move(error)), m_failed(true) {}

    [[nodiscard]] bool ok() const { return !m_failed; }
    explicit operator bool() const { return ok(); }
    const Error& error() const { assert(m_failed); return m_error; }
    Error&& take_error() { assert(m_failed); return std::move(m_error); }

private:
    Error m_error;
    bool m_failed = false;
};

using Status = Result<void>;

inline Status ok_status() { return {}; }

}  // namespace archctl

// Propagate an error from an expression returning Result<...>/Status.
#define ARCHCTL_TRY_STATUS(expr)                            \
    do {                                                    \
        auto archctl_try_r_ = (expr);                       \
        if (!archctl_try_r_.ok()) return archctl_try_r_.take_error(); \
    } while (0)

// Assign the value of a Result<T> expression to `lhs` (a declaration or an lvalue), or return its error.
#define ARCHCTL_CONCAT_INNER_(a, b) a##b
#define ARCHCTL_CONCAT_(a, b) ARCHCTL_CONCAT_INNER_(a, b)
#define ARCHCTL_TRY_ASSIGN(lhs, expr) ARCHCTL_TRY_ASSIGN_IMPL_(ARCHCTL_CONCAT_(archctl_try_v_, __LINE__), lhs, expr)
#define ARCHCTL_TRY_ASSIGN_IMPL_(tmp, lhs, expr) \
    auto tmp = (expr);                           \
    if (!tmp.ok()) return tmp.take_error();      \
    lhs = std::move(tmp).value()
