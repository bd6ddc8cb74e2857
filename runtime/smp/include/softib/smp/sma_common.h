// What every Subnet Management Agent shares, whether a switch's (fabric/switch) or an HCA
// port's (hca/device): the MAD status values it answers with (IBA 13.4.7), the M_Key
// protection check of IBA 14.2.4 and the PortState transitions a SubnSet(PortInfo) may ask
// for (IBA 14.2.5.6).
#pragma once

#include <cstdint>
#include <optional>

#include "softib/mad/mad_common.h"

namespace softib::smp {

// MAD Status (IBA 13.4.7, Table 127): the code sits in bits 4..2.
constexpr uint16_t StatusOf(mad::MadStatusCode code) {
  return static_cast<uint16_t>(static_cast<uint16_t>(code) << 2);
}
inline constexpr uint16_t kStatusOk = 0;
inline constexpr uint16_t kStatusBadVersion = StatusOf(mad::MadStatusCode::BAD_VERSION);
inline constexpr uint16_t kStatusBadMethod = StatusOf(mad::MadStatusCode::METHOD_NOT_SUPPORTED);
inline constexpr uint16_t kStatusBadAttribute =
    StatusOf(mad::MadStatusCode::METHOD_ATTRIBUTE_NOT_SUPPORTED);
inline constexpr uint16_t kStatusBadValue = StatusOf(mad::MadStatusCode::INVALID_ATTRIBUTE_VALUE);

// The M_Key state an SMA keeps (PortInfo:M_Key, M_KeyProtectBits, M_KeyLeasePeriod,
// M_KeyViolations) as references into wherever the agent stores them, plus when the lease
// period started (unset: not running).
struct MKeyRefs {
  uint64_t key;
  uint8_t& protect_bits;
  uint16_t lease_period;  // seconds; 0: the lease never expires
  uint16_t& violations;
  std::optional<uint64_t>& lease_start;
};

// IBA 14.2.4.1-2: a zero M_Key or a matching one gives full access; otherwise the protect
// bits decide (0: Get allowed; 1: Get allowed but PortInfo:M_Key reads as 0; 2, 3: nothing)
// and Set is always refused. A refused SMP is not answered, counts in M_KeyViolations
// (saturating) and starts the lease period; when it ends without a matching key the
// protect bits fall back to 0. `now_seconds` is the host's clock. *hide_mkey: answer with
// PortInfo:M_Key zeroed.
bool MKeyAllows(const MKeyRefs& state, uint8_t method, uint64_t smp_mkey, uint64_t now_seconds,
                bool* hide_mkey);

// IBA 14.2.5.6 PortInfo:PortState with the logical port states of IBA 7.2: whether a
// SubnSet(PortInfo) may ask for state `to` (a mad::PortState value) while the port is in
// `from`. NO_CHANGE (0) always; Down from any state; Armed from Init (Armed again: no change);
// Active from Armed (Active again: no change). Init is reached only through the link, never
// set; ACTIVE_DEFER (5) and the reserved values are refused. An SMA refuses the whole Set
// with kStatusBadValue when this is false.
bool LegalPortStateTransition(uint8_t from, uint8_t to);

}  // namespace softib::smp
