# Runs softib_bench_switch briefly and fails unless it exits 0 and prints every row.
execute_process(COMMAND ${EMULATOR} ${BENCH} --iters 200
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "softib_bench_switch exited with ${rc}")
endif()
foreach(row floor:copy route:data receive:data receive:dr-relay receive:dr-answer)
  if(NOT out MATCHES " ${row} +[0-9.]+ +[0-9.]+ +[0-9.]+")
    message(FATAL_ERROR "row ${row} missing or malformed")
  endif()
endforeach()
