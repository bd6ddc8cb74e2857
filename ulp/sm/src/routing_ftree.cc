// Fat-tree routing: levels from the leaves (the switches with CAs) up, one top switch per
// destination LID in turn over the top switches above its leaf, and every switch climbing
// towards that top switch unless it can already descend to the destination.
#include <algorithm>
#include <deque>

#include "routing_internal.h"
#include "softib/sm/routing.h"

namespace softib::sm {

using namespace detail;

RoutingReport ComputeFatTreeRoutes(Subnet& subnet) {
  RoutingReport report;
  const SwitchGraph g = BuildSwitchGraph(subnet);
  const std::size_t count = g.switches.size();

  // Leaves and levels.
  std::vector<uint16_t> level(count, kUnreachable);
  std::deque<uint32_t> todo;
  for (uint32_t s = 0; s < count; ++s) {
    const SmNode& sw = subnet.node(g.switches[s]);
    for (uint8_t p = 1; p <= sw.num_ports; ++p)
      if (sw.ports[p].linked() && !subnet.node(sw.ports[p].peer).is_switch()) {
        level[s] = 0;
        todo.push_back(s);
        break;
      }
  }
  if (todo.empty()) {
    report.error = "not a fat tree: no switch has a CA";
    return report;
  }
  while (!todo.empty()) {
    const uint32_t s = todo.front();
    todo.pop_front();
    for (const auto& [port, n] : g.edges[s]) {
      if (level[n] != kUnreachable) continue;
      level[n] = static_cast<uint16_t>(level[s] + 1);
      todo.push_back(n);
    }
  }
  uint16_t top = 0;
  for (uint32_t s = 0; s < count; ++s) {
    const SmNode& sw = subnet.node(g.switches[s]);
    if (level[s] == kUnreachable) {
      report.error = "not a fat tree: switch " + sw.description + " is cut off from the leaves";
      return report;
    }
    top = std::max(top, level[s]);
    for (const auto& [port, n] : g.edges[s]) {
      if (level[n] + 1 == level[s] || level[s] + 1 == level[n]) continue;
      report.error = "not a fat tree: " + sw.description + " port " + std::to_string(port) +
                     " joins level " + std::to_string(level[s]) + " to level " +
                     std::to_string(level[n]) + " (" + subnet.node(g.switches[n]).description + ")";
      return report;
    }
  }
  if (top == 0) {
    report.error = "not a fat tree: a single level of switches";
    return report;
  }
  if (!PrepareLfts(subnet, g, report)) return report;

  // The top switches, and for every switch the top switches it reaches by climbing.
  std::vector<uint32_t> tops;
  for (uint32_t s = 0; s < count; ++s)
    if (level[s] == top) tops.push_back(s);
  std::vector<uint32_t> top_index(count, ~0u);
  for (uint32_t i = 0; i < tops.size(); ++i) top_index[tops[i]] = i;
  std::vector<uint32_t> by_level(count);
  for (uint32_t s = 0; s < count; ++s) by_level[s] = s;
  std::sort(by_level.begin(), by_level.end(),
            [&](uint32_t a, uint32_t b) { return level[a] > level[b]; });
  std::vector<std::vector<bool>> reaches(count, std::vector<bool>(tops.size(), false));
  for (uint32_t s : by_level) {
    if (level[s] == top) reaches[s][top_index[s]] = true;
    for (const auto& [port, n] : g.edges[s])
      if (level[n] == level[s] + 1)
        for (uint32_t i = 0; i < tops.size(); ++i)
          if (reaches[n][i]) reaches[s][i] = true;
  }

  UpDownPlan plan;
  plan.key.resize(count);
  std::vector<uint32_t> order(count);
  for (uint32_t s = 0; s < count; ++s) order[s] = s;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (level[a] != level[b]) return level[a] > level[b];
    return subnet.node(g.switches[a]).guid < subnet.node(g.switches[b]).guid;
  });
  for (uint32_t i = 0; i < count; ++i) plan.key[order[i]] = i;

  // The top switch of the LID being routed: the one above its leaf that has carried the
  // fewest of this leaf's CA LIDs so far (then the fewest overall).
  uint32_t chosen = 0;
  std::vector<std::vector<uint32_t>> per_leaf(count, std::vector<uint32_t>(tops.size(), 0));
  std::vector<uint32_t> overall(tops.size(), 0);
  plan.before_lid = [&](uint32_t t, uint16_t lid) {
    uint32_t best = ~0u;
    for (uint32_t i = 0; i < tops.size(); ++i) {
      if (!reaches[t][i]) continue;
      if (best == ~0u || per_leaf[t][i] < per_leaf[t][best] ||
          (per_leaf[t][i] == per_leaf[t][best] && overall[i] < overall[best]))
        best = i;
    }
    chosen = best;
    const auto owner = subnet.Owner(lid);
    const bool ca = owner && !subnet.node(owner->node).is_switch();
    if (best != ~0u && ca) {
      ++per_leaf[t][best];
      ++overall[best];
    }
  };
  plan.prefer = [&](uint32_t, const UpDownCandidate& c) {
    if (!c.up || chosen == ~0u) return 0;
    return reaches[c.next][chosen] ? 0 : 1;
  };
  RouteUpDown(subnet, g, plan, report);
  return report;
}

}  // namespace softib::sm
