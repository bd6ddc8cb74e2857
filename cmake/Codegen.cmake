# Targets and tests of the generator itself (label: codegen).
set(_gen ${CMAKE_SOURCE_DIR}/codegen/softib_gen.py)

add_custom_target(regen
  COMMAND ${SOFTIB_PYTHON} ${_gen}
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
  COMMENT "Regenerating generated/ from idl/"
  USES_TERMINAL)

add_custom_target(verify-generated
  COMMAND ${SOFTIB_PYTHON} ${_gen} --verify
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
  COMMENT "Checking that generated/ matches idl/ and codegen/"
  USES_TERMINAL)

if(NOT SOFTIB_M32)
  add_test(NAME codegen.unit
           COMMAND ${SOFTIB_PYTHON} -m unittest discover -s codegen/tests -t codegen
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  add_test(NAME codegen.verify
           COMMAND ${SOFTIB_PYTHON} ${_gen} --verify
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(codegen.unit codegen.verify PROPERTIES LABELS codegen)
endif()
