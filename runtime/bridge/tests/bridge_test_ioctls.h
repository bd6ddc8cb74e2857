// The IOCTLs of the bridge tests' driver (bridge_test_driver.h), shared with the child
// client program, which links no kernel code.
//   kEcho     output = input, synchronously; INVALID_PARAMETER when the input exceeds
//             kMaxEcho or the output cannot hold it.
//   kPend     pended in a CancelSafeQueue (the inverted call) until a kRelease.
//   kRelease  completes at once and queues a DPC that completes every pended IRP with
//             SUCCESS and the output kReleased.
//   kMode     one byte of output: the IRP's RequestorMode (1 = user).
//   kBlock    blocks in dispatch (PASSIVE) until the test unblocks the driver, then succeeds:
//             holds the bridge's worker so later requests wait behind it.
//   kMemfd    answers with a memfd holding the input bytes (reply_fds.h), SUCCESS; with
//             an empty input, attaches the memfd and then fails the IRP (nothing sent).
//             One byte of output: 1 when the attach was accepted.
#pragma once

#include <cstdint>

namespace softib::bridge::test {

inline constexpr uint32_t kEcho = 0x220000;
inline constexpr uint32_t kPend = 0x220004;
inline constexpr uint32_t kRelease = 0x220008;
inline constexpr uint32_t kMode = 0x22000c;
inline constexpr uint32_t kBlock = 0x220010;
inline constexpr uint32_t kMemfd = 0x220014;
inline constexpr uint32_t kMaxEcho = 256;
inline constexpr char kReleased[] = "released";  // its 8 letters are the output

}  // namespace softib::bridge::test
