#include "fabric/topology/topology.h"

#include <algorithm>
#include <cstdio>
#include <unordered_set>
#include <utility>

namespace softib::fabric {
namespace {

std::string HexGuid(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

bool AllPrintable(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) >= 0x20 && c != 0x7f; });
}

// Links as unordered pairs: the lower port first, then sorted.
std::vector<Link> Canonical(const std::vector<Link>& links) {
  std::vector<Link> out = links;
  for (Link& l : out)
    if (l.b < l.a) std::swap(l.a, l.b);
  std::sort(out.begin(), out.end(), [](const Link& x, const Link& y) {
    if (x.a != y.a) return x.a < y.a;
    return x.b < y.b;
  });
  return out;
}

}  // namespace

std::string_view ToString(NodeType type) {
  switch (type) {
    case NodeType::kCa:
      return "Ca";
    case NodeType::kSwitch:
      return "Switch";
    case NodeType::kRouter:
      return "Router";
  }
  return "?";
}

std::string CanonicalName(NodeType type, uint64_t guid) {
  const char prefix = type == NodeType::kSwitch ? 'S' : type == NodeType::kRouter ? 'R' : 'H';
  char buf[24];
  std::snprintf(buf, sizeof buf, "%c-%016llx", prefix, static_cast<unsigned long long>(guid));
  return buf;
}

Node MakeNode(NodeType type, std::string name, std::string description, uint64_t guid,
              uint8_t num_ports) {
  Node n;
  n.type = type;
  n.name = std::move(name);
  n.description = std::move(description);
  n.guid = guid;
  n.system_image_guid = guid;
  n.num_ports = num_ports;
  n.ports.resize(std::size_t{num_ports} + 1);
  if (type == NodeType::kSwitch) {
    n.ports[0].guid = guid;
  } else {
    for (unsigned p = 1; p <= num_ports; ++p) n.ports[p].guid = guid + p;
  }
  return n;
}

NodeIndex Topology::AddNode(Node node) {
  indexed_ = false;
  nodes_.push_back(std::move(node));
  return static_cast<NodeIndex>(nodes_.size() - 1);
}

void Topology::AddLink(const Link& link) {
  indexed_ = false;
  links_.push_back(link);
}

std::size_t Topology::Count(NodeType type) const {
  return static_cast<std::size_t>(std::count_if(nodes_.begin(), nodes_.end(),
                                                [type](const Node& n) { return n.type == type; }));
}

std::string Topology::Describe(PortRef port) const {
  if (port.node >= nodes_.size()) return "node #" + std::to_string(port.node);
  const Node& n = nodes_[port.node];
  return n.name + " (\"" + n.description + "\") port " + std::to_string(port.port);
}

std::string Topology::CheckNode(NodeIndex i) const {
  const Node& n = nodes_[i];
  const std::string who = "node " + (n.name.empty() ? "#" + std::to_string(i) : n.name);
  if (n.type != NodeType::kCa && n.type != NodeType::kSwitch && n.type != NodeType::kRouter)
    return who + ": unknown node type";
  if (n.name.empty() || n.name.size() > kMaxNodeName)
    return who + ": node id must be 1.." + std::to_string(kMaxNodeName) + " characters";
  if (!AllPrintable(n.name) || n.name.find_first_of("\"#@") != std::string::npos)
    return who + ": node id may not hold control characters or any of \" # @";
  if (n.description.empty()) return who + ": empty node description";
  if (n.description.size() > kMaxNodeDescription)
    return who + ": node description is " + std::to_string(n.description.size()) +
           " bytes; at most " + std::to_string(kMaxNodeDescription);
  if (!AllPrintable(n.description) || n.description.find('"') != std::string::npos)
    return who + ": node description may not hold control characters or a double quote";
  if (n.num_ports == 0 || n.num_ports > kMaxPorts)
    return who + ": " + std::to_string(n.num_ports) + " ports; a node has 1..254";
  if (n.ports.size() != std::size_t{n.num_ports} + 1)
    return who + ": port table has " + std::to_string(n.ports.size()) + " entries for " +
           std::to_string(n.num_ports) + " ports";
  if (n.guid == 0) return who + ": node GUID is 0";
  if (n.enhanced_port0 && !n.is_switch()) return who + ": enhanced port 0 on a non-switch";
  return "";
}

std::string Topology::Validate(std::optional<NodeIndex>* culprit) {
  indexed_ = false;
  std::optional<NodeIndex> ignored;
  if (culprit == nullptr) culprit = &ignored;
  *culprit = std::nullopt;
  if (nodes_.empty()) return "the topology has no nodes";
  by_guid_.clear();
  by_name_.clear();
  by_guid_.reserve(nodes_.size());
  by_name_.reserve(nodes_.size());
  for (NodeIndex i = 0; i < nodes_.size(); ++i) {
    *culprit = i;
    if (std::string e = CheckNode(i); !e.empty()) return e;
    const Node& n = nodes_[i];
    if (auto [it, fresh] = by_name_.emplace(n.name, i); !fresh)
      return "node " + n.name + ": duplicate node id (node #" + std::to_string(it->second) +
             " has it too)";
    if (auto [it, fresh] = by_guid_.emplace(n.guid, i); !fresh)
      return "node " + n.name + ": duplicate node GUID " + HexGuid(n.guid) + " (also " +
             nodes_[it->second].name + ")";
  }
  if (std::string e = CheckPorts(culprit); !e.empty()) return e;
  if (std::string e = BuildLinkIndex(culprit); !e.empty()) return e;
  *culprit = std::nullopt;
  indexed_ = true;
  return "";
}

