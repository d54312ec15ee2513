# Helpers so each directory declares its targets in a few lines.
#   sluice_cc_library(NAME n SRCS a.cc HDRS a.h DEPS d...)  -> target n
#   sluice_cc_test(NAME n SRCS a_test.cc DEPS d... [LABELS l...])
#   sluice_cc_binary(NAME n SRCS main.cc DEPS d...)
#   sluice_cc_bench(NAME n SRCS a_bench.cc DEPS d...)
set(SLUICE_WARNINGS -Wall -Wextra -Wshadow -Wnon-virtual-dtor -Wno-unused-parameter)
if(SLUICE_WERROR)
  list(APPEND SLUICE_WARNINGS -Werror)
endif()
set(SLUICE_SAN_FLAGS)
if(SLUICE_SANITIZE)
  set(SLUICE_SAN_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer)
endif()

function(_sluice_common target)
  target_compile_options(${target} PRIVATE ${SLUICE_WARNINGS} ${SLUICE_SAN_FLAGS})
  target_link_options(${target} PRIVATE ${SLUICE_SAN_FLAGS})
  target_include_directories(${target} PUBLIC ${CMAKE_SOURCE_DIR}/src)
endfunction()

function(sluice_cc_library)
  cmake_parse_arguments(A "" "NAME" "SRCS;HDRS;DEPS" ${ARGN})
  if(A_SRCS)
    add_library(${A_NAME} STATIC ${A_SRCS} ${A_HDRS})
    _sluice_common(${A_NAME})
    target_link_libraries(${A_NAME} PUBLIC ${A_DEPS})
  else()
    add_library(${A_NAME} INTERFACE ${A_HDRS})
    target_include_directories(${A_NAME} INTERFACE ${CMAKE_SOURCE_DIR}/src)
    target_link_libraries(${A_NAME} INTERFACE ${A_DEPS})
  endif()
endfunction()

# sluice_label_discovered_tests(target label...): gtest_discover_tests drops list-valued
# properties, and a directory's LABELS never reach the tests it discovers, so the labels are set
# by a script ctest runs after the discovery script (same scope: <target>_TESTS holds the names).
function(sluice_label_discovered_tests target)
  set(_labels_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_labels.cmake)
  file(WRITE ${_labels_file}
    "foreach(_t IN LISTS ${target}_TESTS)\n"
    "  set_tests_properties(\"\${_t}\" PROPERTIES LABELS \"${ARGN}\")\n"
    "endforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${_labels_file})
endfunction()

function(sluice_cc_test)
  cmake_parse_arguments(A "" "NAME" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${A_NAME} ${A_SRCS})
  _sluice_common(${A_NAME})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  gtest_discover_tests(${A_NAME}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    PROPERTIES LABELS unit ENVIRONMENT "SLUICE_SOURCE_DIR=${CMAKE_SOURCE_DIR}"
    DISCOVERY_TIMEOUT 60)
  if(A_LABELS)
    sluice_label_discovered_tests(${A_NAME} unit ${A_LABELS})
  endif()
endfunction()

function(sluice_cc_binary)
  cmake_parse_arguments(A "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${A_NAME} ${A_SRCS})
  _sluice_common(${A_NAME})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS})
endfunction()

function(sluice_cc_bench)
  cmake_parse_arguments(A "" "NAME" "SRCS;DEPS" ${ARGN})
  if(NOT SLUICE_BUILD_BENCH)
    return()
  endif()
  add_executable(${A_NAME} ${A_SRCS})
  _sluice_common(${A_NAME})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS} benchmark::benchmark benchmark::benchmark_main)
endfunction()

# sluice_depends_when_defined(TARGET t DEPS d...): t depends on each d that exists once every
# directory is configured (targets of later layers, e.g. sluice-spin and the emulated driver,
# which tests of runtime/ run and which are absent without the CUDA headers).
function(sluice_depends_when_defined)
  cmake_parse_arguments(A "" "TARGET" "DEPS" ${ARGN})
  # A deferred call expands its arguments when it runs, after this scope is gone: bake the values
  # into the deferred code now.
  string(REPLACE ";" " " _deps "${A_DEPS}")
  cmake_language(EVAL CODE "cmake_language(DEFER DIRECTORY [[${CMAKE_SOURCE_DIR}]] CALL \
                 _sluice_depend_if_defined ${A_TARGET} ${_deps})")
endfunction()

function(_sluice_depend_if_defined target)
  foreach(_t ${ARGN})
    if(TARGET ${_t})
      add_dependencies(${target} ${_t})
    endif()
  endforeach()
endfunction()
