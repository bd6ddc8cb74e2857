#include "softib/smp/sma_common.h"

namespace softib::smp {

bool MKeyAllows(const MKeyRefs& state, uint8_t method, uint64_t smp_mkey, uint64_t now_seconds,
                bool* hide_mkey) {
  // The lease runs from the first refused SMP; at its end the port is open again.
  if (state.lease_start && state.lease_period != 0 &&
      now_seconds - *state.lease_start >= state.lease_period) {
    state.protect_bits = 0;
    state.lease_start.reset();
  }
  *hide_mkey = false;
  if (state.key == 0 || smp_mkey == state.key) {
    state.lease_start.reset();
    return true;
  }
  const bool read_only = method == mad::kSubnMgtGet || method == mad::kSubnMgtTrapRepress;
  if (read_only && state.protect_bits <= 1) {
    *hide_mkey = state.protect_bits == 1;
    return true;
  }
  if (state.violations != 0xFFFF) ++state.violations;
  if (!state.lease_start && state.lease_period != 0) state.lease_start = now_seconds;
  return false;
}

}  // namespace softib::smp
