// The SM's subnet model, and a model built straight from a topology (tests, in-process).
#include "softib/sm/subnet.h"

#include <algorithm>
#include <deque>

namespace softib::sm {

NodeId Subnet::Add(SmNode node) {
  const NodeId id = static_cast<NodeId>(nodes_.size());
  by_guid_.emplace(node.guid, id);
  if (node.ports.size() < std::size_t{node.num_ports} + 1) node.ports.resize(node.num_ports + 1);
  nodes_.push_back(std::move(node));
  return id;
}

std::optional<NodeId> Subnet::Find(uint64_t node_guid) const {
  auto it = by_guid_.find(node_guid);
  if (it == by_guid_.end()) return std::nullopt;
  return it->second;
}

void Subnet::Link(NodeId a, uint8_t pa, NodeId b, uint8_t pb) {
  nodes_[a].ports[pa].peer = b;
  nodes_[a].ports[pa].peer_port = pb;
  nodes_[b].ports[pb].peer = a;
  nodes_[b].ports[pb].peer_port = pa;
}

std::vector<EndPort> Subnet::EndPorts() const {
  std::vector<EndPort> out;
  for (NodeId n = 0; n < nodes_.size(); ++n) {
    const SmNode& node = nodes_[n];
    if (node.is_switch()) {
      out.push_back({n, 0});
      continue;
    }
    for (uint8_t p = 1; p <= node.num_ports; ++p)
      if (node.ports[p].known) out.push_back({n, p});
  }
  return out;
}

uint16_t Subnet::TopLid() const {
  uint16_t top = 0;
  for (const EndPort& e : EndPorts()) {
    const SmPort& port = nodes_[e.node].ports[e.port];
    if (port.lid == 0) continue;
    top = std::max<uint16_t>(top, static_cast<uint16_t>(port.lid + (1u << port.lmc) - 1));
  }
  return top;
}

void Subnet::IndexLids() {
  lid_owner_.assign(std::size_t{TopLid()} + 1, EndPort{});
  for (const EndPort& e : EndPorts()) {
    const SmPort& port = nodes_[e.node].ports[e.port];
    if (port.lid == 0) continue;
    for (unsigned i = 0; i < (1u << port.lmc); ++i) lid_owner_[port.lid + i] = e;
  }
}

std::optional<EndPort> Subnet::Owner(uint16_t lid) const {
  if (lid == 0 || lid >= lid_owner_.size() || lid_owner_[lid].node == kNoNode) return std::nullopt;
  return lid_owner_[lid];
}

std::size_t Subnet::Count(fabric::NodeType type) const {
  return static_cast<std::size_t>(
      std::count_if(nodes_.begin(), nodes_.end(), [&](const SmNode& n) { return n.type == type; }));
}

std::size_t Subnet::LinkCount() const {
  std::size_t ends = 0;
  for (const SmNode& n : nodes_)
    for (uint8_t p = 1; p <= n.num_ports; ++p) ends += n.ports[p].linked() ? 1 : 0;
  return ends / 2;
}

std::string SubnetPrefixError(uint64_t prefix) {
  constexpr uint64_t kScope10 = 0xffc0000000000000ull;  // the top 10 bits: the GID's form
  if (prefix == 0) return "0 is the unspecified GID's prefix";
  if ((prefix >> 56) == 0xff) return "0xff... is a multicast prefix";
  if ((prefix & kScope10) == 0xfe80000000000000ull && prefix != kDefaultSubnetPrefix)
    return "a link-local prefix is fe80:0:0:0 exactly";
  if ((prefix & kScope10) == 0xfec0000000000000ull && (prefix & 0x003fffffffff0000ull) != 0)
    return "a site-local prefix (fec0::/10) sets only its last 16 bits (the subnet ID)";
  return "";
}

namespace {

mad::PortInfo DefaultPortInfo(const fabric::Node& node, uint8_t port, bool linked,
                              const fabric::Link* link) {
  mad::PortInfo pi;
  const fabric::NodePort& addr = node.AddressOf(port);
  pi.LID = addr.lid;
  pi.LMC = addr.lmc;
  pi.LocalPortNum = port;
  pi.GIDPrefix = kDefaultSubnetPrefix;
  pi.LinkWidthSupported = 3;
  pi.LinkWidthEnabled = 3;
  pi.LinkSpeedSupported = 7;
  pi.LinkSpeedEnabled = 7;
  pi.MTUCap = 5;  // 4096
  pi.NeighborMTU = 5;
  pi.VLCap = 4;  // VL0-7
  pi.OperationalVLs = 4;
  if (link) {
    pi.LinkWidthActive = static_cast<uint8_t>(link->width);  // the enum is the wire value
    // fabric::LinkSpeed is an index; PortInfo wants LinkSpeedActive bits (SDR 1, DDR 2,
    // QDR 4), or 0 with LinkSpeedExtActive bits (FDR 1, EDR 2, HDR 4, NDR 8).
    switch (link->speed) {
      case fabric::LinkSpeed::kSdr:
        pi.LinkSpeedActive = 1;
        break;
      case fabric::LinkSpeed::kDdr:
        pi.LinkSpeedActive = 2;
        break;
      case fabric::LinkSpeed::kQdr:
      case fabric::LinkSpeed::kFdr10:
        pi.LinkSpeedActive = 4;
        break;
      case fabric::LinkSpeed::kFdr:
        pi.LinkSpeedExtActive = 1;
        break;
      case fabric::LinkSpeed::kEdr:
        pi.LinkSpeedExtActive = 2;
        break;
      case fabric::LinkSpeed::kHdr:
        pi.LinkSpeedExtActive = 4;
        break;
      case fabric::LinkSpeed::kNdr:
        pi.LinkSpeedExtActive = 8;
        break;
    }
  }
  const bool port0 = node.is_switch() && port == 0;
  pi.PortState = port0 ? kPortActive : linked ? kPortInit : kPortDown;
  pi.PortPhysicalState = port0 || linked ? kPhysLinkUp : 2;
  return pi;
}

}  // namespace

Subnet SubnetFromTopology(const fabric::Topology& topology, fabric::NodeIndex sm_node,
                          uint8_t sm_port) {
  Subnet subnet;
  for (const fabric::Node& n : topology.nodes()) {
    SmNode node;
    node.type = n.type;
    node.guid = n.guid;
    node.num_ports = n.num_ports;
    node.description = n.description;
    node.node_info.BaseVersion = 1;
    node.node_info.ClassVersion = 1;
    node.node_info.NodeType = static_cast<uint8_t>(n.type);
    node.node_info.NumPorts = n.num_ports;
    node.node_info.SystemImageGUID = n.system_image_guid ? n.system_image_guid : n.guid;
    node.node_info.NodeGUID = n.guid;
    node.node_info.PortGUID = n.is_switch() ? n.guid : n.ports[1].guid;
    node.node_info.PartitionCap = 32;
    node.node_info.DeviceID = n.device_id;
    node.node_info.VendorID = n.vendor_id;
    node.node_info.LocalPortNum = n.is_switch() ? 0 : 1;
    node.ports.resize(n.num_ports + 1);
    for (uint8_t p = 0; p <= n.num_ports; ++p) {
      if (!n.is_switch() && p == 0) continue;
      const fabric::Link* link =
          p ? topology.LinkAt({static_cast<fabric::NodeIndex>(subnet.nodes().size()), p}) : nullptr;
      SmPort& port = node.ports[p];
      // A CA port is known to the SM only if it is cabled (or is the SM's own port).
      port.known = n.is_switch() || link != nullptr;
      port.info = DefaultPortInfo(n, p, link != nullptr, link);
      port.guid = n.is_switch() ? n.guid : n.ports[p].guid;
    }
    if (n.is_switch()) {
      node.has_switch_info = true;
      node.switch_info.LinearFDBCap = 49152;
      node.switch_info.MulticastFDBCap = 1024;
      node.switch_info.LifeTimeValue = 18;
      node.switch_info.PortStateChange = 1;
      node.switch_info.EnhancedPort0 = n.enhanced_port0;
    }
    subnet.Add(std::move(node));
  }
  for (const fabric::Link& l : topology.links())
    subnet.Link(l.a.node, l.a.port, l.b.node, l.b.port);
  subnet.sm_node = sm_node;
  subnet.sm_port = sm_port;
  if (!subnet.node(sm_node).is_switch()) subnet.node(sm_node).ports[sm_port].known = true;

  // Directed routes: breadth-first from the SM, the way discovery would find them.
  std::vector<bool> seen(subnet.nodes().size(), false);
  std::deque<NodeId> todo{sm_node};
  seen[sm_node] = true;
  while (!todo.empty()) {
    const NodeId id = todo.front();
    todo.pop_front();
    const SmNode& node = subnet.node(id);
    if (!node.is_switch() && id != sm_node) continue;  // CAs do not relay
    for (uint8_t p = 1; p <= node.num_ports; ++p) {
      if (!node.is_switch() && p != sm_port) continue;
      const SmPort& port = node.ports[p];
      if (!port.linked() || seen[port.peer] || node.path.size() >= 63) continue;
      seen[port.peer] = true;
      subnet.node(port.peer).path = node.path;
      subnet.node(port.peer).path.push_back(p);
      todo.push_back(port.peer);
    }
  }
  return subnet;
}

}  // namespace softib::sm
