# Runs softib_bench_crc briefly and fails unless it exits 0 and prints a row per size.
execute_process(COMMAND ${EMULATOR} ${BENCH} --iters 4
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "softib_bench_crc exited with ${rc}")
endif()
foreach(size 256 1024 4096 65536 1048576)
  if(NOT out MATCHES " ${size} +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+")
    message(FATAL_ERROR "row for ${size} bytes missing or malformed")
  endif()
endforeach()
