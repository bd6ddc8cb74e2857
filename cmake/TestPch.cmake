# One precompiled header for the test targets: GoogleTest and the standard headers that the
# tests include most. Parsing them costs about 3 CPU-seconds per translation unit, loading the
# precompiled header about 1.5 (README, "Building and testing"); every target that links
# GoogleTest reuses the one header (REUSE_FROM), so a preset builds it once.
#
# gcc only: clang (the fuzz preset, which builds no GoogleTest target) refuses a precompiled
# header whose predefined macros differ instead of falling back to the text. Targets compiled
# at another optimisation level than the preset's (softib_compile_unoptimised) keep parsing
# the text: gcc would not use a header built with other -O flags.
# -DSOFTIB_TEST_PCH=OFF turns it off (each file then parses the headers itself).
option(SOFTIB_TEST_PCH "Precompile GoogleTest and the standard headers for the test targets" ON)
if(NOT SOFTIB_TEST_PCH OR NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  return()
endif()

set(_softib_pch_source ${CMAKE_BINARY_DIR}/softib_test_pch.cc)
file(CONFIGURE OUTPUT ${_softib_pch_source} CONTENT "// softib_test_pch: the precompiled header alone\n")
add_library(softib_test_pch OBJECT ${_softib_pch_source})
set_target_properties(softib_test_pch PROPERTIES UNITY_BUILD OFF)
target_link_libraries(softib_test_pch PRIVATE GTest::gtest)
target_precompile_headers(softib_test_pch PRIVATE
  <gtest/gtest.h>
  <algorithm> <array> <atomic> <chrono> <condition_variable> <cstdint> <cstdio> <cstdlib>
  <cstring> <deque> <filesystem> <fstream> <functional> <map> <memory> <mutex> <optional>
  <set> <span> <sstream> <string> <string_view> <thread> <unordered_map> <utility> <vector>)

# ccache caches a compile that makes or uses a precompiled header only with this sloppiness
# (it then hashes the header itself); without it, every such compile would miss.
function(_softib_pch_ccache target)
  get_target_property(launcher ${target} CXX_COMPILER_LAUNCHER)
  if(launcher MATCHES "ccache")
    set_property(TARGET ${target} PROPERTY CXX_COMPILER_LAUNCHER
      ${CMAKE_COMMAND} -E env CCACHE_SLOPPINESS=pch_defines,time_macros ${launcher})
  endif()
endfunction()
_softib_pch_ccache(softib_test_pch)

# Every target below `dir` that links GoogleTest (directly, or through a library that passes
# it on) and is compiled at the preset's optimisation level reuses the header.
function(_softib_use_test_pch dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|OBJECT_LIBRARY|SHARED_LIBRARY)$"
       OR target STREQUAL "softib_test_pch")
      continue()
    endif()
    get_target_property(options ${target} COMPILE_OPTIONS)
    if(options AND "-O0" IN_LIST options)
      continue()
    endif()
    get_target_property(libs ${target} LINK_LIBRARIES)
    set(gtest FALSE)
    foreach(lib IN LISTS libs)
      if(lib MATCHES "^GTest::")
        set(gtest TRUE)
      elseif(TARGET ${lib})
        get_target_property(passed ${lib} INTERFACE_LINK_LIBRARIES)
        if(passed MATCHES "GTest::")
          set(gtest TRUE)
        endif()
      endif()
    endforeach()
    if(gtest)
      target_precompile_headers(${target} REUSE_FROM softib_test_pch)
      _softib_pch_ccache(${target})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _softib_use_test_pch(${sub})
  endforeach()
endfunction()
_softib_use_test_pch(${PROJECT_SOURCE_DIR})
