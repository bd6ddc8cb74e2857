# softib_threaded: every buildable target of SOFTIB_THREADED_FOLDERS (and their subfolders),
# and the label `threaded` on their tests, for the tsan preset. 64-bit only: the m32 preset
# builds the user-side libraries alone.
if(SOFTIB_M32)
  return()
endif()

# Labels every directory below `dir` (ctest does not pass a directory's LABELS on to the
# CTestTestfile of its subdirectories) and returns every target defined there.
function(_softib_targets_below dir out)
  set_property(DIRECTORY ${dir} APPEND PROPERTY LABELS threaded)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _softib_targets_below(${sub} below)
    list(APPEND targets ${below})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

add_custom_target(softib_threaded)
foreach(folder IN LISTS SOFTIB_THREADED_FOLDERS)
  set(dir ${PROJECT_SOURCE_DIR}/${folder})
  if(NOT EXISTS ${dir}/CMakeLists.txt)
    message(FATAL_ERROR "SOFTIB_THREADED_FOLDERS names ${folder}, which has no CMakeLists.txt")
  endif()
  _softib_targets_below(${dir} targets)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    get_target_property(excluded ${target} EXCLUDE_FROM_ALL)
    if(type STREQUAL "INTERFACE_LIBRARY" OR excluded)
      continue()
    endif()
    add_dependencies(softib_threaded ${target})
  endforeach()
endforeach()
