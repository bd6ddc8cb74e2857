# Targets over the generated verb code: ABI headers and their check, the QP state table,
# the kernel dispatch/direct-call code, the user proxies, and the verb conformance suite.
# Source lists come from generated/sources.cmake (included by the top level).
#
# softib_gen_kernel (linked by the AL), softib_gen_user (by runtime/user) and
# softib_conformance_dispatch (by tests/conformance's suite) are OBJECT libraries over the
# runtime interfaces (runtime/*/include).

set(SOFTIB_GENERATED_DIR ${PROJECT_SOURCE_DIR}/generated)

# ABI headers (generated/include/softib/abi/*.h): usable from kernel and user code, 32 or 64 bit.
add_library(softib_abi INTERFACE)
target_include_directories(softib_abi INTERFACE ${SOFTIB_GENERATED_DIR}/include)
target_compile_features(softib_abi INTERFACE cxx_std_20)

# Interface headers of the emulated kernel and of the user runtime (declarations only).
add_library(softib_kernel_api INTERFACE)
target_include_directories(softib_kernel_api INTERFACE ${PROJECT_SOURCE_DIR}/runtime/kernel/include)
target_link_libraries(softib_kernel_api INTERFACE softib_abi)
add_library(softib_user_api INTERFACE)
target_include_directories(softib_user_api INTERFACE ${PROJECT_SOURCE_DIR}/runtime/user/include)
target_link_libraries(softib_user_api INTERFACE softib_abi)

# Every ABI header compiled in one TU (each static_asserts its sizes and offsets).
set(_softib_abi_check ${SOFTIB_GEN_ABI_SOURCES})
list(FILTER _softib_abi_check INCLUDE REGEX "/abi/[^/]*\\.cc$")
add_library(softib_abi_check OBJECT ${_softib_abi_check})
target_link_libraries(softib_abi_check PRIVATE softib_abi)

# The QP state table and CheckQpTransition().
set(_softib_qp_state ${SOFTIB_GEN_ABI_SOURCES})
list(FILTER _softib_qp_state INCLUDE REGEX "/qp_state/[^/]*\\.cc$")
add_library(softib_qp_state STATIC ${_softib_qp_state})
target_link_libraries(softib_qp_state PUBLIC softib_abi)

# User proxies: #include "user/<module>_proxy.h".
add_library(softib_gen_user OBJECT ${SOFTIB_GEN_USER_SOURCES})
target_include_directories(softib_gen_user PUBLIC ${SOFTIB_GENERATED_DIR})
target_link_libraries(softib_gen_user PUBLIC softib_user_api)

add_executable(qp_state_table_test ${PROJECT_SOURCE_DIR}/tests/unit/qp_state_table_test.cc)
target_link_libraries(qp_state_table_test PRIVATE softib_qp_state GTest::gtest_main)
add_test(NAME qp_state_table_test COMMAND qp_state_table_test)
set_tests_properties(qp_state_table_test PROPERTIES LABELS unit)

# Verb conformance, ABI part: layouts and round trips; runs in the 64-bit and m32 builds.
# One test, so that its per-verb case counts print together.
set(_softib_conf_abi ${SOFTIB_GEN_CONFORMANCE_SOURCES})
list(FILTER _softib_conf_abi INCLUDE REGEX "_abi_conformance\\.cc$")
add_executable(softib_conformance_abi ${_softib_conf_abi})
softib_compile_unoptimised(softib_conformance_abi)
target_link_libraries(softib_conformance_abi PRIVATE softib_abi GTest::gtest_main)
add_test(NAME softib_conformance_abi COMMAND softib_conformance_abi)
set_tests_properties(softib_conformance_abi PROPERTIES LABELS conformance)

if(SOFTIB_M32)
  # Right for m32: the kernel side (dispatch, direct calls, the dispatch conformance cases
  # that drive a node) is 64-bit only; a 32-bit process reaches it through the channel.
  return()
endif()

