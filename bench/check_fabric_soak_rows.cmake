# Runs softib_bench_fabric_soak briefly and fails unless both rows print.
execute_process(COMMAND ${BENCH} --messages 2000
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "softib_bench_fabric_soak exited with ${rc}")
endif()
foreach(row clean faulty)
  if(NOT out MATCHES " ${row} +2000 +[0-9]+ ")
    message(FATAL_ERROR "row ${row} missing or malformed")
  endif()
endforeach()
