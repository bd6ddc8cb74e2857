// Up/down routing (OpenSM's updn): rank the switches from the roots, climb then descend.
// Also the engine selection.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <limits>

#include "routing_internal.h"
#include "softib/sm/routing.h"

namespace softib::sm {
namespace detail {

void RouteUpDown(Subnet& subnet, const SwitchGraph& g, const UpDownPlan& plan,
                 RoutingReport& report) {
  const std::size_t count = g.switches.size();
  std::vector<std::vector<uint32_t>> load = EmptyLoad(subnet, g);
  const std::vector<std::vector<Target>> by_switch = TargetsBySwitch(subnet, g);
  // Switch numbers from the top (smallest key) down: a climb always reaches a switch that
  // comes earlier, so the route lengths of climbing switches fill in in this order.
  std::vector<uint32_t> top_down(count);
  for (uint32_t s = 0; s < count; ++s) top_down[s] = s;
  std::sort(top_down.begin(), top_down.end(),
            [&](uint32_t a, uint32_t b) { return plan.key[a] < plan.key[b]; });
  auto is_up = [&](uint32_t from, uint32_t to) { return plan.key[to] < plan.key[from]; };

  std::vector<uint16_t> down(count);   // down-only hops to the target
  std::vector<uint16_t> route(count);  // hops of the route taken
  std::vector<uint16_t> hops;          // unrestricted hops, for switch LIDs without a route
  std::deque<uint32_t> todo;
  for (uint32_t t = 0; t < count; ++t) {
    if (by_switch[t].empty()) continue;
    // Down-only distances: breadth-first from the target against the direction of travel;
    // s reaches x by descending when x is below s.
    down.assign(count, kUnreachable);
    down[t] = 0;
    todo.assign(1, t);
    while (!todo.empty()) {
      const uint32_t x = todo.front();
      todo.pop_front();
      for (const auto& [port, s] : g.edges[x]) {
        if (down[s] != kUnreachable || !is_up(x, s)) continue;  // s must be above x
        down[s] = static_cast<uint16_t>(down[x] + 1);
        todo.push_back(s);
      }
    }
    HopsTo(g, t, hops);
    for (uint32_t s : top_down) {
      route[s] = down[s];
      if (route[s] != kUnreachable) continue;
      for (const auto& [port, n] : g.edges[s])
        if (is_up(s, n) && route[n] != kUnreachable && route[n] + 1 < route[s])
          route[s] = static_cast<uint16_t>(route[n] + 1);
    }

    for (const Target& target : by_switch[t]) {
      const SmPort& dest = subnet.node(target.end.node).ports[target.end.port];
      for (unsigned offset = 0; offset < (1u << dest.lmc); ++offset) {
        const uint16_t lid = static_cast<uint16_t>(dest.lid + offset);
        ++report.lids;
        if (plan.before_lid) plan.before_lid(t, lid);
        for (uint32_t s = 0; s < count; ++s) {
          SmNode& sw = subnet.node(g.switches[s]);
          if (s == t) {
            sw.lft[lid] = target.final_port;
            continue;
          }
          if (route[s] == kUnreachable) {
            // No common ancestor (two roots of equal rank, say). A switch's own LID carries
            // management traffic only, so it may take a plain shortest path; a CA's may not.
            if (target.final_port != 0 || hops[s] == kUnreachable) {
              ++report.unreachable;
              continue;
            }
            uint8_t best = kNoPort;
            for (const auto& [port, n] : g.edges[s])
              if (hops[n] + 1 == hops[s] && (best == kNoPort || load[s][port] < load[s][best]))
                best = port;
            sw.lft[lid] = best;
            ++load[s][best];
            ++report.unrestricted;
            continue;
          }
          const bool descend = down[s] != kUnreachable;
          uint8_t best = kNoPort;
          int best_preference = 0;
          for (const auto& [port, n] : g.edges[s]) {
            const bool up = is_up(s, n);
            if (descend ? (up || down[n] + 1 != down[s]) : (!up || route[n] + 1 != route[s]))
              continue;
            const int preference = plan.prefer ? plan.prefer(s, {n, port, up}) : 0;
            if (best == kNoPort || preference < best_preference ||
                (preference == best_preference && load[s][port] < load[s][best])) {
              best = port;
              best_preference = preference;
            }
          }
          sw.lft[lid] = best;
          if (best != kNoPort) ++load[s][best];
        }
      }
    }
  }
}

}  // namespace detail

using namespace detail;

namespace {

// Without a root list: the switches with no CA (spines of a tree), or, when every switch
// has CAs (a torus), the switch closest to all others (lowest GUID on a tie).
std::vector<uint32_t> AutomaticRoots(const Subnet& subnet, const SwitchGraph& g) {
  std::vector<uint32_t> roots;
  std::vector<bool> has_ca(g.switches.size(), false);
  for (uint32_t s = 0; s < g.switches.size(); ++s) {
    const SmNode& sw = subnet.node(g.switches[s]);
    for (uint8_t p = 1; p <= sw.num_ports; ++p)
      if (sw.ports[p].linked() && !subnet.node(sw.ports[p].peer).is_switch()) has_ca[s] = true;
  }
  const bool some_ca = std::count(has_ca.begin(), has_ca.end(), true) > 0;
  for (uint32_t s = 0; s < g.switches.size(); ++s)
    if (!has_ca[s] && some_ca) roots.push_back(s);
  if (!roots.empty()) return roots;
  std::vector<uint16_t> hops;
  uint32_t best = 0;
  unsigned best_reach = std::numeric_limits<unsigned>::max();
  for (uint32_t s = 0; s < g.switches.size(); ++s) {
    HopsTo(g, s, hops);
    const unsigned reach = *std::max_element(hops.begin(), hops.end());
    const uint64_t guid = subnet.node(g.switches[s]).guid;
    if (reach < best_reach || (reach == best_reach && guid < subnet.node(g.switches[best]).guid)) {
      best = s;
      best_reach = reach;
    }
  }
  if (!g.switches.empty()) roots.push_back(best);
  return roots;
}

}  // namespace

RoutingReport ComputeUpDownRoutes(Subnet& subnet, const std::vector<uint64_t>& root_guids) {
  RoutingReport report;
  const SwitchGraph g = BuildSwitchGraph(subnet);
  std::vector<uint32_t> roots;
  for (uint64_t guid : root_guids) {
    const auto node = subnet.Find(guid);
    if (!node || !subnet.node(*node).is_switch()) {
      char text[96];
      std::snprintf(text, sizeof text, "root GUID 0x%016llx is not a switch of this subnet",
                    static_cast<unsigned long long>(guid));
      report.error = text;
      return report;
    }
    roots.push_back(g.number_of[*node]);
  }
  if (roots.empty()) roots = AutomaticRoots(subnet, g);
  if (!PrepareLfts(subnet, g, report)) return report;

  // Rank = hops from the nearest root; the key orders by rank, then GUID.
  std::vector<uint16_t> rank(g.switches.size(), kUnreachable);
  std::deque<uint32_t> todo;
  for (uint32_t r : roots) {
    rank[r] = 0;
    todo.push_back(r);
  }
  while (!todo.empty()) {
    const uint32_t s = todo.front();
    todo.pop_front();
    for (const auto& [port, n] : g.edges[s]) {
      if (rank[n] != kUnreachable) continue;
      rank[n] = static_cast<uint16_t>(rank[s] + 1);
      todo.push_back(n);
    }
  }
  std::vector<uint32_t> order(g.switches.size());
  for (uint32_t s = 0; s < order.size(); ++s) order[s] = s;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (rank[a] != rank[b]) return rank[a] < rank[b];
    return subnet.node(g.switches[a]).guid < subnet.node(g.switches[b]).guid;
  });
  UpDownPlan plan;
  plan.key.resize(order.size());
  for (uint32_t i = 0; i < order.size(); ++i) plan.key[order[i]] = i;
  RouteUpDown(subnet, g, plan, report);
  return report;
}

