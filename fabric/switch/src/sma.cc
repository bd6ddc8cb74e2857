// The switch's Subnet Management Agent: the MAD checks, M_Key protection (IBA 14.2.4), the
// method/attribute dispatch, and the small attributes (NodeInfo, NodeDescription,
// SwitchInfo, GUIDInfo). Attributes are read and written through the generated codecs.
#include <algorithm>
#include <cstring>

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

constexpr std::size_t kSmpDataOffset = 64;

}  // namespace

std::optional<std::array<uint8_t, 256>> Switch::HandleSmp(std::span<const uint8_t> mad,
                                                          uint8_t in_port) {
  auto ignore = [this](SwitchDrop why) {
    ++drops_[static_cast<std::size_t>(why)];
    return std::nullopt;
  };
  if (mad.size() < smp::kSmpBytes || in_port > config_.num_ports)
    return ignore(SwitchDrop::kMalformed);
  const mad::MadHeaderConstView header(mad);
  const uint8_t mgmt_class = header.MgmtClass();
  if (header.BaseVersion() != 1) return ignore(SwitchDrop::kSmaIgnored);
  if (mgmt_class != mad::kSubnMgtClass && mgmt_class != mad::kSubnMgtDRClass)
    return ignore(SwitchDrop::kSmaIgnored);
  // Responses and traps are for an SM, and this switch hosts none.
  if (header.R() != 0 || header.Method() == mad::kSubnMgtTrap) return ignore(SwitchDrop::kNoSm);

  Mad response;
  std::copy_n(mad.begin(), response.size(), response.begin());
  const std::span<uint8_t, 64> data(response.data() + kSmpDataOffset, 64);
  const uint8_t method = header.Method();
  uint16_t status = kStatusOk;
  if (header.ClassVersion() != 1) {
    status = kStatusBadVersion;
  } else {
    bool hide_mkey = false;
    if (!MKeyAllows(method, mad::SmpLidConstView(mad).M_Key(), &hide_mkey)) {
      const auto details =
          smp::BadMKeyDetails(mad.first<smp::kSmpBytes>(), ports_[0].info.LID).Pack();
      RaiseTrap(smp::kNoticeSecurity, smp::kTrapBadMKey, details);
      return ignore(SwitchDrop::kMKeyViolation);
    }
    if (method == mad::kSubnMgtTrapRepress) {  // the SM heard our trap: stop repeating it
      traps_.Repress(header.TransactionID());
      return std::nullopt;
    }
    if (method != mad::kSubnMgtGet && method != mad::kSubnMgtSet) {
      status = kStatusBadMethod;
    } else {
      status = Dispatch(method, header.AttributeID(), header.AttributeModifier(), in_port,
                        hide_mkey, data);
    }
  }
  const mad::MadHeaderView out(response);
  out.set_R(1);
  out.set_Method(mad::kSubnMgtGet);  // with R: GetResp (0x81)
  if (mgmt_class == mad::kSubnMgtDRClass) {
    mad::SmpDrView(response).set_Status(status);  // keeps D, which Respond() sets
  } else {
    out.set_Status(status);
  }
  return response;
}

// IBA 14.2.4 on port 0's M_Key, by the rules every SMA shares (runtime/smp).
bool Switch::MKeyAllows(uint8_t method, uint64_t mkey, bool* hide_mkey) {
  mad::PortInfo& pi = ports_[0].info;
  const smp::MKeyRefs state{pi.M_Key, pi.M_KeyProtectBits, pi.M_KeyLeasePeriod, pi.M_KeyViolations,
                            mkey_lease_start_};
  return smp::MKeyAllows(state, method, mkey, now_seconds_, hide_mkey);
}

uint16_t Switch::Dispatch(uint8_t method, uint16_t attribute, uint32_t modifier, uint8_t in_port,
                          bool hide_mkey, std::span<uint8_t, 64> data) {
  const bool set = method == mad::kSubnMgtSet;
  switch (attribute) {
    case mad::NodeInfo::kAttributeId:
      return set ? kStatusBadAttribute : NodeInfoGet(modifier, in_port, data);
    case mad::NodeDescription::kAttributeId:
      return set ? kStatusBadAttribute : NodeDescriptionGet(modifier, data);
    case mad::SwitchInfo::kAttributeId:
      return SwitchInfoAccess(set, modifier, data);
    case mad::GUIDInfo::kAttributeId:
      return GuidInfoAccess(set, modifier, data);
    case mad::PortInfo::kAttributeId:
      return PortInfoAccess(set, modifier, in_port, hide_mkey, data);
    case mad::P_KeyTable::kAttributeId:
      return PKeyTableAccess(set, modifier, data);
    case mad::SLtoVLMappingTable::kAttributeId:
      return SlToVlAccess(set, modifier, data);
    case mad::VLArbitrationTable::kAttributeId:
      return VlArbAccess(set, modifier, data);
    case mad::LinearForwardingTable::kAttributeId:
      return LftAccess(set, modifier, data);
    case mad::MulticastForwardingTable::kAttributeId:
      return MftAccess(set, modifier, data);
    default:
      // SMInfo (no SM here), RandomForwardingTable (RandomFDBCap 0), LedInfo, VendorDiag,
      // Notice and anything unknown.
      return kStatusBadAttribute;
  }
}