# Kernel dispatch, direct calls, IRP builders: #include "kernel/<module>_dispatch.h".
set(_softib_gen_kernel ${SOFTIB_GEN_KERNEL_SOURCES})
list(FILTER _softib_gen_kernel EXCLUDE REGEX "/kernel/(hca|device)/")
add_library(softib_gen_kernel OBJECT ${_softib_gen_kernel})
target_include_directories(softib_gen_kernel PUBLIC ${SOFTIB_GENERATED_DIR})
target_link_libraries(softib_gen_kernel PUBLIC softib_kernel_api)

# The command interface of `target hca` modules (idl/ci.idl): the HCA driver's dispatch and
# the IRP builders of its callers, #include "kernel/hca/<module>_{dispatch,irp}.h". A static
# library, as both the HCA driver and the Access Layer link it into one node.
set(_softib_gen_hca ${SOFTIB_GEN_KERNEL_SOURCES})
list(FILTER _softib_gen_hca INCLUDE REGEX "/kernel/hca/")
add_library(softib_gen_hca STATIC ${_softib_gen_hca})
target_include_directories(softib_gen_hca PUBLIC ${SOFTIB_GENERATED_DIR})
target_link_libraries(softib_gen_hca PUBLIC softib_kernel_api)

# The devices of `target device` modules (idl/ibat.idl): the owning driver's dispatch and the
# IRP builders of its kernel clients, #include "kernel/device/<module>_{dispatch,irp}.h".
set(_softib_gen_device ${SOFTIB_GEN_KERNEL_SOURCES})
list(FILTER _softib_gen_device INCLUDE REGEX "/kernel/device/")
add_library(softib_gen_device STATIC ${_softib_gen_device})
target_include_directories(softib_gen_device PUBLIC ${SOFTIB_GENERATED_DIR})
target_link_libraries(softib_gen_device PUBLIC softib_kernel_api)

# Their conformance cases: linked by a test binary that implements DeviceConformanceHarness
# over the driver's device.
set(_softib_conf_device ${SOFTIB_GEN_CONFORMANCE_SOURCES})
list(FILTER _softib_conf_device INCLUDE REGEX "_device_conformance\\.cc$")
add_library(softib_conformance_device OBJECT ${_softib_conf_device})
softib_compile_unoptimised(softib_conformance_device)
target_include_directories(softib_conformance_device PUBLIC ${SOFTIB_GENERATED_DIR}/conformance/verbs)
target_link_libraries(softib_conformance_device PUBLIC softib_kernel_api GTest::gtest)

# The conformance cases of `target hca` modules: linked by the HCA driver's tests, which
# implement HcaConformanceHarness over a CA device.
set(_softib_conf_hca ${SOFTIB_GEN_CONFORMANCE_SOURCES})
list(FILTER _softib_conf_hca INCLUDE REGEX "_hca_conformance\\.cc$")
add_library(softib_conformance_hca OBJECT ${_softib_conf_hca})
softib_compile_unoptimised(softib_conformance_hca)
target_include_directories(softib_conformance_hca PUBLIC ${SOFTIB_GENERATED_DIR}/conformance/verbs)
target_link_libraries(softib_conformance_hca PUBLIC softib_kernel_api GTest::gtest)

# Verb conformance, dispatch part: runs against the ConformanceHarness that tests/conformance
# declares (conformance_harness.h: test code, not a kernel header) and implements (a booted
# node); that folder links these objects into softib_conformance_dispatch_tests.
set(_softib_conf_dispatch ${SOFTIB_GEN_CONFORMANCE_SOURCES})
list(FILTER _softib_conf_dispatch INCLUDE REGEX "_dispatch_conformance\\.cc$")
add_library(softib_conformance_dispatch OBJECT ${_softib_conf_dispatch})
softib_compile_unoptimised(softib_conformance_dispatch)
target_include_directories(softib_conformance_dispatch PRIVATE
                           ${PROJECT_SOURCE_DIR}/tests/conformance)
target_link_libraries(softib_conformance_dispatch PUBLIC softib_kernel_api GTest::gtest)
