// PortInfo of an HCA port (IBA 14.2.5.6) and the port's logical state machine as the SM
// drives it: the link brings a port to Init (Down without a cable), SubnSet takes it to
// Armed, then Active; Down takes the link down, after which it retrains to Init. An
// illegal transition or an out-of-range value refuses the whole Set with "invalid
// attribute value" (0x001C) and changes nothing.
//
// A port that no SM has configured keeps the "preconfigured" behaviour (port.h): Active
// as soon as it is cabled if it was given a LID at creation, Init otherwise. The first
// SubnSet PortInfo hands it to the SM (Port::sm_managed), starting from the state it is in.
#include <algorithm>

#include "hca/device/hca.h"
#include "softib/mad/mad_common.h"
#include "softib/mad/mad_sm.h"
#include "softib/smp/sma_common.h"

namespace softib::hca {
namespace {

using smp::kStatusBadValue;
using smp::kStatusOk;

constexpr auto kDown = static_cast<uint8_t>(mad::PortState::DOWN);
constexpr auto kInit = static_cast<uint8_t>(mad::PortState::INIT);
constexpr auto kActive = static_cast<uint8_t>(mad::PortState::ACTIVE);
constexpr auto kPolling = static_cast<uint8_t>(mad::PortPhysState::POLLING);
constexpr auto kDisabled = static_cast<uint8_t>(mad::PortPhysState::DISABLED);
constexpr uint8_t kRespTimeValue = 8;  // 4.096 us * 2^8 ≈ 1 ms: the SMA answers at once

bool Subset(uint8_t bits, uint8_t of) { return bits != 0 && (bits & ~of) == 0; }

}  // namespace

uint16_t Hca::PortInfoAccess(Port& in, bool set, uint32_t modifier, bool hide_mkey, SmpData data) {
  // Bits 7:0 the port (0: the one the SMP arrived on); bit 31 is SMSupportsExtendedSpeeds
  // (release 1.3; OpenSM sets it), bits 30:8 reserved.
  const uint32_t port_bits = modifier & 0x7FFFFFFF;
  if (port_bits > config_.num_ports) return kStatusBadValue;
  Port& target = port_bits == 0 ? in : port(static_cast<uint8_t>(port_bits));
  const uint16_t status = set ? PortInfoSet(target, data) : kStatusOk;
  PortInfoGet(target, in.number, hide_mkey, data);
  return status;
}

void Hca::PortInfoGet(const Port& p, uint8_t local_port, bool hide_mkey, SmpData data) const {
  mad::PortInfo pi;
  pi.M_Key = hide_mkey ? 0 : p.mkey;
  pi.GIDPrefix = p.subnet_prefix;
  pi.LID = p.lid;
  pi.MasterSMLID = p.sm_lid;
  pi.CapabilityMask = static_cast<uint32_t>(p.capabilities);
  pi.M_KeyLeasePeriod = p.mkey_lease_period;
  pi.LocalPortNum = local_port;
  pi.LinkWidthEnabled = p.link_width_enabled;
  pi.LinkWidthSupported = config_.link_width_supported;
  pi.LinkWidthActive = config_.active_width;
  pi.LinkSpeedSupported = config_.link_speed_supported;
  pi.PortState = p.LinkState();
  pi.PortPhysicalState = p.PhysState();
  pi.LinkDownDefaultState = p.link_down_default;
  pi.M_KeyProtectBits = p.mkey_protect_bits;
  pi.LMC = p.lmc;
  pi.LinkSpeedActive = config_.active_speed;
  pi.LinkSpeedEnabled = p.link_speed_enabled;
  pi.NeighborMTU = static_cast<uint8_t>(p.active_mtu);
  pi.MasterSMSL = p.sm_sl;
  pi.VLCap = VlCap(config_.max_vls);
  pi.InitType = 0;  // no initialization is requested
  pi.VLHighLimit = p.vl_high_limit;
  pi.VLArbitrationHighCap = kVlArbEntries;
  pi.VLArbitrationLowCap = kVlArbEntries;
  pi.InitTypeReply = p.init_type_reply;
  pi.MTUCap = static_cast<uint8_t>(config_.max_mtu);
  pi.OperationalVLs = p.operational_vls;
  // VLStallCount, HOQLife and the partition enforcement/raw filter bits are a switch's.
  pi.M_KeyViolations = p.mkey_violations;
  // The violation counters are 16 bits and stop at their maximum.
  pi.P_KeyViolations =
      static_cast<uint16_t>(std::min<uint64_t>(p.counters.pkey_violations, 0xFFFF));
  pi.Q_KeyViolations =
      static_cast<uint16_t>(std::min<uint64_t>(p.counters.qkey_violations, 0xFFFF));
  pi.GUIDCap = static_cast<uint8_t>(std::min<std::size_t>(p.alias_guids.size(), 0xFF));
  pi.SubnetTimeOut = p.subnet_timeout;
  pi.RespTimeValue = kRespTimeValue;
  pi.LocalPhyErrors = p.local_phy_errors;
  pi.OverrunErrors = p.overrun_errors;
  std::fill(data.begin(), data.end(), 0);
  pi.Pack(data);
}

uint16_t Hca::PortInfoSet(Port& p, std::span<const uint8_t> data) {
  mad::PortInfo req;
  req.Unpack(data);
  const uint8_t before = p.LinkState();

  // Validate everything before changing anything.
  if (req.LinkWidthEnabled != 0 && req.LinkWidthEnabled != 0xFF &&
      !Subset(req.LinkWidthEnabled, config_.link_width_supported))
    return kStatusBadValue;
  if (req.LinkSpeedEnabled != 0 && req.LinkSpeedEnabled != 0xF &&
      !Subset(req.LinkSpeedEnabled, config_.link_speed_supported))
    return kStatusBadValue;
  if (!smp::LegalPortStateTransition(before, req.PortState)) return kStatusBadValue;
  if (req.PortPhysicalState != 0 && req.PortPhysicalState != kPolling &&
      req.PortPhysicalState != kDisabled)
    return kStatusBadValue;
  if (req.LinkDownDefaultState > static_cast<uint8_t>(mad::LinkDownDefaultState::POLLING))
    return kStatusBadValue;
  if (req.NeighborMTU == 0 || req.NeighborMTU > static_cast<uint8_t>(config_.max_mtu))
    return kStatusBadValue;
  if (req.OperationalVLs > VlCap(config_.max_vls)) return kStatusBadValue;
  if (req.LID >= kMulticastLidBase) return kStatusBadValue;  // multicast or permissive
  if (req.InitTypeReply > 0xF) return kStatusBadValue;

  // Apply. From now on the SM owns the port's state.
  if (!p.sm_managed) {
    p.sm_managed = true;
    p.sm_state = before == kDown ? kInit : before;
  }
  const bool lid_changed = req.LID != p.lid || req.LMC != p.lmc;
  const bool sm_changed = req.MasterSMLID != p.sm_lid || req.MasterSMSL != p.sm_sl;
  const bool prefix_changed = req.GIDPrefix != p.subnet_prefix;
  p.mkey = req.M_Key;
  p.subnet_prefix = req.GIDPrefix;
  p.lid = req.LID;
  p.sm_lid = req.MasterSMLID;
  p.mkey_lease_period = req.M_KeyLeasePeriod;
  if (req.LinkWidthEnabled != 0)
    p.link_width_enabled =
        req.LinkWidthEnabled == 0xFF ? config_.link_width_supported : req.LinkWidthEnabled;
  if (req.LinkSpeedEnabled != 0)
    p.link_speed_enabled =
        req.LinkSpeedEnabled == 0xF ? config_.link_speed_supported : req.LinkSpeedEnabled;
  if (req.LinkDownDefaultState != 0) p.link_down_default = req.LinkDownDefaultState;
  p.mkey_protect_bits = req.M_KeyProtectBits;
  p.lmc = req.LMC;
  p.active_mtu = static_cast<abi::PathMtu>(req.NeighborMTU);
  p.sm_sl = req.MasterSMSL;
  p.vl_high_limit = req.VLHighLimit;
  p.init_type_reply = req.InitTypeReply;
  if (req.OperationalVLs != 0) p.operational_vls = req.OperationalVLs;
  // Writing the violation counters is how an SM resets them.
  p.mkey_violations = req.M_KeyViolations;
  p.counters.pkey_violations = req.P_KeyViolations;
  p.counters.qkey_violations = req.Q_KeyViolations;
  p.subnet_timeout = req.SubnetTimeOut;
  p.local_phy_errors = req.LocalPhyErrors;
  p.overrun_errors = req.OverrunErrors;

  // Physical state first: Disabled takes the link (and the logical state) down; Polling
  // retrains a disabled link, which comes back up in Init.
  if (req.PortPhysicalState == kDisabled) {
    p.shut_down = true;
  } else if (req.PortPhysicalState == kPolling && p.shut_down) {
    p.shut_down = false;
    p.sm_state = kInit;
  }
  if (req.PortState == kDown) {
    // The SM takes the link down; it retrains at once and a cabled port is back in Init.
    p.sm_state = kInit;
  } else if (req.PortState != 0) {
    p.sm_state = req.PortState;
  }

  ReportPortChange(p, before);
  if (lid_changed) Report(abi::AsyncEventType::LID_CHANGE, p.number);
  if (sm_changed) Report(abi::AsyncEventType::SM_CHANGE, p.number);
  if (prefix_changed) Report(abi::AsyncEventType::GID_CHANGE, p.number);
  if (req.ClientReregister) Report(abi::AsyncEventType::CLIENT_REREGISTER, p.number);
  return kStatusOk;
}

}  // namespace softib::hca
