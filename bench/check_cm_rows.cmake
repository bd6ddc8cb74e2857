# Runs softib_bench_cm with 200 connections and fails unless it exits 0 and prints its rows
# (connections held, no leak, the rates and their ratios). Timing is not checked.
execute_process(COMMAND ${BENCH} 200 32 RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "softib_bench_cm exited with ${rc}")
endif()
foreach(row "200 RC connections established and held" "(no leak)"
            "floor +[0-9]+ MAD round trips/s" "connect +[0-9]+ connections/s +\\([0-9.]+x"
            "teardown +[0-9]+ disconnections/s +\\([0-9.]+x")
  if(NOT out MATCHES "${row}")
    message(FATAL_ERROR "row missing: ${row}")
  endif()
endforeach()
