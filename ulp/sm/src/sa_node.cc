// NodeRecord (15.2.5.2) and PortInfoRecord (15.2.5.3) from the SM's model: one NodeRecord per
// end port (a switch's port 0, every CA port the SM knows), one PortInfoRecord per known
// port (a switch's ports all carry the switch's LID as EndportLID).
#include <algorithm>
#include <cstring>

#include "sa_internal.h"

namespace softib::sm::sa {

SaResult NodeRecords(const SubnetAdmin& sa, const SaRequest& r) {
  SaResult out;
  out.record_size = mad::NodeRecord::kSize;
  const Subnet& subnet = *sa.subnet();
  for (const EndPort& e : subnet.EndPorts()) {
    const SmNode& node = subnet.node(e.node);
    mad::NodeInfo info = node.node_info;
    info.NodeType = static_cast<uint8_t>(node.type);
    info.NumPorts = node.num_ports;
    info.NodeGUID = node.guid;
    info.PortGUID = sa.GuidOf(e);
    info.LocalPortNum = e.port;
    std::array<uint8_t, mad::NodeRecord::kSize> rec{};
    rec[0] = static_cast<uint8_t>(sa.LidOf(e) >> 8);
    rec[1] = static_cast<uint8_t>(sa.LidOf(e));
    info.Pack(std::span<uint8_t>(rec).subspan(4, mad::NodeInfo::kSize));
    std::memcpy(rec.data() + 44, node.description.data(),
                std::min<std::size_t>(64, node.description.size()));
    if (ComponentsMatch(mad::NodeRecord::Desc(), r.component_mask, r.data, rec)) out.Add(rec);
  }
  return out;
}

SaResult PortInfoRecords(const SubnetAdmin& sa, const SaRequest& r) {
  SaResult out;
  out.record_size = mad::PortInfoRecord::kSize;
  const Subnet& subnet = *sa.subnet();
  // CapabilityMask selects the ports that have every bit the request sets (saquery -s asks
  // for IsSM this way), as OpenSM compares it; the other components compare equal.
  const uint64_t cap_bit = ComponentBit(mad::PortInfoRecord::Desc(), "CapabilityMask");
  const uint64_t mask = r.component_mask & ~cap_bit;
  const uint32_t want_caps =
      (r.component_mask & cap_bit) ? mad::PortInfoRecordConstView(r.data).CapabilityMask() : 0;
  for (NodeId n = 0; n < subnet.nodes().size(); ++n) {
    const SmNode& node = subnet.node(n);
    for (uint8_t p = node.is_switch() ? 0 : 1; p <= node.num_ports; ++p) {
      const SmPort& port = node.ports[p];
      if (!port.known) continue;
      const uint16_t lid = node.is_switch() ? node.ports[0].lid : port.lid;
      std::array<uint8_t, mad::PortInfoRecord::kSize> rec{};
      rec[0] = static_cast<uint8_t>(lid >> 8);
      rec[1] = static_cast<uint8_t>(lid);
      rec[2] = p;
      mad::PortInfo info = port.info;
      info.LocalPortNum = p;
      info.M_Key = 0;  // never disclosed to a requester (15.4.1: M_Key is SM-only)
      info.Pack(std::span<uint8_t>(rec).subspan(4, mad::PortInfo::kSize));
      if ((info.CapabilityMask & want_caps) != want_caps) continue;
      if (ComponentsMatch(mad::PortInfoRecord::Desc(), mask, r.data, rec)) out.Add(rec);
    }
  }
  return out;
}

}  // namespace softib::sm::sa
