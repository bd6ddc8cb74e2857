# Run by ctest (a TEST_INCLUDE_FILES script of softib_discover_tests in per-suite mode): lists
# the cases of _exe and adds one test per suite that has an enabled case. A binary that is
# missing or cannot list its cases becomes one failing test, so nothing disappears quietly.
# The suites are cached next to the binary until it is rebuilt: every ctest invocation reads
# this script (check-test-counts runs one per label), and a sanitized binary takes ~0.3 s to
# list itself.
if(NOT EXISTS "${_exe}")
  add_test("${_target}${_suffix}_NOT_BUILT" "${_exe}")
  return()
endif()
set(_cache "${_workdir}/${_target}${_suffix}_suites_cache.cmake")
if(EXISTS "${_cache}" AND NOT "${_exe}" IS_NEWER_THAN "${_cache}")
  include("${_cache}")  # sets _suites
else()
  execute_process(
    COMMAND ${_emulator} "${_exe}" --gtest_list_tests "--gtest_filter=*${_negative}"
    WORKING_DIRECTORY "${_workdir}"
    OUTPUT_VARIABLE _listing
    RESULT_VARIABLE _result
    TIMEOUT 60)
  if(NOT _result EQUAL 0)
    add_test("${_target}${_suffix}_LIST_FAILED" "${_exe}" --gtest_list_tests)
    return()
  endif()
  string(REPLACE ";" "\\;" _listing "${_listing}")
  string(REPLACE "\n" ";" _lines "${_listing}")
  set(_suites "")
  set(_suite "")
  set(_enabled 0)
  foreach(_line IN LISTS _lines)
    if(_line MATCHES "^Running main\\(\\)" OR _line STREQUAL "")
      continue()
    endif()
    if(_line MATCHES "^([^ #]+)\\.")  # a suite: "Suite." or "Prefix/Suite.  # TypeParam = ..."
      if(NOT _suite STREQUAL "" AND _enabled GREATER 0)
        list(APPEND _suites "${_suite}")
      endif()
      set(_suite "${CMAKE_MATCH_1}")
      set(_enabled 0)
      if(_suite MATCHES "(^|/)DISABLED_")
        set(_suite "")
      endif()
    elseif(_line MATCHES "^  ([^ #]+)")  # a case
      if(NOT CMAKE_MATCH_1 MATCHES "^DISABLED_")
        math(EXPR _enabled "${_enabled} + 1")
      endif()
    endif()
  endforeach()
  if(NOT _suite STREQUAL "" AND _enabled GREATER 0)
    list(APPEND _suites "${_suite}")
  endif()
  file(WRITE "${_cache}" "set(_suites \"${_suites}\")\n")
endif()
foreach(_suite IN LISTS _suites)
  set(_test "${_suite}.*${_suffix}")
  add_test("${_test}" ${_emulator} "${_exe}" "--gtest_filter=${_suite}.*${_negative}")
  set_tests_properties("${_test}" PROPERTIES WORKING_DIRECTORY "${_workdir}" ${_properties})
endforeach()
