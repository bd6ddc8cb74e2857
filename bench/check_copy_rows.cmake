# Runs softib_bench_copy briefly and fails unless it exits 0 and prints a row per size.
execute_process(COMMAND ${EMULATOR} ${BENCH} --iters 4
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "softib_bench_copy exited with ${rc}")
endif()
foreach(size 4096 8192 16384 32768 65536 131072 262144 524288 1048576 2097152 4194304)
  if(NOT out MATCHES " ${size} +4 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+")
    message(FATAL_ERROR "row for ${size} bytes missing or malformed")
  endif()
endforeach()
