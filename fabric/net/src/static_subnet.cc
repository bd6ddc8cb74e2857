#include "softib/fabric/static_subnet.h"

#include <algorithm>
#include <deque>

#include "softib/mad/mad_common.h"
#include "softib/mad/mad_sm.h"

namespace softib::fabric {

namespace {
// MAD header and SMP data positions (IBA 13.4.3, 14.2.1.1).
constexpr std::size_t kMethod = 3, kStatus = 4, kTid = 8, kAttributeId = 16, kModifier = 20,
                      kData = 64;
constexpr uint8_t kGet = 0x01, kSet = 0x02;

std::string Refused(const char* what, uint32_t modifier, uint16_t status) {
  return std::string(what) + " " + std::to_string(modifier) + ": the SMA answered status " +
         std::to_string(status);
}
}  // namespace

uint16_t SmaSetOrGet(Switch& sw, uint8_t method, uint16_t attribute, uint32_t modifier,
                     std::array<uint8_t, 64>* data) {
  std::array<uint8_t, 256> mad{};
  mad[0] = 1;     // BaseVersion
  mad[1] = 0x01;  // SubnMgt, LID-routed
  mad[2] = 1;     // ClassVersion
  mad[kMethod] = method;
  mad[kTid + 7] = 1;
  mad[kAttributeId] = static_cast<uint8_t>(attribute >> 8);
  mad[kAttributeId + 1] = static_cast<uint8_t>(attribute);
  for (int i = 0; i < 4; ++i) mad[kModifier + i] = static_cast<uint8_t>(modifier >> (24 - 8 * i));
  std::copy(data->begin(), data->end(), mad.begin() + kData);
  const auto response = sw.HandleSmp(mad, /*in_port=*/0);
  if (!response) return 0xFFFF;
  std::copy_n(response->begin() + kData, 64, data->begin());
  return static_cast<uint16_t>((*response)[kStatus] << 8 | (*response)[kStatus + 1]);
}

std::string ProgramLft(Switch& sw, const std::map<uint16_t, uint8_t>& routes) {
  const uint16_t top = routes.empty() ? 0 : routes.rbegin()->first;
  std::map<uint32_t, mad::LinearForwardingTable> blocks;
  for (const auto& [lid, port] : routes) {
    auto [it, fresh] = blocks.try_emplace(lid / 64u);
    if (fresh) it->second.Port.fill(0xFF);
    it->second.Port[lid % 64u] = port;
  }
  for (const auto& [block, table] : blocks) {
    std::array<uint8_t, 64> data{};
    table.Pack(data);
    if (const uint16_t s =
            SmaSetOrGet(sw, kSet, mad::LinearForwardingTable::kAttributeId, block, &data))
      return Refused("LinearForwardingTable block", block, s);
  }
  std::array<uint8_t, 64> data{};
  if (const uint16_t s = SmaSetOrGet(sw, kGet, mad::SwitchInfo::kAttributeId, 0, &data))
    return Refused("SwitchInfo", 0, s);
  mad::SwitchInfo info;
  info.Unpack(data);
  info.LinearFDBTop = top;
  info.Pack(data);
  if (const uint16_t s = SmaSetOrGet(sw, kSet, mad::SwitchInfo::kAttributeId, 0, &data))
    return Refused("SwitchInfo", 0, s);
  return "";
}

std::string ActivatePorts(Switch& sw) {
  for (const mad::PortState state : {mad::PortState::ARMED, mad::PortState::ACTIVE}) {
    // Init -> Armed, then Armed -> Active; Down (uncabled) and Active ports stay.
    const auto from = static_cast<uint8_t>(state == mad::PortState::ARMED ? mad::PortState::INIT
                                                                          : mad::PortState::ARMED);
    for (uint8_t port = 1; port <= sw.num_ports(); ++port) {
      if (sw.port_info(port).PortState != from) continue;
      std::array<uint8_t, 64> data{};
      if (const uint16_t s = SmaSetOrGet(sw, kGet, mad::PortInfo::kAttributeId, port, &data))
        return Refused("PortInfo", port, s);
      mad::PortInfo info;
      info.Unpack(data);
      info.PortState = static_cast<uint8_t>(state);
      info.PortPhysicalState = 0;  // no change, as an SM writes it
      info.LinkWidthEnabled = 0;
      info.LinkSpeedEnabled = 0;
      info.Pack(data);
      if (const uint16_t s = SmaSetOrGet(sw, kSet, mad::PortInfo::kAttributeId, port, &data))
        return Refused("PortInfo", port, s);
    }
  }
  return "";
}

std::string ReactivateCable(Fabric& fabric, uint32_t cable) {
  for (int side = 0; side < 2; ++side) {
    const CableEnd& end = fabric.cable_end(cable, side);
    if (end.kind != CableEnd::Kind::kSwitch) continue;
    if (std::string e = ActivatePorts(fabric.switch_at(end.index)); !e.empty()) return e;
  }
  return "";
}

std::string SetSwitchLid(Switch& sw, uint16_t lid) {
  std::array<uint8_t, 64> data{};
  if (const uint16_t s = SmaSetOrGet(sw, kGet, mad::PortInfo::kAttributeId, 0, &data))
    return Refused("PortInfo", 0, s);
  mad::PortInfo info;
  info.Unpack(data);
  info.LID = lid;
  info.PortState = 0;
  info.PortPhysicalState = 0;
  info.LinkWidthEnabled = 0;
  info.LinkSpeedEnabled = 0;
  info.Pack(data);
  if (const uint16_t s = SmaSetOrGet(sw, kSet, mad::PortInfo::kAttributeId, 0, &data))
    return Refused("PortInfo", 0, s);
  return "";
}

std::string BuildStaticSubnet(const Topology& topology, Fabric& fabric,
                              const CaPortFactory& make_ca_port, StaticSubnet* out, bool program,
                              const SubnetPart* part) {
  if (!topology.validated()) return "the topology is not validated";
  const auto& nodes = topology.nodes();
  const std::size_t n = nodes.size();
  out->switch_index.assign(n, -1);
  out->lid.assign(n, {});
  out->ca_port.assign(n, {});
  out->cable.assign(topology.links().size(), -1);
  if (part != nullptr && (part->owned.size() != n || !part->far_end))
    return "the hosted part does not match the topology";
  auto owned = [&](NodeIndex i) { return part == nullptr || part->owned[i]; };
  // Switches, LIDs, CA ports.
  uint32_t next_lid = 1;
  for (NodeIndex i = 0; i < n; ++i) {
    const Node& node = nodes[i];
    out->lid[i].assign(std::size_t{node.num_ports} + 1, 0);
    out->ca_port[i].assign(std::size_t{node.num_ports} + 1, -1);
    if (node.is_switch()) {
      if (!owned(i)) {
        out->lid[i][0] = static_cast<uint16_t>(next_lid++);
        continue;
      }
      SwitchConfig config;
      config.node_guid = node.guid;
      config.system_image_guid = node.system_image_guid;
      config.num_ports = node.num_ports;
      config.description = node.description;
      config.vendor_id = node.vendor_id;
      config.device_id = node.device_id;
      out->switch_index[i] = static_cast<int32_t>(fabric.AddSwitch(config));
      out->lid[i][0] = static_cast<uint16_t>(next_lid++);
      continue;
    }
    // Every port of a CA gets a LID, cabled or not, so that a CA's LIDs are consecutive
    // (an HCA configured with its first LID numbers the rest).
    for (uint8_t p = 1; p <= node.num_ports; ++p) {
      if (next_lid > kMaxUnicastLid) return "more ports than unicast LIDs";
      out->lid[i][p] = static_cast<uint16_t>(next_lid++);
    }
    for (uint8_t p = 1; p <= node.num_ports && owned(i); ++p) {
      if (topology.Peer({i, p}))
        out->ca_port[i][p] = static_cast<int32_t>(make_ca_port(i, p, out->lid[i][p]));
    }
  }
  // Cables.
  auto end_of = [&](PortRef ref) {
    if (nodes[ref.node].is_switch())
      return CableEnd{CableEnd::Kind::kSwitch, static_cast<uint32_t>(out->switch_index[ref.node]),
                      ref.port};
    return CableEnd{CableEnd::Kind::kCaPort,
                    static_cast<uint32_t>(out->ca_port[ref.node][ref.port]), 0};
  };
  for (std::size_t l = 0; l < topology.links().size(); ++l) {
    const Link& link = topology.links()[l];
    const bool a = owned(link.a.node), b = owned(link.b.node);
    if (a && b) {
      out->cable[l] = fabric.Connect(end_of(link.a), end_of(link.b));
    } else if (a || b) {
      const auto cable = fabric.Connect(end_of(a ? link.a : link.b), part->far_end(l));
      fabric.SetCableUp(cable, false);
      out->cable[l] = cable;
    }
  }
  if (!program) return "";

  // Min-hop routes: for each destination switch, BFS distances over switch-to-switch links;
  // every switch forwards toward a neighbour one hop closer (ties spread by LID).
  std::vector<NodeIndex> switches;
  for (NodeIndex i = 0; i < n; ++i)
    if (nodes[i].is_switch()) switches.push_back(i);
  std::vector<std::map<uint16_t, uint8_t>> routes(n);
  std::vector<int32_t> distance(n);
  for (NodeIndex d : switches) {
    std::fill(distance.begin(), distance.end(), -1);
    distance[d] = 0;
    std::deque<NodeIndex> frontier{d};
    while (!frontier.empty()) {
      const NodeIndex s = frontier.front();
      frontier.pop_front();
      for (uint8_t p = 1; p <= nodes[s].num_ports; ++p) {
        const auto peer = topology.Peer({s, p});
        if (!peer || !nodes[peer->node].is_switch() || distance[peer->node] >= 0) continue;
        distance[peer->node] = distance[s] + 1;
        frontier.push_back(peer->node);
      }
    }
    // The LIDs that live at switch d: its own, and those of the CA ports cabled to it.
    std::vector<std::pair<uint16_t, uint8_t>> here{{out->lid[d][0], 0}};
    for (uint8_t p = 1; p <= nodes[d].num_ports; ++p) {
      const auto peer = topology.Peer({d, p});
      if (peer && !nodes[peer->node].is_switch())
        here.push_back({out->lid[peer->node][peer->port], p});
    }
    for (NodeIndex s : switches) {
      if (distance[s] < 0) continue;  // not reachable: left unprogrammed
      std::vector<uint8_t> closer;
      if (s != d) {
        for (uint8_t p = 1; p <= nodes[s].num_ports; ++p) {
          const auto peer = topology.Peer({s, p});
          if (peer && nodes[peer->node].is_switch() && distance[peer->node] == distance[s] - 1)
            closer.push_back(p);
        }
      }
      for (const auto& [lid, port_at_d] : here) {
        if (lid == 0) continue;
        routes[s][lid] = s == d ? port_at_d : closer[lid % closer.size()];
      }
    }
  }
  for (NodeIndex s : switches) {
    if (!owned(s)) continue;
    Switch& sw = fabric.switch_at(static_cast<uint32_t>(out->switch_index[s]));
    if (std::string e = SetSwitchLid(sw, out->lid[s][0]); !e.empty())
      return nodes[s].name + ": " + e;
    if (std::string e = ProgramLft(sw, routes[s]); !e.empty()) return nodes[s].name + ": " + e;
    if (std::string e = ActivatePorts(sw); !e.empty()) return nodes[s].name + ": " + e;
  }
  return "";
}

}  // namespace softib::fabric
