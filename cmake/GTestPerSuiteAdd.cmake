# Run by ctest (a TEST_INCLUDE_FILES script of softib_discover_tests in per-suite mode): lists
# the cases of _exe and adds one test per suite that has an enabled case. A binary that is
# missing or cannot list its cases becomes one failing test, so nothing disappears quietly.
if(NOT EXISTS "${_exe}")
  add_test("${_target}${_suffix}_NOT_BUILT" "${_exe}")
  return()
endif()
set(_filter "*${_negative}")
execute_process(
  COMMAND ${_emulator} "${_exe}" --gtest_list_tests "--gtest_filter=${_filter}"
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
set(_suite "")
set(_enabled 0)
macro(_softib_add_suite)
  if(NOT _suite STREQUAL "" AND _enabled GREATER 0)
    set(_test "${_suite}.*${_suffix}")
    add_test("${_test}" ${_emulator} "${_exe}" "--gtest_filter=${_suite}.*${_negative}")
    set_tests_properties("${_test}" PROPERTIES WORKING_DIRECTORY "${_workdir}" ${_properties})
  endif()
endmacro()
foreach(_line IN LISTS _lines)
  if(_line MATCHES "^Running main\\(\\)" OR _line STREQUAL "")
    continue()
  endif()
  if(_line MATCHES "^([^ #]+)\\.")  # a suite: "Suite." or "Prefix/Suite.  # TypeParam = ..."
    _softib_add_suite()
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
_softib_add_suite()