RoutingReport ComputeRoutes(Subnet& subnet, const RoutingOptions& options) {
  switch (options.engine) {
    case RoutingEngine::kMinHop:
      return ComputeMinHopRoutes(subnet);
    case RoutingEngine::kUpDown:
      return ComputeUpDownRoutes(subnet, options.root_guids);
    case RoutingEngine::kFatTree:
      return ComputeFatTreeRoutes(subnet);
  }
  return {};
}

const char* ToString(RoutingEngine engine) {
  switch (engine) {
    case RoutingEngine::kMinHop:
      return "minhop";
    case RoutingEngine::kUpDown:
      return "updn";
    case RoutingEngine::kFatTree:
      return "ftree";
  }
  return "?";
}

bool ParseRoutingEngine(const std::string& text, RoutingEngine* engine) {
  for (RoutingEngine e : {RoutingEngine::kMinHop, RoutingEngine::kUpDown, RoutingEngine::kFatTree})
    if (text == ToString(e)) {
      *engine = e;
      return true;
    }
  return false;
}

bool LoadRootGuids(const std::string& path, std::vector<uint64_t>* guids, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = path + ": cannot open";
    return false;
  }
  std::string line;
  unsigned number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    const auto last = line.find_last_not_of(" \t\r");
    const std::string word = line.substr(first, last - first + 1);
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(word.c_str(), &end, 0);
    if (errno || *end || v == 0) {
      *error = path + ":" + std::to_string(number) + ": not a GUID: " + word;
      return false;
    }
    guids->push_back(v);
  }
  return true;
}

}  // namespace softib::sm
