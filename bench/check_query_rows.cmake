# Runs softib_bench_query with a handful of iterations and fails unless it exits 0 and
# prints every row and the ratio line. Timing is not checked: the machine is shared.
execute_process(COMMAND ${BENCH} --iters 100
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "softib_bench_query exited with ${rc}")
endif()
set(number "[0-9]+\\.[0-9][0-9]")
foreach(row floor QueryCa QueryQp)
  if(NOT out MATCHES " ${row} +100 +${number} +${number} +${number} +${number} +${number} +${number}")
    message(FATAL_ERROR "row ${row} missing or malformed")
  endif()
endforeach()
if(NOT out MATCHES "ratio QueryCa/floor \\(t_typical\\): ${number}")
  message(FATAL_ERROR "ratio line missing")
endif()
