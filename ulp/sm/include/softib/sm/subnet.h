// What the SM knows about the subnet: the nodes it discovered (or was given, in tests), how
// to reach each of them by directed route, every port's PortInfo, the links, the LIDs it
// assigned and the switches' linear forwarding tables it computed. Discovery fills it, LID
// assignment and routing complete it, the configurator programs it and the route checker
// walks it. No I/O here.
#pragma once

#include <bitset>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fabric/topology/topology.h"
#include "softib/mad/mad_sm.h"

namespace softib::sm {

using NodeId = uint32_t;
inline constexpr NodeId kNoNode = ~NodeId{0};
inline constexpr uint8_t kNoPort = 0xFF;  // LFT entry: no route
inline constexpr uint16_t kMaxUnicastLid = 0xBFFF;
inline constexpr uint16_t kFirstMulticastLid = 0xC000;
// OpenSM's subnet_prefix default: the link-local prefix (IBA 4.1.1), what a port holds
// before an SM writes PortInfo:GIDPrefix.
inline constexpr uint64_t kDefaultSubnetPrefix = 0xfe80000000000000ull;

// The egress ports of one MLID at one switch (bit p: port p, 0 = the switch's own port).
using PortMask = std::bitset<256>;

// PortState values (IBA 14.2.5.6).
inline constexpr uint8_t kPortDown = 1;
inline constexpr uint8_t kPortInit = 2;
inline constexpr uint8_t kPortArmed = 3;
inline constexpr uint8_t kPortActive = 4;
inline constexpr uint8_t kPhysLinkUp = 5;

struct SmPort {
  bool known = false;  // PortInfo read (or given)
  mad::PortInfo info;  // as read, then as the SM last set it
  uint64_t guid = 0;   // CA ports; a switch's ports go by the node GUID
  NodeId peer = kNoNode;
  uint8_t peer_port = 0;
  // Assigned addressing: port 0 of a switch, ports 1..n of a CA.
  uint16_t lid = 0;
  uint8_t lmc = 0;
  // P_KeyTable: as read during the sweep (empty: not read), then as the SM set it.
  std::vector<uint16_t> pkeys;

  bool linked() const { return peer != kNoNode; }
};

struct SmNode {
  fabric::NodeType type = fabric::NodeType::kCa;
  uint64_t guid = 0;
  uint8_t num_ports = 0;
  std::string description;
  mad::NodeInfo node_info;    // as read (PortGUID/LocalPortNum: of the port first entered)
  std::vector<uint8_t> path;  // directed route from the SM: InitialPath[1..n]
  std::vector<SmPort> ports;  // num_ports + 1, indexed by port number
  // Switches only.
  bool has_switch_info = false;
  mad::SwitchInfo switch_info;
  std::vector<uint8_t> lft;          // indexed by LID: egress port or kNoPort
  std::map<uint16_t, PortMask> mft;  // MLID -> ports, as the SM programmed them

  bool is_switch() const { return type == fabric::NodeType::kSwitch; }
};

struct EndPort {
  NodeId node = kNoNode;
  uint8_t port = 0;  // 0 for a switch
  auto operator<=>(const EndPort&) const = default;
};

class Subnet {
 public:
  NodeId Add(SmNode node);
  std::optional<NodeId> Find(uint64_t node_guid) const;
  void Link(NodeId a, uint8_t pa, NodeId b, uint8_t pb);

  std::vector<SmNode>& nodes() { return nodes_; }
  const std::vector<SmNode>& nodes() const { return nodes_; }
  SmNode& node(NodeId id) { return nodes_[id]; }
  const SmNode& node(NodeId id) const { return nodes_[id]; }

  // The ports that carry LIDs: port 0 of every switch, and every known CA/router port.
  std::vector<EndPort> EndPorts() const;
  // Highest LID assigned (the LFTs' LinearFDBTop), 0 if none.
  uint16_t TopLid() const;
  // The end port that owns `lid` (base..base+2^LMC-1), if any. Built by IndexLids().
  std::optional<EndPort> Owner(uint16_t lid) const;
  void IndexLids();

  std::size_t Count(fabric::NodeType type) const;
  std::size_t LinkCount() const;

  NodeId sm_node = kNoNode;  // where the SM sits, and its port
  uint8_t sm_port = 0;

 private:
  std::vector<SmNode> nodes_;
  std::unordered_map<uint64_t, NodeId> by_guid_;
  std::vector<EndPort> lid_owner_;  // indexed by LID
};

// Why `prefix` cannot be a subnet's GID prefix (IBA 4.1.1), "" when it can: not 0 (the
// unspecified GID), not multicast (0xFF..), link-local only as fe80:0:0:0, site-local
// (fec0::/10) with only its 16-bit subnet ID set; any other unicast prefix is global.
std::string SubnetPrefixError(uint64_t prefix);

// The subnet as the SM would find it on a fabric described by `topology` (validated), with
// the SM attached at `sm_node`/`sm_port` (port 0 on a switch): every node reached by a
// shortest directed route, linked ports in Init/LinkUp, 4K MTU and VL0-7 capable, LIDs as the
// file presets them. For tests and in-process fabrics: no MADs involved.
Subnet SubnetFromTopology(const fabric::Topology& topology, fabric::NodeIndex sm_node = 0,
                          uint8_t sm_port = 0);

}  // namespace softib::sm
