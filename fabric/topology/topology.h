// The topology model: nodes (CAs, switches, routers) with their GUIDs, ports and node
// descriptions, and the links between their ports. It is what the ibnetdiscover reader
// produces, what the writer and the generators consume, and what the fabric will build
// its switches and HCAs from. Plain data plus Validate(), which checks every rule a real
// subnet obeys and builds the lookup index (port -> link, GUID -> node).
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fabric/topology/link_rate.h"

namespace softib::fabric {

// NodeInfo NodeType values (IBTA 14.2.5.3).
enum class NodeType : uint8_t { kCa = 1, kSwitch = 2, kRouter = 3 };

std::string_view ToString(NodeType type);  // "Ca", "Switch", "Router"

constexpr std::size_t kMaxNodeDescription = 64;  // NodeDescription is 64 bytes
constexpr std::size_t kMaxNodeName = 64;         // ibsim's node id buffer holds 64 chars
constexpr uint8_t kMaxPorts = 254;               // port 255 is not a valid port number
constexpr uint16_t kMaxUnicastLid = 0xBFFF;

// One port's identity. Switch external ports have none of their own (a switch is
// addressed through port 0), so only ports[0] of a switch and ports[1..n] of a CA or
// router carry values.
struct NodePort {
  uint64_t guid = 0;
  uint16_t lid = 0;  // 0: no LID assigned (what ibnetdiscover prints before an SM ran)
  uint8_t lmc = 0;
  friend bool operator==(const NodePort&, const NodePort&) = default;
};

struct Node {
  NodeType type = NodeType::kCa;
  std::string name;         // the node id in the file ("S-0002c90200000001"), unique
  std::string description;  // NodeDescription, 1..64 bytes
  uint64_t guid = 0;
  uint64_t system_image_guid = 0;
  uint32_t vendor_id = 0;  // 24 bits
  uint16_t device_id = 0;
  uint8_t num_ports = 0;
  bool enhanced_port0 = false;  // SwitchInfo EnhancedPort0; switches only
  std::vector<NodePort> ports;  // num_ports + 1 entries, indexed by port number

  bool is_switch() const { return type == NodeType::kSwitch; }
  // The port that owns the node's LID and port GUID for `port`: 0 on a switch.
  const NodePort& AddressOf(uint8_t port) const { return ports[is_switch() ? 0 : port]; }
  friend bool operator==(const Node&, const Node&) = default;
};

// A node with the defaults a real device has: system image GUID = node GUID, switch port
// 0 GUID = node GUID, CA/router port p GUID = node GUID + p (what ibsim also assumes).
Node MakeNode(NodeType type, std::string name, std::string description, uint64_t guid,
              uint8_t num_ports);

// ibnetdiscover's node id for a GUID: "S-", "H-" or "R-" and 16 hex digits.
std::string CanonicalName(NodeType type, uint64_t guid);

using NodeIndex = uint32_t;

struct PortRef {
  NodeIndex node = 0;
  uint8_t port = 0;
  friend auto operator<=>(const PortRef&, const PortRef&) = default;
};

struct Link {
  PortRef a, b;
  LinkWidth width = LinkWidth::k4x;
  LinkSpeed speed = LinkSpeed::kQdr;
  friend bool operator==(const Link&, const Link&) = default;
};

class Topology {
 public:
  NodeIndex AddNode(Node node);
  void AddLink(const Link& link);

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Link>& links() const { return links_; }
  const Node& node(NodeIndex i) const { return nodes_[i]; }
  Node& mutable_node(NodeIndex i) {
    indexed_ = false;
    return nodes_[i];
  }
  std::size_t Count(NodeType type) const;

  // Checks every rule below and, when they hold, builds the index that the lookups use.
  // Returns "" or the first broken rule, naming the node and port:
  //  - at least one node; 1..254 ports; ports has num_ports + 1 entries
  //  - node ids unique, 1..64 printable characters, none of  " # @
  //  - descriptions 1..64 printable bytes without a double quote
  //  - GUIDs non-zero; node GUIDs unique; port GUIDs unique (a port may share its own
  //    node's GUID, as switch port 0 does, but no other node's)
  //  - LIDs unicast (<= 0xBFFF), base LIDs unique, LMC <= 7; enhanced port 0 on switches only
  //  - links join existing ports 1..num_ports; no port cabled twice (or to itself)
  // When `culprit` is given, it receives the node the broken rule is about.
  std::string Validate(std::optional<NodeIndex>* culprit = nullptr);
  bool validated() const { return indexed_; }

  // Lookups; they need a successful Validate() since the last change.
  std::optional<NodeIndex> FindByGuid(uint64_t node_guid) const;
  std::optional<NodeIndex> FindByName(const std::string& name) const;
  const Link* LinkAt(PortRef port) const;
  std::optional<PortRef> Peer(PortRef port) const;

  // The same nodes in the same order, and the same set of links whichever end each link
  // names first and in whatever order they were added.
  friend bool operator==(const Topology& x, const Topology& y);

 private:
  std::string CheckNode(NodeIndex i) const;
  std::string CheckPorts(std::optional<NodeIndex>* culprit);
  std::string BuildLinkIndex(std::optional<NodeIndex>* culprit);
  std::string Describe(PortRef port) const;

  std::vector<Node> nodes_;
  std::vector<Link> links_;
  // Index, valid while indexed_: port_link_[port_base_[n] + p] = link number or -1.
  bool indexed_ = false;
  std::vector<std::size_t> port_base_;
  std::vector<int32_t> port_link_;
  std::unordered_map<uint64_t, NodeIndex> by_guid_;
  std::unordered_map<std::string, NodeIndex> by_name_;
};

}  // namespace softib::fabric
