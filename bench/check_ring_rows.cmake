# Runs softib_bench_ring briefly and fails unless it exits 0 and prints every row.
# Timing is not checked: the machine is shared.
execute_process(COMMAND ${EMULATOR} ${BENCH} --iters 250 --messages 2000
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "softib_bench_ring exited with ${rc}")
endif()
set(number "[0-9]+\\.[0-9]+")
foreach(row shm-spin shm-yield-1cpu shm-futex ring-spin ring-yield ring-futex ring-adaptive
            ring-pin-spin-yield ring-pin-adaptive ring-pin-adaptive-dma ring-split-hca-futex
            ring-loopback-spin)
  if(NOT out MATCHES " ${row} +8 +[0-9]+ +${number} +${number} +${number} +${number} +${number} +${number}")
    message(FATAL_ERROR "row ${row} missing or malformed")
  endif()
endforeach()
foreach(row rate-yield rate-adaptive rate-pin-spin-yield rate-pin-adaptive rate-split-hca-futex
            rate-loopback-spin)
  if(NOT out MATCHES " ${row} +8 +10000 +${number} +${number}")
    message(FATAL_ERROR "row ${row} missing or malformed")
  endif()
endforeach()
