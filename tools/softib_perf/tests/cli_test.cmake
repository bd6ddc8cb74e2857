# softib_perf as a process: every bad command line gets exactly one "softib_perf: error:"
# line on stderr and exit code 2; a run between two in-process kernel clients exits 0 with
# JSON whose rows and validation counts are exact.

function(expect_usage_error)
  execute_process(COMMAND ${PERF} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 2)
    message(FATAL_ERROR "softib_perf ${ARGN}: exit ${rc}, expected 2\n${out}${err}")
  endif()
  if(NOT err MATCHES "^softib_perf: error: [^\n]+\n$")
    message(FATAL_ERROR "softib_perf ${ARGN}: expected one error line, got:\n${err}")
  endif()
endfunction()

expect_usage_error()
expect_usage_error(pingpong)
expect_usage_error(write_bw)
expect_usage_error(write_bw --connect)
expect_usage_error(write_bw --oob tcp:8.8.8.8:80)
expect_usage_error(read_lat --kernel -c UD)
expect_usage_error(write_bw --kernel -s lots)
expect_usage_error(send_lat --kernel -t 2)
expect_usage_error(atomic_lat --kernel -s 4)
expect_usage_error(write_bw --kernel --no-such-flag)

execute_process(COMMAND ${PERF} --help RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out MATCHES "--oob")
  message(FATAL_ERROR "--help: exit ${rc}\n${out}")
endif()

# A real run: 30 validated ping-pongs of 64 bytes, kernel clients of an in-process node.
execute_process(COMMAND ${PERF} send_lat --kernel -s 64 -n 30 --validate --json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "send_lat --kernel: exit ${rc}\n${out}${err}")
endif()
string(JSON test GET "${out}" test)
string(JSON validated GET "${out}" validated_messages)
string(JSON bytes GET "${out}" results 0 bytes)
string(JSON iterations GET "${out}" results 0 iterations)
string(JSON typical GET "${out}" results 0 t_typical_us)
if(NOT test STREQUAL "send_lat" OR NOT validated EQUAL 30 OR NOT bytes EQUAL 64
   OR NOT iterations EQUAL 30 OR NOT typical GREATER 0)
  message(FATAL_ERROR "unexpected result: ${out}")
endif()

# The table form: perftest's bandwidth header and one row.
execute_process(COMMAND ${PERF} write_bw --kernel -s 4096 -n 20 --validate
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "write_bw --kernel: exit ${rc}\n${out}${err}")
endif()
if(NOT out MATCHES "#bytes +#iterations +BW peak\\[MB/sec\\] +BW average\\[MB/sec\\] +MsgRate\\[Mpps\\]"
   OR NOT out MATCHES "\n 4096 +20 +[0-9.]+ +[0-9.]+ +[0-9.]+\n"
   OR NOT out MATCHES "Validation +: ON \\(1 checked\\)")
  message(FATAL_ERROR "write_bw table malformed:\n${out}")
endif()
message("${out}")
