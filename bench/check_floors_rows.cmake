# Runs softib_bench_floors briefly and fails unless it exits 0 and prints every row.
# Timing is not checked: the machine is shared.
execute_process(COMMAND ${EMULATOR} ${BENCH} --iters 500 --messages 20000
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "softib_bench_floors exited with ${rc}")
endif()
set(number "[0-9]+\\.[0-9]+")
foreach(row futex-pingpong eventfd-pingpong udp-loopback)
  if(NOT out MATCHES " ${row} +8 +500 +${number} +${number} +${number} +${number} +${number}")
    message(FATAL_ERROR "row ${row} missing or malformed")
  endif()
endforeach()
if(NOT out MATCHES " spsc-ring +8 +20000 +${number} +${number}")
  message(FATAL_ERROR "row spsc-ring missing or malformed")
endif()
