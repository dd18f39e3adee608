# archctl_precompile(TARGET): with ARCHCTL_PCH, precompile the headers nearly every file
# includes (the standard containers, nlohmann::json, fmt). Each target gets its own PCH, built
# with its own flags, so it is always valid for that target.
function(archctl_precompile target)
  if(ARCHCTL_PCH)
    target_precompile_headers(${target} PRIVATE <cstdint> <map> <memory> <optional> <string> <vector>
      <nlohmann/json.hpp> <fmt/format.h>)
  endif()
endfunction()

# archctl_module(NAME SOURCES ... DEPS ... [PUBLIC_DEPS ...])
# One static library per lib/ folder, target archctl_<NAME>. Includes resolve from the repo root
# ("lib/base/result.hpp"), so a module can only reach another through its declared DEPS.
function(archctl_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS" ${ARGN})
  add_library(archctl_${name} STATIC ${M_SOURCES})
  target_include_directories(archctl_${name} PUBLIC ${ARCHCTL_SOURCE_DIR} ${CMAKE_BINARY_DIR}/generated)
  target_link_libraries(archctl_${name} PUBLIC ${M_DEPS} PRIVATE archctl_warnings)
  archctl_precompile(archctl_${name})
endfunction()

# archctl_unit_test(NAME SOURCES ... DEPS ...): a doctest binary registered with ctest, label unit.
function(archctl_unit_test name)
  cmake_parse_arguments(T "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(test_${name} ${T_SOURCES})
  target_link_libraries(test_${name} PRIVATE ${T_DEPS} archctl_test_support archctl_warnings)
  archctl_precompile(test_${name})
  add_test(NAME unit.${name} COMMAND test_${name})
  set_tests_properties(unit.${name} PROPERTIES LABELS "unit;${T_LABELS}" TIMEOUT 300
    ENVIRONMENT "ARCHCTL_BIN=$<TARGET_FILE:archctl>;ARCHCTL_SOURCE_DIR=${ARCHCTL_SOURCE_DIR}")
endfunction()
