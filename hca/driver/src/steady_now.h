// The driver's clock: the HCA core's timers (ACK, RNR, M_Key lease) and the ring service's
// spin window all run on the host's monotonic clock, in nanoseconds.
#pragma once

#include <chrono>
#include <cstdint>

namespace softib::hca {

inline uint64_t SteadyNowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace softib::hca