// Port GUIDs and LIDs of the ports that own them (switch port 0, CA/router ports 1..n).
std::string Topology::CheckPorts(std::optional<NodeIndex>* culprit) {
  std::unordered_map<uint64_t, NodeIndex> port_guids;
  std::unordered_map<uint16_t, NodeIndex> lids;
  port_guids.reserve(nodes_.size() * 2);
  for (NodeIndex i = 0; i < nodes_.size(); ++i) {
    *culprit = i;
    const Node& n = nodes_[i];
    const unsigned first = n.is_switch() ? 0 : 1;
    const unsigned last = n.is_switch() ? 0 : n.num_ports;
    for (unsigned p = first; p <= last; ++p) {
      const NodePort& port = n.ports[p];
      const std::string who = "node " + n.name + " port " + std::to_string(p);
      if (port.guid == 0) return who + ": port GUID is 0";
      if (auto [it, fresh] = port_guids.emplace(port.guid, i); !fresh)
        return who + ": duplicate port GUID " + HexGuid(port.guid) + " (also a port of " +
               nodes_[it->second].name + ")";
      if (auto it = by_guid_.find(port.guid); it != by_guid_.end() && it->second != i)
        return who + ": port GUID " + HexGuid(port.guid) + " is the node GUID of " +
               nodes_[it->second].name;
      if (port.lmc > 7) return who + ": LMC " + std::to_string(port.lmc) + " out of range 0..7";
      if (port.lid > kMaxUnicastLid)
        return who + ": LID " + std::to_string(port.lid) + " is not a unicast LID";
      if (port.lid != 0) {
        if (auto [it, fresh] = lids.emplace(port.lid, i); !fresh)
          return who + ": duplicate LID " + std::to_string(port.lid) + " (also " +
                 nodes_[it->second].name + ")";
      }
    }
  }
  return "";
}

std::string Topology::BuildLinkIndex(std::optional<NodeIndex>* culprit) {
  port_base_.resize(nodes_.size());
  std::size_t total = 0;
  for (NodeIndex i = 0; i < nodes_.size(); ++i) {
    port_base_[i] = total;
    total += std::size_t{nodes_[i].num_ports} + 1;
  }
  port_link_.assign(total, -1);
  for (std::size_t l = 0; l < links_.size(); ++l) {
    for (const PortRef& end : {links_[l].a, links_[l].b}) {
      *culprit = std::nullopt;
      if (end.node >= nodes_.size())
        return "link " + std::to_string(l) + ": no node #" + std::to_string(end.node);
      *culprit = end.node;
      const Node& n = nodes_[end.node];
      if (end.port == 0 || end.port > n.num_ports)
        return Describe(end) + ": out of range (the node has ports 1.." +
               std::to_string(n.num_ports) + ")";
      int32_t& slot = port_link_[port_base_[end.node] + end.port];
      if (slot != -1) {
        const Link& other = links_[static_cast<std::size_t>(slot)];
        const PortRef peer = other.a == end ? other.b : other.a;
        return Describe(end) + ": cabled twice (to " + Describe(peer) + " and to " +
               Describe(end == links_[l].a ? links_[l].b : links_[l].a) + ")";
      }
      slot = static_cast<int32_t>(l);
    }
  }
  return "";
}

std::optional<NodeIndex> Topology::FindByGuid(uint64_t node_guid) const {
  if (!indexed_) return std::nullopt;
  auto it = by_guid_.find(node_guid);
  if (it == by_guid_.end()) return std::nullopt;
  return it->second;
}

std::optional<NodeIndex> Topology::FindByName(const std::string& name) const {
  if (!indexed_) return std::nullopt;
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

const Link* Topology::LinkAt(PortRef port) const {
  if (!indexed_ || port.node >= nodes_.size() || port.port > nodes_[port.node].num_ports)
    return nullptr;
  const int32_t l = port_link_[port_base_[port.node] + port.port];
  return l < 0 ? nullptr : &links_[static_cast<std::size_t>(l)];
}

std::optional<PortRef> Topology::Peer(PortRef port) const {
  const Link* link = LinkAt(port);
  if (link == nullptr) return std::nullopt;
  return link->a == port ? link->b : link->a;
}

bool operator==(const Topology& x, const Topology& y) {
  return x.nodes_ == y.nodes_ && Canonical(x.links_) == Canonical(y.links_);
}

}  // namespace softib::fabric
