// Partition enforcement on the switch's external ports (IBA 10.9.2, 14.2.5.6): a port whose
// PortInfo has PartitionEnforcementInbound (Outbound) set passes a data packet in (out) only
// when its P_Key matches an entry of the port's P_KeyTable — same 15-bit key, and not both
// limited members (10.9.3). A refused packet is dropped and counted in the port's
// PortInfo:P_KeyViolations, and reported to the SM by trap 259 (traps.cc).
#include <algorithm>

#include "softib/fabric/switch.h"

namespace softib::fabric {

bool Switch::PKeyAllowed(uint8_t port, uint16_t pkey, bool inbound,
                         std::span<const uint8_t> packet) {
  if (port == 0 || port > config_.num_ports) return true;
  Port& p = ports_[port];
  if (!(inbound ? p.info.PartitionEnforcementInbound : p.info.PartitionEnforcementOutbound))
    return true;
  const bool ok = std::any_of(p.pkeys.begin(), p.pkeys.end(), [pkey](uint16_t entry) {
    return (entry & 0x7FFF) != 0 && (entry & 0x7FFF) == (pkey & 0x7FFF) &&
           ((entry | pkey) & 0x8000) != 0;
  });
  if (ok) return true;
  if (p.info.P_KeyViolations != 0xFFFF) ++p.info.P_KeyViolations;
  RaiseTrap259(port, packet);
  return false;
}

RouteResult Switch::EnforceOutbound(RouteResult result, uint16_t pkey, uint8_t ingress,
                                    std::span<const uint8_t> packet) {
  if (result.drop) return result;
  std::erase_if(result.egress,
                [&](uint8_t port) { return !PKeyAllowed(port, pkey, false, packet); });
  if (result.egress.empty()) return Drop(SwitchDrop::kPartition, ingress);
  return result;
}

}  // namespace softib::fabric
