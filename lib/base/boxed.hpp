#pragma once
// Boxed<T>: an optional T kept behind a pointer. It reads like std::optional (test it, `*`, `->`,
// assign a T, reset) but takes one pointer where it is empty, for a member that is almost always
// empty in a struct held once per file: a tree entry's error (96 bytes in place, 8 boxed).

#include <memory>
#include <optional>
#include <utility>

namespace archctl {

template <typename T>
class Boxed {
public:
    Boxed() = default;
    Boxed(std::nullopt_t) {}  // NOLINT: empty, as std::optional
    Boxed(T value) : m_value(std::make_unique<T>(std::move(value))) {}  // NOLINT: converts like optional
    Boxed(const Boxed& other) : m_value(other.m_value ? std::make_unique<T>(*other.m_value) : nullptr) {}
    Boxed(Boxed&&) noexcept = default;
    Boxed& operator=(const Boxed& other) {
        if (this != &other) m_value = other.m_value ? std::make_unique<T>(*other.m_value) : nullptr;
        return *this;
    }
    Boxed& operator=(Boxed&&) noexcept = default;
    Boxed& operator=(T value) {
        m_value = std::make_unique<T>(std::move(value));
        return *this;
    }

    [[nodiscard]] bool has_value() const { return m_value != nullptr; }
    explicit operator bool() const { return has_value(); }
    const T& operator*() const { return *m_value; }
    T& operator*() { return *m_value; }
    const T* operator->() const { return m_value.get(); }
    T* operator->() { return m_value.get(); }
    void reset() { m_value.reset(); }

private:
    std::unique_ptr<T> m_value;
};

}  // namespace archctl
