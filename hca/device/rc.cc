#include "hca/device/rc.h"

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

}  // namespace softib::hca
