#include "softib/sm/subnet_topology.h"

#include <optional>
#include <string>
#include <utility>

namespace softib::sm {
namespace {

// LinkSpeedActive bits (SDR 1, DDR 2, QDR 4) or, when it is 0, LinkSpeedExtActive bits
// (FDR 1, EDR 2, HDR 4, NDR 8) — IBA 14.2.5.6 — as the topology's speed.
std::optional<fabric::LinkSpeed> ActiveSpeed(const mad::PortInfo& info) {
  switch (info.LinkSpeedExtActive) {
    case 1:
      return fabric::LinkSpeed::kFdr;
    case 2:
      return fabric::LinkSpeed::kEdr;
    case 4:
      return fabric::LinkSpeed::kHdr;
    case 8:
      return fabric::LinkSpeed::kNdr;
    default:
      break;
  }
  switch (info.LinkSpeedActive) {
    case 1:
      return fabric::LinkSpeed::kSdr;
    case 2:
      return fabric::LinkSpeed::kDdr;
    case 4:
      return fabric::LinkSpeed::kQdr;
    default:
      return std::nullopt;
  }
}

std::optional<fabric::LinkWidth> ActiveWidth(const mad::PortInfo& info) {
  switch (info.LinkWidthActive) {
    case 1:
    case 2:
    case 4:
    case 8:
    case 16:
      return static_cast<fabric::LinkWidth>(info.LinkWidthActive);  // the enum is the wire value
    default:
      return std::nullopt;
  }
}

// NodeDescription is whatever the node said: keep it printable and quote-free, as the
// ibnetdiscover format needs (a node that said nothing is "?").
std::string PrintableDescription(const std::string& text) {
  std::string out;
  for (char c : text.substr(0, fabric::kMaxNodeDescription))
    out += (c >= 0x20 && c < 0x7f && c != '"') ? c : '?';
  return out.empty() ? "?" : out;
}

}  // namespace

fabric::Topology TopologyFromSubnet(const Subnet& subnet) {
  fabric::Topology topology;
  for (const SmNode& n : subnet.nodes()) {
    fabric::Node node = fabric::MakeNode(n.type, fabric::CanonicalName(n.type, n.guid),
                                         PrintableDescription(n.description), n.guid, n.num_ports);
    node.system_image_guid = n.node_info.SystemImageGUID ? n.node_info.SystemImageGUID : n.guid;
    node.vendor_id = n.node_info.VendorID;
    node.device_id = n.node_info.DeviceID;
    node.enhanced_port0 = n.is_switch() && n.has_switch_info && n.switch_info.EnhancedPort0;
    for (uint8_t p = 0; p <= n.num_ports && p < n.ports.size(); ++p) {
      const SmPort& port = n.ports[p];
      if (n.is_switch() ? p != 0 : p == 0) continue;  // only the ports that carry addresses
      if (port.guid != 0) node.ports[p].guid = port.guid;
      // The LID the SM assigned, else the one the port reported (a subnet not swept yet).
      node.ports[p].lid = port.lid ? port.lid : port.info.LID;
      node.ports[p].lmc = port.lid ? port.lmc : port.info.LMC;
    }
    topology.AddNode(std::move(node));
  }
  // Each link once, from its lower (node, port) end; width and speed as that end runs them.
  for (NodeId a = 0; a < subnet.nodes().size(); ++a) {
    const SmNode& n = subnet.node(a);
    for (uint8_t p = 1; p <= n.num_ports && p < n.ports.size(); ++p) {
      const SmPort& port = n.ports[p];
      if (!port.linked() || std::pair(port.peer, port.peer_port) < std::pair(a, p)) continue;
      fabric::Link link{{a, p}, {port.peer, port.peer_port}};
      if (auto width = ActiveWidth(port.info)) link.width = *width;
      if (auto speed = ActiveSpeed(port.info)) link.speed = *speed;
      topology.AddLink(link);
    }
  }
  return topology;
}

}  // namespace softib::sm
