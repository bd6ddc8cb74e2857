// Min-hop routing and the route checker on generated fabrics (no I/O): every pair routed,
// paths of minimal length, balanced uplinks, and the checker catching holes, loops and
// misdeliveries planted in the tables.
#include <gtest/gtest.h>

#include <map>

#include "fabric/topology/generators.h"
#include "softib/sm/lids.h"
#include "softib/sm/routing.h"
#include "subnet_fixtures.h"

namespace softib::sm {
namespace {

using testing::FatTree2;
using testing::Routed;

uint64_t EndPortCount(const Subnet& s) { return s.EndPorts().size(); }

TEST(Routing, DefaultTopologyEveryPairRouted) {
  const Subnet subnet = Routed(fabric::DefaultTopology());
  const RouteCheckReport check = CheckRoutes(subnet);
  EXPECT_TRUE(check.ok()) << (check.problems.empty() ? "" : check.problems[0]);
  const uint64_t ends = EndPortCount(subnet);  // 3 switches + 4 HCA ports
  EXPECT_EQ(ends, 7u);
  EXPECT_EQ(check.pairs, ends * (ends - 1));
  EXPECT_EQ(check.max_hops, 2u);  // leaf -> spine -> leaf
  for (const SmNode& n : subnet.nodes()) {
    if (n.is_switch()) {
      EXPECT_EQ(n.lft.size(), 8u);  // LIDs 1..7 and the unused 0
    }
  }
}

TEST(Routing, TwoLevelFatTreeMinHopAndBalanced) {
  const fabric::Topology topology = FatTree2(4, 8, 4);
  const Subnet subnet = Routed(topology);
  const RouteCheckReport check = CheckRoutes(subnet);
  ASSERT_TRUE(check.ok()) << check.problems[0];
  EXPECT_EQ(check.max_hops, 2u);
  // A leaf spreads the 24 hosts of the other leaves evenly over its 4 uplinks (6 each),
  // and each of the 4 spine LIDs goes up its own direct link.
  const SmNode& leaf = subnet.node(4);  // node order: spines, then leaves
  ASSERT_TRUE(leaf.is_switch());
  std::map<uint8_t, unsigned> per_port;
  for (unsigned lid = 1; lid < leaf.lft.size(); ++lid) {
    const auto owner = subnet.Owner(lid);
    ASSERT_TRUE(owner);
    const SmNode& dest = subnet.node(owner->node);
    if (dest.is_switch() || leaf.ports[leaf.lft[lid]].peer == owner->node) continue;
    if (!dest.is_switch() && dest.ports[owner->port].peer == 4) continue;  // own hosts
    ++per_port[leaf.lft[lid]];
  }
  // Other leaves' hosts (24) plus the other 3 leaves' switch LIDs... only hosts counted.
  ASSERT_EQ(per_port.size(), 4u);
  for (const auto& [port, count] : per_port) EXPECT_EQ(count, 6u) << "port " << int(port);
}

TEST(Routing, ParallelUplinksAndLmcSpread) {
  const Subnet subnet = Routed(FatTree2(2, 2, 1, 2), 1);
  const RouteCheckReport check = CheckRoutes(subnet);
  ASSERT_TRUE(check.ok()) << check.problems[0];
  // LMC 1: each host has 2 LIDs; from the other leaf they leave on the two parallel
  // uplinks (ports 3 and 4), one LID each.
  const SmNode& leaf0 = subnet.node(1);
  const SmNode& remote_host = subnet.node(subnet.nodes().size() - 1);  // on leaf 1
  const uint16_t base = remote_host.ports[1].lid;
  EXPECT_NE(leaf0.lft[base], leaf0.lft[base + 1]);
  EXPECT_EQ(check.pairs, EndPortCount(subnet) * (3 + 4 * 2) - (3 + 4 * 2));
}

TEST(Routing, ThreeLevelFatTreeAndTorus) {
  fabric::FatTreeShape shape;
  shape.levels = 3;
  shape.pods = 2;
  shape.leaves = 4;
  shape.aggs_per_pod = 2;
  shape.spines = 2;
  shape.hosts_per_leaf = 3;
  const Subnet tree = Routed(*fabric::GenerateFatTree(shape).topology);
  RouteCheckReport check = CheckRoutes(tree);
  EXPECT_TRUE(check.ok());
  EXPECT_EQ(check.max_hops, 4u);  // leaf, agg, core, agg, leaf

  fabric::TorusShape torus;
  torus.x = 4;
  torus.y = 3;
  torus.hosts_per_switch = 2;
  const Subnet t = Routed(*fabric::GenerateTorus(torus).topology);
  check = CheckRoutes(t);
  EXPECT_TRUE(check.ok());
  EXPECT_EQ(check.max_hops, 3u);  // 2 in x (ring of 4) + 1 in y (ring of 3)
}

TEST(RouteCheck, FindsHoleLoopAndMisdelivery) {
  Subnet subnet = Routed(fabric::DefaultTopology());
  const uint64_t pairs = CheckRoutes(subnet).pairs;
  // Node order: spine (0), leaf-01 (1), leaf-02 (2), then hosts.
  const uint16_t spine_lid = subnet.node(0).ports[0].lid;
  const uint16_t host = subnet.node(6).ports[1].lid;  // a host on leaf-02

  Subnet hole = subnet;
  hole.node(1).lft[spine_lid] = kNoPort;
  RouteCheckReport check = CheckRoutes(hole);
  EXPECT_FALSE(check.ok());
  // Leaf-01 itself and its two hosts lose the spine.
  EXPECT_EQ(check.holes, 3u);
  EXPECT_EQ(check.loops, 0u);
  EXPECT_EQ(check.pairs, pairs);

  Subnet loop = subnet;
  // The spine sends the host's LID back to leaf-01, which sends it up again.
  const uint8_t spine_to_leaf1 = [&] {
    for (uint8_t p = 1; p <= loop.node(0).num_ports; ++p)
      if (loop.node(0).ports[p].peer == 1) return p;
    return uint8_t{0};
  }();
  loop.node(0).lft[host] = spine_to_leaf1;
  check = CheckRoutes(loop);
  EXPECT_EQ(check.loops, 1u);
  EXPECT_GT(check.holes, 0u);

  Subnet wrong = subnet;
  // Leaf-02 delivers the host's LID to its other host.
  const uint8_t to_host = wrong.node(2).lft[host];
  wrong.node(2).lft[host] = to_host == 1 ? 2 : 1;
  check = CheckRoutes(wrong);
  EXPECT_FALSE(check.ok());
  ASSERT_FALSE(check.problems.empty());
  EXPECT_NE(check.problems[0].find("not its owner"), std::string::npos) << check.problems[0];
}

TEST(Routing, LargeFatTreeChecksEveryPair) {
  const Subnet subnet = Routed(*fabric::MakePreset("ft36"));
  const RouteCheckReport check = CheckRoutes(subnet);
  ASSERT_TRUE(check.ok());
  EXPECT_EQ(check.pairs, 612ull * 611ull);
  EXPECT_EQ(check.max_hops, 2u);
}

}  // namespace
}  // namespace softib::sm
