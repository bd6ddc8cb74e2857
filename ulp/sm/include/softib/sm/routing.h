// Unicast routing: the engines (min-hop, up/down, fat-tree) that fill the LFTs, the route
// checker that walks every (source end port, destination LID) pair through them, and the
// credit-loop check over the channel dependencies the routes create.
//
// Min-hop: hop counts between all switches by breadth-first search over the switch graph;
// for each destination LID every switch forwards on a port towards a neighbour one hop
// closer, choosing the port that so far carries the fewest destination LIDs (OpenSM's
// balancing), so that parallel paths and the LIDs of an LMC block spread over the links.
//
// Up/down (OpenSM's updn): the switches are ranked by distance from the root switches (a
// root GUID list, or else the switches without CAs, or else the graph centre), GUIDs
// breaking ties; a legal path climbs (towards lower rank) and then only descends, which
// keeps the channel dependency graph acyclic (deadlock-free on one VL) on any topology.
//
// Fat-tree (OpenSM's ftree intent): the switches with CAs are the leaves, levels rise from
// them and every switch link must join adjacent levels. Each destination LID is given one
// top switch, in turn among the top switches above its leaf (so a leaf's LIDs spread over
// the spines), and every other switch climbs towards it: a LID descends through one spine
// only, and the downward links carry equal numbers of destinations.
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
  // up/down, fat-tree: (switch, switch LID) pairs with no legal up/down path, routed on a
  // plain shortest path instead (management traffic: SMPs on VL15, which has no credits).
  unsigned unrestricted = 0;
  bool ok() const { return error.empty(); }
};

enum class RoutingEngine : uint8_t { kMinHop, kUpDown, kFatTree };
const char* ToString(RoutingEngine engine);
// "minhop", "updn", "ftree"; false for anything else.
bool ParseRoutingEngine(const std::string& text, RoutingEngine* engine);

struct RoutingOptions {
  RoutingEngine engine = RoutingEngine::kMinHop;
  std::vector<uint64_t> root_guids;  // up/down: the roots (node GUIDs); empty = automatic
};

// Needs AssignLids() first. Fill SmNode::lft (size TopLid()+1) of every switch.
RoutingReport ComputeMinHopRoutes(Subnet& subnet);
RoutingReport ComputeUpDownRoutes(Subnet& subnet, const std::vector<uint64_t>& root_guids);
// report.error when the subnet is not a fat tree.
RoutingReport ComputeFatTreeRoutes(Subnet& subnet);
RoutingReport ComputeRoutes(Subnet& subnet, const RoutingOptions& options);

// OpenSM's root GUID file: one GUID per line (0x... or decimal), '#' comments.
bool LoadRootGuids(const std::string& path, std::vector<uint64_t>* guids, std::string* error);

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

// Channels are the directed switch-to-switch links; a route that enters a switch on channel
// A and leaves on channel B makes B's credits a condition for A's (A depends on B). With
// one VL, a cycle in these dependencies can deadlock the fabric.
struct CreditLoopReport {
  uint64_t channels = 0;      // directed switch-to-switch links used by some route
  uint64_t dependencies = 0;  // distinct (A, B) pairs
  bool cycle = false;
  std::string example;  // the channels of one cycle, in words
  bool ok() const { return !cycle; }
};
// `ca_lids_only`: the routes to CA LIDs only (the data traffic), leaving out the switch LIDs
// that up/down may route unrestricted.
CreditLoopReport CheckCreditLoops(const Subnet& subnet, bool ca_lids_only = false);

}  // namespace softib::sm
