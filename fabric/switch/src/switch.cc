// Construction of a switch in its power-on state, and the physical link events.
#include <algorithm>

#include "softib/fabric/switch.h"
#include "softib/mad/mad_common.h"

namespace softib::fabric {

const char* ToString(SwitchDrop drop) {
  switch (drop) {
    case SwitchDrop::kMalformed:
      return "malformed packet";
    case SwitchDrop::kBadCrc:
      return "bad ICRC/VCRC";
    case SwitchDrop::kReservedLid:
      return "reserved DLID";
    case SwitchDrop::kUnprogrammedLid:
      return "no forwarding entry for the DLID";
    case SwitchDrop::kIngressNotActive:
      return "ingress port not Active";
    case SwitchDrop::kEgressNotActive:
      return "egress port cannot transmit";
    case SwitchDrop::kVl15NotSmp:
      return "VL15 packet that is not an SMP, or SMP off VL15";
    case SwitchDrop::kDirectedRoute:
      return "directed-route rules";
    case SwitchDrop::kNoAgent:
      return "no agent on the management port";
    case SwitchDrop::kNoSm:
      return "no SM on this switch";
    case SwitchDrop::kMKeyViolation:
      return "M_Key violation";
    case SwitchDrop::kSmaIgnored:
      return "SMP the SMA does not answer";
    case SwitchDrop::kPartition:
      return "P_Key not in the enforcing port's table";
    case SwitchDrop::kCount:
      break;
  }
  return "unknown";
}

Switch::Switch(SwitchConfig config) : config_(std::move(config)) {
  config_.num_ports = std::min<uint8_t>(config_.num_ports, 254);
  if (config_.system_image_guid == 0) config_.system_image_guid = config_.node_guid;
  config_.linear_fdb_cap = static_cast<uint16_t>(config_.linear_fdb_cap / 64 * 64);
  config_.multicast_fdb_cap =
      static_cast<uint16_t>(std::min<unsigned>(config_.multicast_fdb_cap, 0x4000) / 32 * 32);
  config_.vl_arbitration_cap = std::min<uint8_t>(config_.vl_arbitration_cap, 64);
  const unsigned n = config_.num_ports;

  switch_info_.LinearFDBCap = config_.linear_fdb_cap;
  switch_info_.MulticastFDBCap = config_.multicast_fdb_cap;
  switch_info_.LinearFDBTop = 0;
  switch_info_.DefaultPort = 0;
  switch_info_.DefaultMulticastPrimaryPort = 0xFF;
  switch_info_.DefaultMulticastNotPrimaryPort = 0xFF;
  switch_info_.LifeTimeValue = config_.life_time_value & 0x1F;
  switch_info_.PartitionEnforcementCap = config_.partition_enforcement_cap;
  // External ports can check P_Keys both ways (partitions.cc) when they hold a table.
  switch_info_.InboundEnforcementCap = config_.partition_enforcement_cap > 0;
  switch_info_.OutboundEnforcementCap = config_.partition_enforcement_cap > 0;
  switch_info_.EnhancedPort0 = 1;
  switch_info_.MulticastFDBTop = 0xBFFF;  // no multicast entry in use yet

  ports_.resize(n + 1);
  for (unsigned p = 0; p <= n; ++p) {
    mad::PortInfo& pi = ports_[p].info;
    pi.LocalPortNum = static_cast<uint8_t>(p);
    pi.LinkWidthSupported = config_.link_width_supported;
    pi.LinkWidthEnabled = config_.link_width_supported;
    pi.LinkWidthActive = config_.link_width_active;
    pi.LinkSpeedSupported = config_.link_speed_supported;
    pi.LinkSpeedEnabled = config_.link_speed_supported;
    pi.LinkSpeedActive = config_.link_speed_active;
    pi.LinkDownDefaultState = static_cast<uint8_t>(mad::LinkDownDefaultState::POLLING);
    pi.MTUCap = config_.mtu_cap;
    pi.NeighborMTU = config_.mtu_cap;
    pi.VLCap = config_.vl_cap;
    pi.OperationalVLs = config_.vl_cap;
    pi.VLArbitrationHighCap = config_.vl_arbitration_cap;
    pi.VLArbitrationLowCap = config_.vl_arbitration_cap;
    pi.HOQLife = 0x1F;  // infinite until the SM sets it
    pi.VLStallCount = 7;
    pi.InitType = 0;
    ports_[p].pkeys.assign(p == 0 ? config_.partition_cap : config_.partition_enforcement_cap, 0);
    if (!ports_[p].pkeys.empty()) ports_[p].pkeys[0] = 0xFFFF;  // the default partition
    if (p == 0) {
      // Enhanced port 0 is always up: it is the switch's own CA-like management port.
      pi.PortState = static_cast<uint8_t>(mad::PortState::ACTIVE);
      pi.PortPhysicalState = static_cast<uint8_t>(mad::PortPhysState::LINK_UP);
      // IsTrapSupported (bit 3) | IsSLMappingSupported (6) | IsSystemImageGUIDSupported (11)
      // | IsPKeySwitchExternalPortTrapSupported (12: trap 259).
      pi.CapabilityMask = (1u << 3) | (1u << 6) | (1u << 11) | (1u << 12);
      pi.GUIDCap = 1;
      pi.SubnetTimeOut = 0;
      pi.RespTimeValue = 8;  // 4.096 us * 2^8 ~ 1 ms
    } else {
      pi.PortState = static_cast<uint8_t>(mad::PortState::DOWN);
      pi.PortPhysicalState = static_cast<uint8_t>(mad::PortPhysState::POLLING);
    }
  }
  sl2vl_.assign((n + 1) * (n + 1), std::array<uint8_t, 8>{});
  lft_.assign(config_.linear_fdb_cap, 0xFF);
  mft_positions_ = n / 16 + 1;
  mft_.assign(std::size_t{config_.multicast_fdb_cap} * mft_positions_, 0);
  counters_.resize(n + 1);
}

void Switch::SetLinkUp(uint8_t port, bool up) {
  if (port == 0 || port > config_.num_ports) return;
  Port& p = ports_[port];
  p.cable_up = up;
  const auto disabled = static_cast<uint8_t>(mad::PortPhysState::DISABLED);
  if (p.info.PortPhysicalState == disabled) return;  // stays off until the SM enables it
  if (up) {
    p.info.PortPhysicalState = static_cast<uint8_t>(mad::PortPhysState::LINK_UP);
    LinkStateChanged(p, static_cast<uint8_t>(mad::PortState::INIT));
  } else {
    p.info.PortPhysicalState = static_cast<uint8_t>(mad::PortPhysState::POLLING);
    LinkStateChanged(p, static_cast<uint8_t>(mad::PortState::DOWN));
  }
}

// A change made by the link state machine (not by SubnSet) sets SwitchInfo:PortStateChange
// for the transitions IBA 14.2.5.4 names: Down -> Init and any state -> Down.
void Switch::LinkStateChanged(Port& port, uint8_t new_state) {
  const auto down = static_cast<uint8_t>(mad::PortState::DOWN);
  const uint8_t old_state = port.info.PortState;
  port.info.PortState = new_state;
  if (old_state != new_state && (old_state == down || new_state == down)) {
    if (!switch_info_.PortStateChange) RaiseTrap128();
    switch_info_.PortStateChange = 1;
  }
}

uint64_t Switch::total_drops() const {
  uint64_t total = 0;
  for (uint64_t d : drops_) total += d;
  return total;
}

}  // namespace softib::fabric
