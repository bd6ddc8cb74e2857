# Runs softib_bench_kernel_write on a few small sizes and fails unless it exits 0 and
# prints a row for each. Timing is not checked: the machine is shared.
foreach(size 4096 65536)
  execute_process(COMMAND ${BENCH} -s ${size} --bytes 262144
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "softib_bench_kernel_write exited with ${rc}")
  endif()
  if(NOT out MATCHES "\n ${size} +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ *\n")
    message(FATAL_ERROR "row for ${size} bytes missing or malformed")
  endif()
endforeach()
