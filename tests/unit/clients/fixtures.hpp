#pragma once
// Recorded response bodies (tests/unit/clients/fixtures/), read by name.
#include <string>

#include <nlohmann/json.hpp>

namespace archctl::test {

std::string fixture_text(const std::string& name);
nlohmann::json fixture_json(const std::string& name);

}  // namespace archctl::test
