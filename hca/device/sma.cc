// The ports' Subnet Management Agent, as the HCA's firmware runs it: the MAD checks, M_Key
// protection (IBA 14.2.4, by the rules in runtime/smp), the method/attribute dispatch and
// the small attributes (NodeInfo, NodeDescription, GUIDInfo). PortInfo and its state
// machine are in sma_port_info.cc, the tables in sma_tables.cc, the PMA in pma.cc.
// Attributes are read and written through the generated codecs (idl/mad_sm.idl).
#include <algorithm>

#include "hca/device/hca.h"
#include "softib/mad/mad_common.h"
#include "softib/mad/mad_sm.h"
#include "softib/smp/sma_common.h"

namespace softib::hca {
namespace {

using smp::kStatusBadAttribute;
using smp::kStatusBadMethod;
using smp::kStatusBadValue;
using smp::kStatusBadVersion;
using smp::kStatusOk;

constexpr std::size_t kSmpDataOffset = 64;
constexpr unsigned kGuidsPerBlock = 8;

}  // namespace

LocalMadResult Hca::ProcessLocalMad(uint8_t port_number, std::span<const uint8_t, 256> request,
                                    std::span<uint8_t, 256> response) {
  if (port_number < 1 || port_number > config_.num_ports) return LocalMadResult::kBad;
  const mad::MadHeaderConstView header(request);
  if (header.BaseVersion() != 1) return LocalMadResult::kBad;
  Port& p = port(port_number);
  switch (header.MgmtClass()) {
    case mad::kSubnMgtClass:
    case mad::kSubnMgtDRClass:
      return ProcessSmp(p, request, response);
    case mad::kPerfMgtClass:
      return ProcessPerfMgt(p, request, response);
    default:
      return LocalMadResult::kBad;
  }
}

LocalMadResult Hca::ProcessSmp(Port& p, std::span<const uint8_t, 256> request,
                               std::span<uint8_t, 256> response) {
  const mad::MadHeaderConstView header(request);
  // Responses and traps are for an SM; the SM is software above the HCA, not this agent.
  if (header.R() != 0 || header.Method() == mad::kSubnMgtTrap) return LocalMadResult::kNoReply;
  std::copy(request.begin(), request.end(), response.begin());
  const SmpData data(response.data() + kSmpDataOffset, 64);
  const uint8_t method = header.Method();
  uint16_t status = kStatusOk;
  if (header.ClassVersion() != 1) {
    status = kStatusBadVersion;
  } else {
    bool hide_mkey = false;
    const smp::MKeyRefs mkey{p.mkey, p.mkey_protect_bits, p.mkey_lease_period, p.mkey_violations,
                             p.mkey_lease_start};
    if (!smp::MKeyAllows(mkey, method, mad::SmpLidConstView(request).M_Key(),
                         now_ns_ / 1'000'000'000, &hide_mkey)) {
      RaiseTrap(p, smp::kNoticeSecurity, smp::kTrapBadMKey,
                smp::BadMKeyDetails(request, p.lid).Pack());
      return LocalMadResult::kNoReply;
    }
    if (method == mad::kSubnMgtTrapRepress) {  // the SM heard a trap of ours: stop repeating it
      p.traps.Repress(header.TransactionID());
      return LocalMadResult::kNoReply;
    }
    if (method != mad::kSubnMgtGet && method != mad::kSubnMgtSet) {
      status = kStatusBadMethod;
    } else {
      status = SmaDispatch(p, method == mad::kSubnMgtSet, header.AttributeID(),
                           header.AttributeModifier(), hide_mkey, data);
    }
  }
  const mad::MadHeaderView out(response);
  out.set_R(1);
  out.set_Method(mad::kSubnMgtGet);  // with R: GetResp (0x81)
  if (header.MgmtClass() == mad::kSubnMgtDRClass) {
    const mad::SmpDrView dr(response);
    dr.set_D(1);  // the response travels the return path
    dr.set_Status(status);
  } else {
    out.set_Status(status);
  }
  return LocalMadResult::kReply;
}

uint16_t Hca::SmaDispatch(Port& p, bool set, uint16_t attribute, uint32_t modifier, bool hide_mkey,
                          SmpData data) {
  switch (attribute) {
    case mad::NodeInfo::kAttributeId:
      return set ? kStatusBadAttribute : NodeInfoGet(p, modifier, data);
    case mad::NodeDescription::kAttributeId:
      return set ? kStatusBadAttribute : NodeDescriptionGet(modifier, data);
    case mad::GUIDInfo::kAttributeId:
      return GuidInfoAccess(p, set, modifier, data);
    case mad::PortInfo::kAttributeId:
      return PortInfoAccess(p, set, modifier, hide_mkey, data);
    case mad::P_KeyTable::kAttributeId:
      return PKeyTableAccess(p, set, modifier, data);
    case mad::SLtoVLMappingTable::kAttributeId:
      return SlToVlAccess(p, set, modifier, data);
    case mad::VLArbitrationTable::kAttributeId:
      return VlArbAccess(p, set, modifier, data);
    default:
      // SMInfo (the SM is software above the HCA, which reaches it through QP0, not this
      // agent), SwitchInfo and the forwarding tables (not a switch), LedInfo, VendorDiag,
      // Notice and anything unknown.
      return kStatusBadAttribute;
  }
}

uint16_t Hca::NodeInfoGet(const Port& p, uint32_t modifier, SmpData data) const {
  if (modifier != 0) return kStatusBadValue;
  mad::NodeInfo ni;
  ni.BaseVersion = 1;
  ni.ClassVersion = 1;
  ni.NodeType = static_cast<uint8_t>(mad::NodeType::CA);
  ni.NumPorts = config_.num_ports;
  ni.SystemImageGUID =
      config_.system_image_guid != 0 ? config_.system_image_guid : config_.node_guid;
  ni.NodeGUID = config_.node_guid;
  ni.PortGUID = p.port_guid;  // the port the SMP arrived on
  ni.PartitionCap = config_.pkey_table_size;
  ni.DeviceID = static_cast<uint16_t>(config_.device_id);
  ni.Revision = config_.hw_revision;
  ni.LocalPortNum = p.number;
  ni.VendorID = config_.vendor_id & 0xFFFFFF;
  std::fill(data.begin(), data.end(), 0);
  ni.Pack(data);
  return kStatusOk;
}

uint16_t Hca::NodeDescriptionGet(uint32_t modifier, SmpData data) const {
  if (modifier != 0) return kStatusBadValue;
  mad::NodeDescription nd;
  std::copy_n(config_.description.begin(), std::min<std::size_t>(config_.description.size(), 64),
              nd.NodeString.begin());
  nd.Pack(data);
  return kStatusOk;
}

uint16_t Hca::GuidInfoAccess(Port& p, bool set, uint32_t modifier, SmpData data) {
  // GUIDCap = the GID table's size: blocks of 8 GUIDs. Entry 0 of block 0 is the port
  // GUID, which a Set cannot change (IBA 14.2.5.5); the others are alias GUIDs, which
  // become GIDs (subnet prefix + GUID) of the port.
  const std::size_t first = std::size_t{modifier} * kGuidsPerBlock;
  if (modifier > 0xFFFF || first >= p.alias_guids.size()) return kStatusBadValue;
  const std::size_t count = std::min<std::size_t>(kGuidsPerBlock, p.alias_guids.size() - first);
  mad::GUIDInfo block;
  if (set) {
    block.Unpack(data);
    bool changed = false;
    for (std::size_t i = 0; i < count; ++i) {
      if (first + i == 0) continue;
      changed |= p.alias_guids[first + i] != block.GUID[i];
      p.alias_guids[first + i] = block.GUID[i];
    }
    if (changed) Report(abi::AsyncEventType::GID_CHANGE, p.number);
  }
  block = {};
  for (std::size_t i = 0; i < count; ++i)
    block.GUID[i] = first + i == 0 ? p.port_guid : p.alias_guids[first + i];
  block.Pack(data);
  return kStatusOk;
}

}  // namespace softib::hca
