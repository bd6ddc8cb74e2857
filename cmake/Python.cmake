# Finds a Python 3 that can import jinja2 (the generator's only dependency).
# Debian's /usr/bin/python3 with python3-jinja2 is preferred: the python3 first
# on PATH on these machines is often a pyenv build without Jinja2.
set(_softib_python_candidates /usr/bin/python3)
find_program(_softib_path_python NAMES python3)
if(_softib_path_python)
  list(APPEND _softib_python_candidates ${_softib_path_python})
endif()

set(SOFTIB_PYTHON "" CACHE FILEPATH "Python 3 interpreter with Jinja2 for codegen")
if(NOT SOFTIB_PYTHON)
  foreach(candidate IN LISTS _softib_python_candidates)
    if(EXISTS ${candidate})
      execute_process(COMMAND ${candidate} -c "import jinja2"
                      RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
      if(_rc EQUAL 0)
        set(SOFTIB_PYTHON ${candidate} CACHE FILEPATH "Python 3 with Jinja2 for codegen" FORCE)
        break()
      endif()
    endif()
  endforeach()
endif()

if(NOT SOFTIB_PYTHON)
  message(FATAL_ERROR
    "softib: no Python 3 interpreter that can import jinja2 was found "
    "(tried: ${_softib_python_candidates}). Install Debian's python3-jinja2 "
    "(apt-get install python3-jinja2) or set -DSOFTIB_PYTHON=/path/to/python3.")
endif()
message(STATUS "softib: codegen interpreter ${SOFTIB_PYTHON}")
