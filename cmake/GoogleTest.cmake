# GoogleTest is built from Debian's sources (package googletest) with this
# build's flags, so the m32 preset gets a 32-bit gtest and sanitizer presets get
# an instrumented one.
set(SOFTIB_GTEST_SOURCE /usr/src/googletest CACHE PATH "GoogleTest source tree")
if(NOT EXISTS ${SOFTIB_GTEST_SOURCE}/CMakeLists.txt)
  message(FATAL_ERROR "softib: GoogleTest sources not found at ${SOFTIB_GTEST_SOURCE} "
                      "(apt-get install googletest)")
endif()
set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
set(BUILD_GMOCK ON CACHE BOOL "" FORCE)
add_subdirectory(${SOFTIB_GTEST_SOURCE} ${CMAKE_BINARY_DIR}/_googletest EXCLUDE_FROM_ALL SYSTEM)
include(GoogleTest)
include(${CMAKE_CURRENT_LIST_DIR}/GTestPerSuite.cmake)
