# Runs softib_bench_control_path with 200 rounds in 2 passes and fails unless it exits 0 and
# prints its rows (the device floor, the null IRP, the direct, IRP and object-API paths, no
# leak).
# Timing is not checked: the machine is shared.
execute_process(COMMAND ${BENCH} 200 2 RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "softib_bench_control_path exited with ${rc}")
endif()
foreach(row "2 passes of 100 rounds"
            "device +[0-9]+ rounds/s +[0-9.]+ us/round \\([0-9.]+\\) +floor"
            "null IRP +[0-9]+ IRPs/s +[0-9.]+ us/IRP"
            "direct +[0-9]+ rounds/s +[0-9.]+ us/round \\([0-9.]+\\) +[0-9.]+x the device floor"
            "irp +[0-9]+ rounds/s +[0-9.]+ us/round \\([0-9.]+\\) +[0-9.]+x the device floor"
            "object +[0-9]+ rounds/s +[0-9.]+ us/round \\([0-9.]+\\) +[0-9.]+x the device floor"
            "QPs [0-9]+ -> [0-9]+ \\(no leak\\)")
  if(NOT out MATCHES "${row}")
    message(FATAL_ERROR "row missing: ${row}")
  endif()
endforeach()
