# softib_discover_tests(TARGET [gtest_discover_tests arguments]): the GoogleTest cases of
# TARGET as ctest tests. Normally one ctest test per case (gtest_discover_tests). With
# SOFTIB_TESTS_PER_SUITE (the asan, tsan and m32 presets) one ctest test per test suite instead,
# named `<Suite>.*<suffix>` and run as `--gtest_filter=<Suite>.*`: a sanitized process costs
# ~0.3 s to start and to check for leaks at exit, a 32-bit one under qemu-i386 about as much,
# more than most cases take, and CI runs ~1,900 of them. Discovery happens when ctest runs, as DISCOVERY_MODE PRE_TEST does.
# Supported arguments: DISCOVERY_MODE (ignored in per-suite mode), TEST_FILTER (`*` or a
# negative pattern `-...`), TEST_SUFFIX, PROPERTIES.
option(SOFTIB_TESTS_PER_SUITE "One ctest test per GoogleTest suite instead of per case" OFF)

set(_softib_per_suite_script ${CMAKE_CURRENT_LIST_DIR}/GTestPerSuiteAdd.cmake)

function(softib_discover_tests target)
  if(NOT SOFTIB_TESTS_PER_SUITE)
    gtest_discover_tests(${target} ${ARGN})
    return()
  endif()
  cmake_parse_arguments(arg "" "DISCOVERY_MODE;TEST_FILTER;TEST_SUFFIX" "PROPERTIES" ${ARGN})
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "softib_discover_tests(${target}): unsupported ${arg_UNPARSED_ARGUMENTS}")
  endif()
  set(negative "")
  if(arg_TEST_FILTER MATCHES "^-")
    set(negative "${arg_TEST_FILTER}")
  elseif(arg_TEST_FILTER AND NOT arg_TEST_FILTER STREQUAL "*")
    message(FATAL_ERROR "softib_discover_tests(${target}): TEST_FILTER must be * or -PATTERN")
  endif()
  # The properties as a CMake list literal for the generated script.
  set(properties "")
  foreach(item IN LISTS arg_PROPERTIES)
    string(REPLACE "\\" "\\\\" item "${item}")
    string(REPLACE "\"" "\\\"" item "${item}")
    string(APPEND properties " \"${item}\"")
  endforeach()
  set(name ${target}${arg_TEST_SUFFIX})
  set(list_file ${CMAKE_CURRENT_BINARY_DIR}/${name}_suites.cmake)
  set(include_file ${CMAKE_CURRENT_BINARY_DIR}/${name}_suites_include.cmake)
  file(GENERATE OUTPUT ${include_file} CONTENT
"set(_exe \"$<TARGET_FILE:${target}>\")
set(_target \"${target}\")
set(_suffix \"${arg_TEST_SUFFIX}\")
set(_negative \"${negative}\")
set(_properties${properties})
set(_emulator \"${CMAKE_CROSSCOMPILING_EMULATOR}\")
set(_workdir \"${CMAKE_CURRENT_BINARY_DIR}\")
include(\"${_softib_per_suite_script}\")
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})
endfunction()
