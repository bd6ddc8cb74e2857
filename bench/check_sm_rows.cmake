# Runs softib_bench_sm_bringup once on the small default fabric and fails unless it exits 0
# and prints its row (both SMs brought the fabric up).
execute_process(COMMAND ${BENCH} --rounds 1 --presets default
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "softib_bench_sm_bringup exited with ${rc}")
endif()
if(NOT out MATCHES "default +7 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+")
  message(FATAL_ERROR "row for default missing or malformed")
endif()
