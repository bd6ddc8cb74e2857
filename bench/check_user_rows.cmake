# Runs softib_bench_user briefly and fails unless it exits 0 and prints every row.
# Timing is not checked: the machine is shared.
execute_process(COMMAND ${BENCH} --iters 200 --bytes 1048576 --messages 2000 -s 65536
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "softib_bench_user exited with ${rc}")
endif()
set(number "[0-9]+\\.[0-9]+")
foreach(row "send_lat +8 +200 +${number} us +${number} us +${number}"
            "write_bw +65536 +16 +${number} GB/s +${number} GB/s +${number}"
            "send_rate +8 +2000 +${number} Mpps +goal 5 Mpps +${number}")
  if(NOT out MATCHES " ${row}")
    message(FATAL_ERROR "row '${row}' missing or malformed")
  endif()
endforeach()
