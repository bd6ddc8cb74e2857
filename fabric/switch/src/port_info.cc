// PortInfo of a switch (IBA 14.2.5.6): port 0 carries the switch's LID, LMC, SM LID and
// M_Key; the external ports carry link state, width, speed, MTU and VLs, and the fields
// that belong to port 0 read as zero on them. SubnSet drives the logical state machine
// (Down -> Init by the link, Init -> Armed -> Active by the SM); an illegal transition or
// an out-of-range value refuses the whole Set with "invalid attribute value".
#include <algorithm>

#include "softib/fabric/switch.h"
#include "softib/mad/mad_common.h"
#include "softib/smp/sma_common.h"

namespace softib::fabric {

using smp::kStatusBadAttribute;
using smp::kStatusBadMethod;
using smp::kStatusBadValue;
using smp::kStatusBadVersion;
using smp::kStatusOk;
namespace {

constexpr auto kDown = static_cast<uint8_t>(mad::PortState::DOWN);
constexpr auto kInit = static_cast<uint8_t>(mad::PortState::INIT);
constexpr auto kActive = static_cast<uint8_t>(mad::PortState::ACTIVE);
constexpr auto kPolling = static_cast<uint8_t>(mad::PortPhysState::POLLING);
constexpr auto kDisabled = static_cast<uint8_t>(mad::PortPhysState::DISABLED);
constexpr auto kLinkUp = static_cast<uint8_t>(mad::PortPhysState::LINK_UP);

bool Subset(uint8_t bits, uint8_t of) { return (bits & ~of) == 0; }

}  // namespace

uint16_t Switch::PortInfoAccess(bool set, uint32_t modifier, uint8_t in_port, bool hide_mkey,
                                std::span<uint8_t, 64> data) {
  // On a switch bits 7:0 of the modifier are the port number, 0 being the management port.
  // Bit 31 is SMSupportsExtendedSpeeds (release 1.3; OpenSM sets it), bits 30:8 reserved.
  const uint32_t port_bits = modifier & 0x7FFFFFFF;
  if (port_bits > config_.num_ports) return kStatusBadValue;
  const auto port = static_cast<uint8_t>(port_bits);
  uint16_t status = kStatusOk;
  if (set) {
    mad::PortInfo req;
    req.Unpack(data);
    status = PortInfoSet(port, req);
  }
  PortInfoGet(port, in_port, hide_mkey, data);
  return status;
}

void Switch::PortInfoGet(uint8_t port, uint8_t in_port, bool hide_mkey,
                         std::span<uint8_t, 64> data) const {
  mad::PortInfo pi = ports_[port].info;
  // LocalPortNum: the port this SMP arrived on, whatever port it asks about.
  pi.LocalPortNum = in_port;
  if (port != 0) {
    // Fields that only port 0 of a switch has.
    pi.M_Key = 0;
    pi.GIDPrefix = 0;
    pi.LID = 0;
    pi.MasterSMLID = 0;
    pi.CapabilityMask = 0;
    pi.M_KeyLeasePeriod = 0;
    pi.M_KeyProtectBits = 0;
    pi.LMC = 0;
    pi.MasterSMSL = 0;
    pi.SubnetTimeOut = 0;
    pi.GUIDCap = 0;
  } else if (hide_mkey) {
    pi.M_Key = 0;
  }
  std::fill(data.begin(), data.end(), 0);
  pi.Pack(data);
}

uint16_t Switch::PortInfoSet(uint8_t port_num, const mad::PortInfo& req) {
  Port& port = ports_[port_num];
  mad::PortInfo& cur = port.info;
  const bool mgmt = port_num == 0;

  // Validate everything before changing anything.
  if (req.LinkWidthEnabled != 0 && req.LinkWidthEnabled != 0xFF &&
      !Subset(req.LinkWidthEnabled, cur.LinkWidthSupported))
    return kStatusBadValue;
  if (req.LinkSpeedEnabled != 0 && req.LinkSpeedEnabled != 0xF &&
      !Subset(req.LinkSpeedEnabled, cur.LinkSpeedSupported))
    return kStatusBadValue;
  if (!smp::LegalPortStateTransition(cur.PortState, req.PortState)) return kStatusBadValue;
  if (mgmt && req.PortState != 0 && req.PortState != kActive) return kStatusBadValue;
  if (req.PortPhysicalState != 0 &&
      (mgmt || (req.PortPhysicalState != kPolling && req.PortPhysicalState != kDisabled)))
    return kStatusBadValue;
  if (req.LinkDownDefaultState > static_cast<uint8_t>(mad::LinkDownDefaultState::POLLING))
    return kStatusBadValue;
  if (req.NeighborMTU == 0 || req.NeighborMTU > cur.MTUCap) return kStatusBadValue;
  if (req.OperationalVLs > cur.VLCap) return kStatusBadValue;
  if (mgmt && req.LID >= 0xC000) return kStatusBadValue;  // multicast or permissive

  if (req.LinkWidthEnabled != 0)
    cur.LinkWidthEnabled =
        req.LinkWidthEnabled == 0xFF ? cur.LinkWidthSupported : req.LinkWidthEnabled;
  if (req.LinkSpeedEnabled != 0)
    cur.LinkSpeedEnabled =
        req.LinkSpeedEnabled == 0xF ? cur.LinkSpeedSupported : req.LinkSpeedEnabled;
  if (req.LinkDownDefaultState != 0) cur.LinkDownDefaultState = req.LinkDownDefaultState;
  cur.NeighborMTU = req.NeighborMTU;
  if (req.OperationalVLs != 0) cur.OperationalVLs = req.OperationalVLs;
  cur.VLHighLimit = req.VLHighLimit;
  cur.VLStallCount = req.VLStallCount;
  cur.HOQLife = req.HOQLife;
  cur.LocalPhyErrors = req.LocalPhyErrors;
  cur.OverrunErrors = req.OverrunErrors;
  cur.M_KeyViolations = req.M_KeyViolations;
  cur.P_KeyViolations = req.P_KeyViolations;
  cur.Q_KeyViolations = req.Q_KeyViolations;
  if (mgmt) {
    cur.M_Key = req.M_Key;
    cur.GIDPrefix = req.GIDPrefix;
    cur.LID = req.LID;
    cur.MasterSMLID = req.MasterSMLID;
    cur.M_KeyLeasePeriod = req.M_KeyLeasePeriod;
    cur.M_KeyProtectBits = req.M_KeyProtectBits;
    cur.LMC = req.LMC;
    cur.MasterSMSL = req.MasterSMSL;
    cur.SubnetTimeOut = req.SubnetTimeOut;
    return kStatusOk;
  }

  // Partition enforcement (IBA 14.2.5.6), where the switch can hold an external port's table.
  if (config_.partition_enforcement_cap > 0) {
    cur.PartitionEnforcementInbound = req.PartitionEnforcementInbound;
    cur.PartitionEnforcementOutbound = req.PartitionEnforcementOutbound;
  }

  // Physical state first: disabling takes the link (and the logical state) down; polling
  // retrains it, and a cabled port comes back up in Init.
  // These are link events (the link goes away, or trains again), so they set
  // PortStateChange and raise Trap 128 like a cable would.
  if (req.PortPhysicalState == kDisabled) {
    cur.PortPhysicalState = kDisabled;
    LinkStateChanged(port, kDown);
  } else if (req.PortPhysicalState == kPolling) {
    cur.PortPhysicalState = port.cable_up ? kLinkUp : kPolling;
    LinkStateChanged(port, port.cable_up ? kInit : kDown);
  }
  if (req.PortState == kDown) {
    // The SM takes the link down; the physical link retrains at once and a cabled, enabled
    // port is back in Init.
    const bool retrains = port.cable_up && cur.PortPhysicalState != kDisabled;
    cur.PortState = retrains ? kInit : kDown;
  } else if (req.PortState != 0) {
    cur.PortState = req.PortState;
  }
  return kStatusOk;
}

}  // namespace softib::fabric
