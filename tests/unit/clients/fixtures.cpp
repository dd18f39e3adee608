#include "tests/unit/clients/fixtures.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace archctl::test {

std::string fixture_text(const std::string& name) {
    std::ifstream in(std::string(ARCHCTL_CLIENTS_FIXTURES) + "/" + name, std::ios::binary);
    if (!in) throw std::runtime_error("missing fixture " + name);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

nlohmann::json fixture_json(const std::string& name) { return nlohmann::json::parse(fixture_text(name)); }

}  // namespace archctl::test
