// The route checker: every (source end port, destination LID) pair walked through the
// LFTs, and the credit-loop check over the channel dependencies those routes create.
#include <algorithm>
#include <unordered_set>

#include "softib/sm/routing.h"

namespace softib::sm {

namespace {

// The switch the owner of a LID would enter the fabric at as a source (kNoNode: none).
NodeId OwnerEntry(const Subnet& subnet, const EndPort& owner) {
  const SmNode& node = subnet.node(owner.node);
  if (node.is_switch()) return owner.node;
  const SmPort& port = node.ports[owner.port];
  if (!port.linked() || !subnet.node(port.peer).is_switch()) return kNoNode;
  return port.peer;
}

}  // namespace

RouteCheckReport CheckRoutes(const Subnet& subnet) {
  RouteCheckReport report;
  const uint16_t top = subnet.TopLid();
  const std::size_t count = subnet.nodes().size();
  // Per destination LID, per switch: 0 unknown, 1 on the current walk, 2 delivers (hops in
  // `dist`), 3 fails. A state belongs to the LID in `stamp` (unknown for any other LID), so
  // nothing is cleared between LIDs (ft-k36: 13 k LIDs x 13 k nodes).
  std::vector<uint8_t> state(count);
  std::vector<uint16_t> dist(count);
  std::vector<uint16_t> stamp(count, 0);
  std::vector<NodeId> walk;
  // The switch each end port's traffic enters (a switch's port 0: the switch itself), with
  // how many end ports enter there; end ports cabled to no switch are `stranded`.
  std::vector<std::pair<NodeId, uint64_t>> by_entry;
  std::vector<EndPort> stranded;
  {
    std::vector<uint64_t> sources(count, 0);
    for (const EndPort& e : subnet.EndPorts()) {
      const SmNode& node = subnet.node(e.node);
      NodeId entry = e.node;
      if (!node.is_switch()) {
        const SmPort& port = node.ports[e.port];
        if (!port.linked() || !subnet.node(port.peer).is_switch()) {
          stranded.push_back(e);
          continue;
        }
        entry = port.peer;
      }
      ++sources[entry];
    }
    for (NodeId n = 0; n < count; ++n)
      if (sources[n] != 0) by_entry.emplace_back(n, sources[n]);
  }
  // Each switch port's peer, flat (the walks below take ~20 M hops on ft-k36, and a
  // node's port records are too large and too far apart to read for each).
  struct Hop {
    NodeId peer = kNoNode;
    uint8_t peer_port = 0;
    bool to_switch = false;
  };
  std::vector<std::size_t> first_hop(count, 0);
  std::vector<Hop> hops;
  for (NodeId n = 0; n < count; ++n) {
    const SmNode& node = subnet.node(n);
    first_hop[n] = hops.size();
    if (!node.is_switch()) continue;
    for (uint8_t p = 0; p <= node.num_ports; ++p) {
      const SmPort& port = node.ports[p];
      hops.push_back(
          {port.peer, port.peer_port, port.linked() && subnet.node(port.peer).is_switch()});
    }
  }
  auto problem = [&](std::string text) {
    if (report.problems.size() < 10) report.problems.push_back(std::move(text));
  };

  for (unsigned lid = 1; lid <= top; ++lid) {
    const auto owner = subnet.Owner(static_cast<uint16_t>(lid));
    if (!owner) continue;
    const NodeId owner_entry = OwnerEntry(subnet, *owner);
    // The state of node `n` for this LID.
    auto known = [&](NodeId n) -> uint8_t& {
      if (stamp[n] != lid) {
        stamp[n] = static_cast<uint16_t>(lid);
        state[n] = 0;
      }
      return state[n];
    };
    // Resolves switch `start` for this LID: follows the LFT until a delivery, a failure or a
    // switch already resolved, then writes the outcome back along the walk.
    auto resolve = [&](NodeId start) {
      walk.clear();
      NodeId at = start;
      uint8_t outcome = 0;
      uint16_t tail_hops = 0;
      bool loop = false;
      while (true) {
        if (known(at) == 2 || known(at) == 3) {
          outcome = known(at);
          tail_hops = dist[at];
          break;
        }
        if (known(at) == 1) {
          outcome = 3;
          loop = true;
          break;
        }
        known(at) = 1;
        walk.push_back(at);
        const SmNode& sw = subnet.node(at);
        if (owner->node == at) {  // the switch's own port 0
          outcome = 2;
          tail_hops = 0;
          walk.pop_back();
          known(at) = 2;
          dist[at] = 0;
          break;
        }
        const uint8_t out = lid < sw.lft.size() ? sw.lft[lid] : kNoPort;
        const Hop* hop = out > sw.num_ports ? nullptr : &hops[first_hop[at] + out];
        if (out == kNoPort || out == 0 || hop == nullptr || hop->peer == kNoNode) {
          problem(
              "switch " + sw.description + ": LID " + std::to_string(lid) +
              (out == kNoPort ? " has no LFT entry" : " goes to dead port " + std::to_string(out)));
          outcome = 3;
          break;
        }
        const NodeId next = hop->peer;
        if (!hop->to_switch) {
          if (next == owner->node && hop->peer_port == owner->port) {
            outcome = 2;
            tail_hops = 0;
          } else {
            problem("switch " + sw.description + ": LID " + std::to_string(lid) + " delivered to " +
                    subnet.node(next).description + ", not its owner");
            outcome = 3;
          }
          // The delivery hop to a CA is not a switch-to-switch hop.
          known(at) = outcome;
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
        known(*it) = outcome;
        dist[*it] = tail_hops;
      }
      return outcome == 2;
    };

    // Every source behind one entry switch shares its walk: count them together.
    for (const auto& [entry, sources] : by_entry) {
      uint64_t n = sources;
      if (entry == owner_entry) --n;  // the owner does not route to itself
      if (n == 0) continue;
      report.pairs += n;
      if (known(entry) != 2 && known(entry) != 3) resolve(entry);
      if (known(entry) == 2) {
        report.max_hops = std::max<unsigned>(report.max_hops, dist[entry]);
      } else {
        report.holes += n;
      }
    }
    for (const EndPort& src : stranded) {
      if (src.node == owner->node && src.port == owner->port) continue;
      ++report.pairs;
      const SmPort& port = subnet.node(src.node).ports[src.port];
      if (port.linked() && port.peer == owner->node && port.peer_port == owner->port) continue;
      ++report.holes;
      problem(subnet.node(src.node).description + " port " + std::to_string(src.port) +
              " reaches no switch");
    }
  }
  return report;
}

namespace {

// The switch behind `port` of switch `sw`, if the LFT entry leads to one.
NodeId NextSwitch(const Subnet& subnet, const SmNode& sw, uint8_t port) {
  if (port == 0 || port == kNoPort || port > sw.num_ports || !sw.ports[port].linked())
    return kNoNode;
  const NodeId next = sw.ports[port].peer;
  return subnet.node(next).is_switch() ? next : kNoNode;
}

}  // namespace

CreditLoopReport CheckCreditLoops(const Subnet& subnet, bool ca_lids_only) {
  CreditLoopReport report;
  // Channel number = base[switch node] + egress port.
  std::vector<uint32_t> base(subnet.nodes().size(), 0);
  uint32_t channels = 0;
  for (NodeId n = 0; n < subnet.nodes().size(); ++n) {
    base[n] = channels;
    if (subnet.node(n).is_switch()) channels += subnet.node(n).num_ports + 1u;
  }
  std::unordered_set<uint64_t> seen;
  std::vector<std::vector<uint32_t>> depends(channels);
  std::vector<bool> used(channels, false);
  const uint16_t top = subnet.TopLid();
  for (NodeId n = 0; n < subnet.nodes().size(); ++n) {
    const SmNode& sw = subnet.node(n);
    if (!sw.is_switch()) continue;
    for (unsigned lid = 1; lid <= top && lid < sw.lft.size(); ++lid) {
      if (ca_lids_only) {
        const auto owner = subnet.Owner(static_cast<uint16_t>(lid));
        if (!owner || subnet.node(owner->node).is_switch()) continue;
      }
      const uint8_t out = sw.lft[lid];
      const NodeId next = NextSwitch(subnet, sw, out);
      if (next == kNoNode) continue;
      const uint32_t a = base[n] + out;
      used[a] = true;
      const SmNode& nsw = subnet.node(next);
      if (lid >= nsw.lft.size()) continue;
      const uint8_t out2 = nsw.lft[lid];
      if (NextSwitch(subnet, nsw, out2) == kNoNode) continue;
      const uint32_t b = base[next] + out2;
      if (seen.insert((uint64_t{a} << 32) | b).second) depends[a].push_back(b);
    }
  }
  report.dependencies = seen.size();
  report.channels = static_cast<uint64_t>(std::count(used.begin(), used.end(), true));

  // Iterative depth-first search: a grey channel met again closes a cycle.
  std::vector<uint8_t> colour(channels, 0);  // 0 white, 1 grey (on the stack), 2 black
  std::vector<std::pair<uint32_t, std::size_t>> stack;
  auto describe = [&](uint32_t channel) {
    NodeId n =
        static_cast<NodeId>(std::upper_bound(base.begin(), base.end(), channel) - base.begin() - 1);
    while (!subnet.node(n).is_switch()) --n;  // CAs share their successor's base
    return subnet.node(n).description + "/" + std::to_string(channel - base[n]);
  };
  for (uint32_t start = 0; start < channels && !report.cycle; ++start) {
    if (colour[start] != 0 || depends[start].empty()) continue;
    stack.push_back({start, 0});
    colour[start] = 1;
    while (!stack.empty() && !report.cycle) {
      auto& [channel, next_index] = stack.back();
      if (next_index == depends[channel].size()) {
        colour[channel] = 2;
        stack.pop_back();
        continue;
      }
      const uint32_t to = depends[channel][next_index++];
      if (colour[to] == 1) {
        report.cycle = true;
        auto it = std::find_if(stack.begin(), stack.end(),
                               [&](const auto& frame) { return frame.first == to; });
        for (; it != stack.end(); ++it) report.example += describe(it->first) + " -> ";
        report.example += describe(to);
      } else if (colour[to] == 0) {
        colour[to] = 1;
        stack.push_back({to, 0});
      }
    }
    stack.clear();
  }
  return report;
}

}  // namespace softib::sm
