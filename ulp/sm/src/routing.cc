// Min-hop routing over the switch graph, and the pieces every engine shares.
#include <algorithm>

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
  // A plain vector as the queue: every switch enters it at most once.
  std::vector<uint32_t> todo{target};
  todo.reserve(g.switches.size());
  hops[target] = 0;
  for (std::size_t head = 0; head < todo.size(); ++head) {
    const uint32_t s = todo[head];
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

namespace {

struct TargetLids {
  uint16_t first_lid;
  uint16_t count;  // 2^LMC
  uint8_t final_port;
};

// Gives each LID behind a target the least loaded of the switch's `minimal` ports (the
// first of equals, in port order), one LID more on it each time: the balancing of min-hop.
// Done in passes over the ports at the lowest load level, which picks exactly what a scan
// for the minimum per LID would, without one scan per LID (ft-k36: 21 M LIDs x 18 ports).
void PickLeastLoaded(const std::vector<uint8_t>& minimal, uint32_t* used,
                     const std::vector<TargetLids>& lids, uint8_t* lft,
                     std::vector<uint32_t>& load) {
  const std::size_t m = minimal.size();
  load.resize(m);
  for (std::size_t i = 0; i < m; ++i) load[i] = used[minimal[i]];
  // Ports before `at` are above `level`; none is below it. Past the last port, the next
  // pass starts at the lowest load there is now.
  uint32_t level = *std::min_element(load.begin(), load.end());
  std::size_t at = 0;
  auto next = [&] {
    if (++at < m) return;
    at = 0;
    level = *std::min_element(load.begin(), load.end());
  };
  for (const TargetLids& target : lids) {
    for (unsigned offset = 0; offset < target.count; ++offset) {
      while (load[at] != level) next();
      lft[target.first_lid + offset] = minimal[at];
      ++load[at];
      next();
    }
  }
  for (std::size_t i = 0; i < m; ++i) used[minimal[i]] = load[i];
}

}  // namespace

RoutingReport ComputeMinHopRoutes(Subnet& subnet) {
  RoutingReport report;
  const SwitchGraph g = BuildSwitchGraph(subnet);
  if (!PrepareLfts(subnet, g, report)) return report;
  // How many destination LIDs each switch port already carries, for balancing.
  std::vector<std::vector<uint32_t>> load = EmptyLoad(subnet, g);
  // Group the end ports by the switch they hang off, so each BFS serves all of them.
  const std::vector<std::vector<Target>> by_switch = TargetsBySwitch(subnet, g);
  std::vector<TargetLids> lids_behind;
  for (uint32_t t = 0; t < g.switches.size(); ++t)
    for (const Target& target : by_switch[t])
      report.lids += 1u << subnet.node(target.end.node).ports[target.end.port].lmc;
  // A switch's choices depend only on its own load and the order of the LIDs (target switch
  // by target switch, then the LIDs behind each), so the tables are the same whichever
  // switch goes first. Target-major order needs one hop table at a time (one BFS, kept in
  // cache while every switch reads it, instead of 1,620 tables of 3 KiB on ft-k36), and the
  // switches' LFTs and loads are reached by plain pointers.
  std::vector<uint8_t*> lft_of(g.switches.size());
  for (uint32_t s = 0; s < g.switches.size(); ++s)
    lft_of[s] = subnet.node(g.switches[s]).lft.data();
  std::vector<uint16_t> to_t;
  std::vector<uint8_t> minimal;
  std::vector<uint32_t> picks;
  for (uint32_t t = 0; t < g.switches.size(); ++t) {
    if (by_switch[t].empty()) continue;
    HopsTo(g, t, to_t);
    // The LIDs behind the target switch, read once for every switch below.
    lids_behind.clear();
    for (const Target& target : by_switch[t]) {
      const SmPort& dest = subnet.node(target.end.node).ports[target.end.port];
      lids_behind.push_back({dest.lid, static_cast<uint16_t>(1u << dest.lmc), target.final_port});
    }
    for (uint32_t s = 0; s < g.switches.size(); ++s) {
      uint8_t* lft = lft_of[s];
      if (s == t) {
        for (const TargetLids& target : lids_behind)
          std::fill_n(lft + target.first_lid, target.count, target.final_port);
        continue;
      }
      if (to_t[s] == kUnreachable) {
        for (const TargetLids& target : lids_behind) report.unreachable += target.count;
        continue;
      }
      minimal.clear();
      for (const auto& [port, next] : g.edges[s])
        if (to_t[next] + 1 == to_t[s]) minimal.push_back(port);
      if (minimal.empty()) continue;  // cannot happen on a reachable switch other than t
      PickLeastLoaded(minimal, load[s].data(), lids_behind, lft, picks);
    }
  }
  return report;
}

}  // namespace softib::sm
