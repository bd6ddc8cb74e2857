# Runs softib_bench_topology once and fails unless it exits 0 and prints a row per preset.
execute_process(COMMAND ${BENCH} --rounds 1
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "softib_bench_topology exited with ${rc}")
endif()
foreach(preset ft36 ft92 ft-k36)
  if(NOT out MATCHES "${preset} +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+")
    message(FATAL_ERROR "row for ${preset} missing or malformed")
  endif()
endforeach()
