// The switch and link records: SwitchInfoRecord (15.2.5.5), LinearForwardingTableRecord
// (15.2.5.6), LinkRecord (15.2.5.13), and the per-port tables GUIDInfoRecord (15.2.5.18)
// and P_KeyTableRecord (15.2.5.11).
//
// The SM does not read GUIDInfo or P_KeyTables yet: GUIDInfo block 0 holds the port GUID
// (no alias GUIDs are assigned) and every port has the default partition 0xFFFF alone,
// which is what ibsim's ports hold after bring-up.
#include <cstring>

#include "sa_internal.h"

namespace softib::sm::sa {
namespace {

void PutLid(std::span<uint8_t> rec, uint16_t lid) {
  rec[0] = static_cast<uint8_t>(lid >> 8);
  rec[1] = static_cast<uint8_t>(lid);
}

}  // namespace

SaResult SwitchInfoRecords(const SubnetAdmin& sa, const SaRequest& r) {
  SaResult out;
  out.record_size = mad::SwitchInfoRecord::kSize;
  const Subnet& subnet = *sa.subnet();
  for (const SmNode& node : subnet.nodes()) {
    if (!node.is_switch() || !node.has_switch_info) continue;
    std::array<uint8_t, mad::SwitchInfoRecord::kSize> rec{};
    PutLid(rec, node.ports[0].lid);
    node.switch_info.Pack(std::span<uint8_t>(rec).subspan(4, mad::SwitchInfo::kSize));
    if (ComponentsMatch(mad::SwitchInfoRecord::Desc(), r.component_mask, r.data, rec)) out.Add(rec);
  }
  return out;
}

SaResult LftRecords(const SubnetAdmin& sa, const SaRequest& r) {
  SaResult out;
  out.record_size = mad::LinearForwardingTableRecord::kSize;
  const Subnet& subnet = *sa.subnet();
  for (const SmNode& node : subnet.nodes()) {
    if (!node.is_switch() || node.lft.empty()) continue;
    const std::size_t blocks = (node.lft.size() + 63) / 64;
    for (std::size_t b = 0; b < blocks; ++b) {
      std::array<uint8_t, mad::LinearForwardingTableRecord::kSize> rec{};
      PutLid(rec, node.ports[0].lid);
      rec[2] = static_cast<uint8_t>(b >> 8);
      rec[3] = static_cast<uint8_t>(b);
      for (std::size_t i = 0; i < 64; ++i) {
        const std::size_t lid = b * 64 + i;
        rec[8 + i] = lid < node.lft.size() ? node.lft[lid] : kNoPort;
      }
      if (ComponentsMatch(mad::LinearForwardingTableRecord::Desc(), r.component_mask, r.data, rec))
        out.Add(rec);
    }
  }
  return out;
}

SaResult LinkRecords(const SubnetAdmin& sa, const SaRequest& r) {
  SaResult out;
  out.record_size = mad::LinkRecord::kSize;
  const Subnet& subnet = *sa.subnet();
  auto lid_of = [&](NodeId n, uint8_t p) {
    const SmNode& node = subnet.node(n);
    return node.is_switch() ? node.ports[0].lid : node.ports[p].lid;
  };
  for (NodeId n = 0; n < subnet.nodes().size(); ++n) {
    const SmNode& node = subnet.node(n);
    for (uint8_t p = 1; p <= node.num_ports; ++p) {
      const SmPort& port = node.ports[p];
      if (!port.linked()) continue;
      mad::LinkRecord rec;
      rec.FromLID = lid_of(n, p);
      rec.FromPort = p;
      rec.ToPort = port.peer_port;
      rec.ToLID = lid_of(port.peer, port.peer_port);
      AddIfMatches(r, rec, out);
    }
  }
  return out;
}

SaResult GuidInfoRecords(const SubnetAdmin& sa, const SaRequest& r) {
  SaResult out;
  out.record_size = mad::GUIDInfoRecord::kSize;
  for (const EndPort& e : sa.subnet()->EndPorts()) {
    mad::GUIDInfoRecord rec;
    rec.LID = sa.LidOf(e);
    rec.BlockNum = 0;
    rec.GUID0 = sa.GuidOf(e);
    AddIfMatches(r, rec, out);
  }
  return out;
}

SaResult PKeyTableRecords(const SubnetAdmin& sa, const SaRequest& r) {
  SaResult out;
  out.record_size = mad::P_KeyTableRecord::kSize;
  const Subnet& subnet = *sa.subnet();
  for (NodeId n = 0; n < subnet.nodes().size(); ++n) {
    const SmNode& node = subnet.node(n);
    for (uint8_t p = node.is_switch() ? 0 : 1; p <= node.num_ports; ++p) {
      if (!node.ports[p].known) continue;
      // What the port holds (read in the sweep, then as the SM set it); a port not read
      // has the default partition alone.
      std::vector<uint16_t> keys = node.ports[p].pkeys;
      if (keys.empty()) keys = {0xFFFF};
      for (std::size_t block = 0; block * 32 < keys.size(); ++block) {
        mad::P_KeyTableRecord rec;
        rec.LID = node.is_switch() ? node.ports[0].lid : node.ports[p].lid;
        rec.BlockNum = static_cast<uint16_t>(block);
        rec.PortNum = p;
        for (std::size_t i = 0; i < 32 && block * 32 + i < keys.size(); ++i)
          rec.P_KeyEntry[i] = keys[block * 32 + i];
        AddIfMatches(r, rec, out);
      }
    }
  }
  return out;
}

}  // namespace softib::sm::sa