uint16_t Switch::NodeInfoGet(uint32_t modifier, uint8_t in_port,
                             std::span<uint8_t, 64> data) const {
  if (modifier != 0) return kStatusBadValue;
  mad::NodeInfo ni;
  ni.BaseVersion = 1;
  ni.ClassVersion = 1;
  ni.NodeType = static_cast<uint8_t>(mad::NodeType::SWITCH);
  ni.NumPorts = config_.num_ports;
  ni.SystemImageGUID = config_.system_image_guid;
  ni.NodeGUID = config_.node_guid;
  ni.PortGUID = config_.node_guid;  // a switch's port GUID is port 0's, the node GUID
  ni.PartitionCap = config_.partition_cap;
  ni.DeviceID = config_.device_id;
  ni.Revision = config_.revision;
  ni.LocalPortNum = in_port;
  ni.VendorID = config_.vendor_id & 0xFFFFFF;
  std::fill(data.begin(), data.end(), 0);
  ni.Pack(data);
  return kStatusOk;
}

uint16_t Switch::NodeDescriptionGet(uint32_t modifier, std::span<uint8_t, 64> data) const {
  if (modifier != 0) return kStatusBadValue;
  mad::NodeDescription nd;
  std::copy_n(config_.description.begin(), std::min<std::size_t>(config_.description.size(), 64),
              nd.NodeString.begin());
  nd.Pack(data);
  return kStatusOk;
}

uint16_t Switch::SwitchInfoAccess(bool set, uint32_t modifier, std::span<uint8_t, 64> data) {
  if (modifier != 0) return kStatusBadValue;
  if (set) {
    mad::SwitchInfo req;
    req.Unpack(data);
    const unsigned n = config_.num_ports;
    auto port_or_none = [n](uint8_t p) { return p <= n || p == 0xFF; };
    if ((config_.linear_fdb_cap != 0 && req.LinearFDBTop >= config_.linear_fdb_cap) ||
        req.DefaultPort > n || !port_or_none(req.DefaultMulticastPrimaryPort) ||
        !port_or_none(req.DefaultMulticastNotPrimaryPort)) {
      SwitchInfoAccess(false, 0, data);
      return kStatusBadValue;
    }
    switch_info_.LinearFDBTop = req.LinearFDBTop;
    switch_info_.DefaultPort = req.DefaultPort;
    switch_info_.DefaultMulticastPrimaryPort = req.DefaultMulticastPrimaryPort;
    switch_info_.DefaultMulticastNotPrimaryPort = req.DefaultMulticastNotPrimaryPort;
    switch_info_.LifeTimeValue = req.LifeTimeValue;
    // MulticastFDBTop (release 1.3) sits where earlier releases had reserved bytes, which
    // older SMs write as 0: a value below 0xBFFF (no MLID in use) leaves it unchanged.
    if (req.MulticastFDBTop >= 0xBFFF) switch_info_.MulticastFDBTop = req.MulticastFDBTop;
    if (req.PortStateChange) {
      // Write 1 to clear: the SM has seen the change, so a trap still repeating for it stops.
      switch_info_.PortStateChange = 0;
      traps_.Cancel(smp::kTrapLinkStateChange);
    }
  }
  std::fill(data.begin(), data.end(), 0);
  switch_info_.Pack(data);
  return kStatusOk;
}

uint16_t Switch::GuidInfoAccess(bool /*set*/, uint32_t modifier,
                                std::span<uint8_t, 64> data) const {
  // GUIDCap is 1: one block whose first GUID, port 0's, is read-only; a Set changes nothing.
  if (modifier != 0) return kStatusBadValue;
  mad::GUIDInfo gi;
  gi.GUID[0] = config_.node_guid;
  gi.Pack(data);
  return kStatusOk;
}

}  // namespace softib::fabric
