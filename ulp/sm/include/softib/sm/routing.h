// Unicast routing: min-hop LFTs, and the route checker that walks every (source end port,
// destination LID) pair through the LFTs.
//
// Min-hop: hop counts between all switches by breadth-first search over the switch graph;
// for each destination LID every switch forwards on a port towards a neighbour one hop
// closer, choosing the port that so far carries the fewest destination LIDs (OpenSM's
// balancing), so that parallel paths and the LIDs of an LMC block spread over the links.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "softib/sm/subnet.h"

namespace softib::sm {

struct RoutingReport {
  std::string error;
  unsigned switches = 0;
  unsigned lids = 0;         // destination LIDs routed
  unsigned unreachable = 0;  // (switch, LID) pairs with no path
  bool ok() const { return error.empty(); }
};

// Needs AssignLids() first. Fills SmNode::lft (size TopLid()+1) of every switch.
RoutingReport ComputeMinHopRoutes(Subnet& subnet);

struct RouteCheckReport {
  uint64_t pairs = 0;  // (source end port, destination LID) pairs walked
  uint64_t holes = 0;  // no entry, an entry to a dead port, or delivered to the wrong node
  uint64_t loops = 0;
  unsigned max_hops = 0;              // switch-to-switch links crossed on the longest path
  std::vector<std::string> problems;  // the first few, in words
  bool ok() const { return holes == 0 && loops == 0; }
};

// Walks the LFTs as they are in `subnet` (computed, or read back from the switches).
RouteCheckReport CheckRoutes(const Subnet& subnet);

}  // namespace softib::sm
