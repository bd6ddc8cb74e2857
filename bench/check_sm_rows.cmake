# Runs softib_bench_sm_bringup once on the small default fabric and fails unless it exits 0
# and prints its rows: both SMs brought the fabric up on ibsim, and softib-sm on softibd.
execute_process(COMMAND ${BENCH} --rounds 1 --presets default --softib-presets default
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "softib_bench_sm_bringup exited with ${rc}")
endif()
if(NOT out MATCHES "default +7 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+")
  message(FATAL_ERROR "row for default missing or malformed")
endif()
if(NOT out MATCHES "on softib's fabric[^\n]*\n[^\n]*\ndefault +7 +no +[0-9.]+ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+")
  message(FATAL_ERROR "row for default on softib's fabric missing or malformed")
endif()
if(NOT out MATCHES "inside softibd[^\n]*\n[^\n]*\ndefault +7 +no +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9]+")
  message(FATAL_ERROR "row for default inside softibd (--sm internal) missing or malformed")
endif()
