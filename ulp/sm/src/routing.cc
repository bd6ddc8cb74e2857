// Min-hop routing over the switch graph, and the pieces every engine shares.
#include <deque>

#include "routing_internal.h"
#include "softib/sm/routing.h"

namespace softib::sm {
namespace detail {

SwitchGraph BuildSwitchGraph(const Subnet& subnet) {
  SwitchGraph g;
  g.number_of.assign(subnet.nodes().size(), ~0u);
  for (NodeId n = 0; n < subnet.nodes().size(); ++n) {
    if (!subnet.node(n).is_switch()) continue;
    g.number_of[n] = static_cast<uint32_t>(g.switches.size());
    g.switches.push_back(n);
  }
  g.edges.resize(g.switches.size());
  for (uint32_t s = 0; s < g.switches.size(); ++s) {
    const SmNode& node = subnet.node(g.switches[s]);
    for (uint8_t p = 1; p <= node.num_ports; ++p) {
      const SmPort& port = node.ports[p];
      if (port.linked() && subnet.node(port.peer).is_switch())
        g.edges[s].push_back({p, g.number_of[port.peer]});
    }
  }
  return g;
}

void HopsTo(const SwitchGraph& g, uint32_t target, std::vector<uint16_t>& hops) {
  hops.assign(g.switches.size(), kUnreachable);
  std::deque<uint32_t> todo{target};
  hops[target] = 0;
  while (!todo.empty()) {
    const uint32_t s = todo.front();
    todo.pop_front();
    for (const auto& [port, next] : g.edges[s]) {
      if (hops[next] != kUnreachable) continue;
      hops[next] = static_cast<uint16_t>(hops[s] + 1);
      todo.push_back(next);
    }
  }
}

bool PrepareLfts(Subnet& subnet, const SwitchGraph& g, RoutingReport& report) {
  report.switches = static_cast<unsigned>(g.switches.size());
  const uint16_t top = subnet.TopLid();
  for (NodeId n : g.switches) {
    SmNode& node = subnet.node(n);
    if (node.has_switch_info && node.switch_info.LinearFDBCap != 0 &&
        top >= node.switch_info.LinearFDBCap) {
      report.error = "switch 0x" + std::to_string(node.guid) + " holds " +
                     std::to_string(node.switch_info.LinearFDBCap) + " LFT entries; LID " +
                     std::to_string(top) + " does not fit";
      return false;
    }
    node.lft.assign(std::size_t{top} + 1, kNoPort);
  }
  return true;
}

std::vector<std::vector<Target>> TargetsBySwitch(const Subnet& subnet, const SwitchGraph& g) {
  std::vector<std::vector<Target>> by_switch(g.switches.size());
  for (const EndPort& e : subnet.EndPorts()) {
    const SmNode& node = subnet.node(e.node);
    if (node.ports[e.port].lid == 0) continue;
    if (node.is_switch()) {
      by_switch[g.number_of[e.node]].push_back({e, 0});
      continue;
    }
    const SmPort& port = node.ports[e.port];
    if (!port.linked() || !subnet.node(port.peer).is_switch()) continue;  // no switch: no LFT
    by_switch[g.number_of[port.peer]].push_back({e, port.peer_port});
  }
  return by_switch;
}

std::vector<std::vector<uint32_t>> EmptyLoad(const Subnet& subnet, const SwitchGraph& g) {
  std::vector<std::vector<uint32_t>> load(g.switches.size());
  for (uint32_t s = 0; s < g.switches.size(); ++s)
    load[s].assign(subnet.node(g.switches[s]).num_ports + 1, 0);
  return load;
}

}  // namespace detail

using namespace detail;

RoutingReport ComputeMinHopRoutes(Subnet& subnet) {
  RoutingReport report;
  const SwitchGraph g = BuildSwitchGraph(subnet);
  if (!PrepareLfts(subnet, g, report)) return report;
  // How many destination LIDs each switch port already carries, for balancing.
  std::vector<std::vector<uint32_t>> load = EmptyLoad(subnet, g);
  // Group the end ports by the switch they hang off, so each BFS serves all of them.
  const std::vector<std::vector<Target>> by_switch = TargetsBySwitch(subnet, g);

  // Hop counts to every switch that has end ports behind it.
  std::vector<std::vector<uint16_t>> hops(g.switches.size());
  for (uint32_t t = 0; t < g.switches.size(); ++t) {
    if (by_switch[t].empty()) continue;
    HopsTo(g, t, hops[t]);
    for (const Target& target : by_switch[t])
      report.lids += 1u << subnet.node(target.end.node).ports[target.end.port].lmc;
  }
  // The LIDs behind each target switch, flat: the pass below reads them once per switch,
  // and a node's record is too far from the next one's for that (13k nodes, 1.6k switches).
  struct TargetLids {
    uint16_t first_lid;
    uint16_t count;  // 2^LMC
    uint8_t final_port;
  };
  std::vector<std::vector<TargetLids>> lids_of(g.switches.size());
  for (uint32_t t = 0; t < g.switches.size(); ++t) {
    for (const Target& target : by_switch[t]) {
      const SmPort& dest = subnet.node(target.end.node).ports[target.end.port];
      lids_of[t].push_back({dest.lid, static_cast<uint16_t>(1u << dest.lmc), target.final_port});
    }
  }
  // A switch's choices depend only on its own load and the order of the LIDs, so each
  // switch is routed in one pass (its LFT written in order, its minimal ports towards a
  // target switch found once for all the LIDs behind it) — the same tables as visiting
  // every switch per LID, at a fraction of the memory traffic.
  std::vector<uint8_t> minimal;
  for (uint32_t s = 0; s < g.switches.size(); ++s) {
    SmNode& sw = subnet.node(g.switches[s]);
    std::vector<uint32_t>& used = load[s];
    for (uint32_t t = 0; t < g.switches.size(); ++t) {
      if (by_switch[t].empty()) continue;
      const std::vector<uint16_t>& to_t = hops[t];
      minimal.clear();
      if (s != t && to_t[s] != kUnreachable) {
        for (const auto& [port, next] : g.edges[s])
          if (to_t[next] + 1 == to_t[s]) minimal.push_back(port);
      }
      for (const TargetLids& target : lids_of[t]) {
        for (unsigned offset = 0; offset < target.count; ++offset) {
          const uint16_t lid = static_cast<uint16_t>(target.first_lid + offset);
          if (s == t) {
            sw.lft[lid] = target.final_port;
            continue;
          }
          if (to_t[s] == kUnreachable) {
            ++report.unreachable;
            continue;
          }
          uint8_t best = kNoPort;
          for (const uint8_t port : minimal)
            if (best == kNoPort || used[port] < used[best]) best = port;
          sw.lft[lid] = best;
          if (best != kNoPort) ++used[best];
        }
      }
    }
  }
  return report;
}

}  // namespace softib::sm
