// Pieces the routing engines share: the switch graph, LFT preparation and the destination
// LIDs grouped by the switch they hang off. Internal to softib_sm.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "softib/sm/routing.h"
#include "softib/sm/subnet.h"

namespace softib::sm::detail {

inline constexpr uint16_t kUnreachable = 0xFFFF;

struct SwitchGraph {
  std::vector<NodeId> switches;     // switch number -> node
  std::vector<uint32_t> number_of;  // node -> switch number (or ~0)
  // Per switch: (port, neighbour switch number) for every port cabled to a switch.
  std::vector<std::vector<std::pair<uint8_t, uint32_t>>> edges;
};

SwitchGraph BuildSwitchGraph(const Subnet& subnet);

// Hops from every switch to `target` over any link (breadth-first from the target).
void HopsTo(const SwitchGraph& g, uint32_t target, std::vector<uint16_t>& hops);

// Sizes every switch's LFT to TopLid()+1, all kNoPort. False (report.error set) when a
// switch cannot hold that many entries.
bool PrepareLfts(Subnet& subnet, const SwitchGraph& g, RoutingReport& report);

// A destination end port and the port that reaches it on its attachment switch (0: the
// switch itself).
struct Target {
  EndPort end;
  uint8_t final_port = 0;
};
// Per switch number: the end ports with a LID attached to it.
std::vector<std::vector<Target>> TargetsBySwitch(const Subnet& subnet, const SwitchGraph& g);

// Per switch number, per port: destination LIDs routed through it so far (balancing).
std::vector<std::vector<uint32_t>> EmptyLoad(const Subnet& subnet, const SwitchGraph& g);

// The up/down core (updn and ftree): `key` orders the switches strictly (smaller = higher
// up); a link s->n goes up when key[n] < key[s]. Every switch routes a destination on a
// shortest legal path (up*, then down*): switches with a down-only path take it (so a
// packet that has turned down never needs to climb again), the others climb. Among the
// equal candidates `prefer` (lower first; may be empty) and then the port load decide.
struct UpDownCandidate {
  uint32_t next;  // neighbour switch number
  uint8_t port;
  bool up;
};
struct UpDownPlan {
  std::vector<uint64_t> key;  // per switch number
  // Optional tie-break before the load (lower wins).
  std::function<int(uint32_t sw, const UpDownCandidate& c)> prefer;
  // Optional: called before each destination LID is routed (ftree picks its spine there).
  std::function<void(uint32_t target_switch, uint16_t lid)> before_lid;
};
void RouteUpDown(Subnet& subnet, const SwitchGraph& g, const UpDownPlan& plan,
                 RoutingReport& report);

}  // namespace softib::sm::detail
