#include "hca/device/rc.h"

#include "softib/wire/wire.h"

namespace softib::hca {

uint64_t RnrTimerNs(uint8_t code) {
  // IBA 9.7.5.2.8, table 45, in microseconds; code 0 is the longest wait.
  static constexpr uint32_t kMicroseconds[32] = {
      655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,   320,
      480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240, 15360,
      20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520};
  return uint64_t{kMicroseconds[code & 0x1F]} * 1000;
}

uint64_t AckTimeoutNs(uint8_t timeout) {
  if (timeout == 0) return 0;
  // 4.096 µs · 2^t = 4096 ns · 2^t; the field is 5 bits.
  return uint64_t{4096} << (timeout & 0x1F);
}

using wire::BthOpcode;

RequestShape ShapeOf(uint8_t op) {
  using K = RcResponder::Kind;
  switch (static_cast<BthOpcode>(op)) {
    case BthOpcode::RC_SEND_FIRST:
      return {K::kSend, true, false, false, false};
    case BthOpcode::RC_SEND_MIDDLE:
      return {K::kSend, false, false, false, false};
    case BthOpcode::RC_SEND_LAST:
      return {K::kSend, false, true, false, false};
    case BthOpcode::RC_SEND_LAST_WITH_IMMEDIATE:
      return {K::kSend, false, true, true, false};
    case BthOpcode::RC_SEND_ONLY:
      return {K::kSend, true, true, false, false};
    case BthOpcode::RC_SEND_ONLY_WITH_IMMEDIATE:
      return {K::kSend, true, true, true, false};
    case BthOpcode::RC_SEND_LAST_WITH_INVALIDATE:
      return {K::kSend, false, true, false, true};
    case BthOpcode::RC_SEND_ONLY_WITH_INVALIDATE:
      return {K::kSend, true, true, false, true};
    case BthOpcode::RC_RDMA_WRITE_FIRST:
      return {K::kWrite, true, false, false, false};
    case BthOpcode::RC_RDMA_WRITE_MIDDLE:
      return {K::kWrite, false, false, false, false};
    case BthOpcode::RC_RDMA_WRITE_LAST:
      return {K::kWrite, false, true, false, false};
    case BthOpcode::RC_RDMA_WRITE_LAST_WITH_IMMEDIATE:
      return {K::kWrite, false, true, true, false};
    case BthOpcode::RC_RDMA_WRITE_ONLY:
      return {K::kWrite, true, true, false, false};
    case BthOpcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE:
      return {K::kWrite, true, true, true, false};
    case BthOpcode::RC_RDMA_READ_REQUEST:
    case BthOpcode::RC_COMPARE_SWAP:
    case BthOpcode::RC_FETCH_ADD:
      return {K::kNone, true, true, false, false};
    default:
      return {K::kNone, false, false, false, false, false};
  }
}

}  // namespace softib::hca
