// Min-hop routing over the switch graph.
#include "softib/sm/routing.h"

#include <deque>
#include <limits>

namespace softib::sm {
namespace {

constexpr uint16_t kUnreachable = std::numeric_limits<uint16_t>::max();

struct SwitchGraph {
  std::vector<NodeId> switches;     // switch number -> node
  std::vector<uint32_t> number_of;  // node -> switch number (or ~0)
  // Per switch: (port, neighbour switch number) for every port cabled to a switch.
  std::vector<std::vector<std::pair<uint8_t, uint32_t>>> edges;
};

SwitchGraph BuildGraph(const Subnet& subnet) {
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

// Hops from every switch to `target` (breadth-first from the target; links are symmetric).
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

}  // namespace

RoutingReport ComputeMinHopRoutes(Subnet& subnet) {
  RoutingReport report;
  const SwitchGraph g = BuildGraph(subnet);
  report.switches = static_cast<unsigned>(g.switches.size());
  const uint16_t top = subnet.TopLid();
  for (NodeId n : g.switches) {
    SmNode& node = subnet.node(n);
    if (node.has_switch_info && node.switch_info.LinearFDBCap != 0 &&
        top >= node.switch_info.LinearFDBCap) {
      report.error = "switch 0x" + std::to_string(node.guid) + " holds " +
                     std::to_string(node.switch_info.LinearFDBCap) + " LFT entries; LID " +
                     std::to_string(top) + " does not fit";
      return report;
    }
    node.lft.assign(std::size_t{top} + 1, kNoPort);
  }
  // How many destination LIDs each switch port already carries, for balancing.
  std::vector<std::vector<uint32_t>> load(g.switches.size());
  for (uint32_t s = 0; s < g.switches.size(); ++s)
    load[s].assign(subnet.node(g.switches[s]).num_ports + 1, 0);

  // Group the end ports by the switch they hang off, so each BFS serves all of them.
  struct Target {
    EndPort end;
    uint8_t final_port;  // the port on the attachment switch (0: the switch itself)
  };
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

  std::vector<uint16_t> hops;
  for (uint32_t t = 0; t < g.switches.size(); ++t) {
    if (by_switch[t].empty()) continue;
    HopsTo(g, t, hops);
    for (const Target& target : by_switch[t]) {
      const SmPort& dest = subnet.node(target.end.node).ports[target.end.port];
      for (unsigned offset = 0; offset < (1u << dest.lmc); ++offset) {
        const uint16_t lid = static_cast<uint16_t>(dest.lid + offset);
        ++report.lids;
        for (uint32_t s = 0; s < g.switches.size(); ++s) {
          SmNode& sw = subnet.node(g.switches[s]);
          if (s == t) {
            sw.lft[lid] = target.final_port;
            continue;
          }
          if (hops[s] == kUnreachable) {
            ++report.unreachable;
            continue;
          }
          uint8_t best = kNoPort;
          for (const auto& [port, next] : g.edges[s]) {
            if (hops[next] + 1 != hops[s]) continue;
            if (best == kNoPort || load[s][port] < load[s][best]) best = port;
          }
          sw.lft[lid] = best;
          if (best != kNoPort) ++load[s][best];
        }
      }
    }
  }
  return report;
}

RouteCheckReport CheckRoutes(const Subnet& subnet) {
  RouteCheckReport report;
  const uint16_t top = subnet.TopLid();
  const std::size_t count = subnet.nodes().size();
  // Per destination LID, per switch: 0 unknown, 1 on the current walk, 2 delivers (hops in
  // `dist`), 3 fails.
  std::vector<uint8_t> state(count);
  std::vector<uint16_t> dist(count);
  std::vector<NodeId> walk;
  const std::vector<EndPort> ends = subnet.EndPorts();
  auto problem = [&](std::string text) {
    if (report.problems.size() < 10) report.problems.push_back(std::move(text));
  };

  for (unsigned lid = 1; lid <= top; ++lid) {
    const auto owner = subnet.Owner(static_cast<uint16_t>(lid));
    if (!owner) continue;
    std::fill(state.begin(), state.end(), 0);
    // Resolves switch `start` for this LID: follows the LFT until a delivery, a failure or a
    // switch already resolved, then writes the outcome back along the walk.
    auto resolve = [&](NodeId start) {
      walk.clear();
      NodeId at = start;
      uint8_t outcome = 0;
      uint16_t tail_hops = 0;
      bool loop = false;
      while (true) {
        if (state[at] == 2 || state[at] == 3) {
          outcome = state[at];
          tail_hops = dist[at];
          break;
        }
        if (state[at] == 1) {
          outcome = 3;
          loop = true;
          break;
        }
        state[at] = 1;
        walk.push_back(at);
        const SmNode& sw = subnet.node(at);
        if (owner->node == at) {  // the switch's own port 0
          outcome = 2;
          tail_hops = 0;
          walk.pop_back();
          state[at] = 2;
          dist[at] = 0;
          break;
        }
        const uint8_t out = lid < sw.lft.size() ? sw.lft[lid] : kNoPort;
        if (out == kNoPort || out == 0 || out > sw.num_ports || !sw.ports[out].linked()) {
          problem(
              "switch " + sw.description + ": LID " + std::to_string(lid) +
              (out == kNoPort ? " has no LFT entry" : " goes to dead port " + std::to_string(out)));
          outcome = 3;
          break;
        }
        const NodeId next = sw.ports[out].peer;
        if (!subnet.node(next).is_switch()) {
          if (next == owner->node && sw.ports[out].peer_port == owner->port) {
            outcome = 2;
            tail_hops = 0;
          } else {
            problem("switch " + sw.description + ": LID " + std::to_string(lid) + " delivered to " +
                    subnet.node(next).description + ", not its owner");
            outcome = 3;
          }
          // The delivery hop to a CA is not a switch-to-switch hop.
          state[at] = outcome;
          dist[at] = tail_hops;
          walk.pop_back();
          break;
        }
        at = next;
      }
      if (loop) {
        ++report.loops;
        problem("LID " + std::to_string(lid) + " loops through switch " +
                subnet.node(at).description);
      }
      // Write back: each earlier switch on the walk is one hop further.
      for (auto it = walk.rbegin(); it != walk.rend(); ++it) {
        if (outcome == 2) ++tail_hops;
        state[*it] = outcome;
        dist[*it] = tail_hops;
      }
      return outcome == 2;
    };

    for (const EndPort& src : ends) {
      if (src.node == owner->node && src.port == owner->port) continue;
      ++report.pairs;
      NodeId entry = src.node;
      const SmNode& node = subnet.node(src.node);
      if (!node.is_switch()) {
        const SmPort& port = node.ports[src.port];
        if (port.linked() && port.peer == owner->node && port.peer_port == owner->port) continue;
        if (!port.linked() || !subnet.node(port.peer).is_switch()) {
          ++report.holes;
          problem(node.description + " port " + std::to_string(src.port) + " reaches no switch");
          continue;
        }
        entry = port.peer;
      }
      if (state[entry] != 2 && state[entry] != 3) resolve(entry);
      if (state[entry] == 2) {
        report.max_hops = std::max<unsigned>(report.max_hops, dist[entry]);
      } else {
        ++report.holes;
      }
    }
  }
  return report;
}

}  // namespace softib::sm
