# Runs softib_bench_control with a handful of iterations and fails unless it exits 0 and
# prints every row and the ratio line. Timing is not checked: the machine is shared.
execute_process(COMMAND ${EMULATOR} ${BENCH} --iters 50 --size 8
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "softib_bench_control exited with ${rc}")
endif()
set(number "[0-9]+\\.[0-9][0-9]")
foreach(row floor-threads floor-processes channel-threads channel-procs)
  if(NOT out MATCHES " ${row} +8 +50 +${number} +${number} +${number} +${number} +${number}")
    message(FATAL_ERROR "row ${row} missing or malformed")
  endif()
endforeach()
if(NOT out MATCHES "ratio channel/floor \\(t_typical\\): processes ${number}, threads ${number}")
  message(FATAL_ERROR "ratio line missing")
endif()
