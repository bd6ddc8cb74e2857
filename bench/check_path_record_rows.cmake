# Runs softib_bench_path_record with 200 queries of each kind and fails unless it exits 0
# and prints both rates (every cached query a cache hit, every bypass an SA query) and the
# ratio. Timing is not checked.
execute_process(COMMAND ${BENCH} 200 RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "softib_bench_path_record exited with ${rc}")
endif()
foreach(row "cached +[0-9]+ PathRecords/s  \\(cache hits \\+200\\)"
            "uncached +[0-9]+ PathRecords/s  \\(SA queries \\+200\\)"
            "ratio cached/uncached: [0-9]+\\.[0-9][0-9]")
  if(NOT out MATCHES "${row}")
    message(FATAL_ERROR "row missing: ${row}")
  endif()
endforeach()
