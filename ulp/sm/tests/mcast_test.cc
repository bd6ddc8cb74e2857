// Multicast trees and MFT blocks (no I/O): on the default fabric, 2- and 3-level fat trees
// (parallel uplinks) and a torus (rings), a packet of the group sent by any member and
// replicated as the switches' masks say reaches every other member exactly once, no switch
// twice and no non-member; the MFT blocks written are exactly the ones that changed.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <random>

#include "fabric/topology/generators.h"
#include "softib/sm/lids.h"
#include "softib/sm/mcast_routing.h"
#include "subnet_fixtures.h"

namespace softib::sm {
namespace {

using testing::WithLids;

// Floods one packet from `from` through the tree's masks. Returns the end ports it reached
// (with counts); `switch_visits` counts how often each switch received it.
std::map<EndPort, unsigned> Flood(const Subnet& subnet, const McastTree& tree, EndPort from,
                                  std::map<NodeId, unsigned>* switch_visits) {
  std::map<EndPort, unsigned> reached;
  std::deque<std::pair<NodeId, uint8_t>> todo;  // (switch, ingress port)
  const SmNode& first = subnet.node(from.node);
  if (first.is_switch()) {
    todo.push_back({from.node, 0});
  } else {
    const SmPort& port = first.ports[from.port];
    todo.push_back({port.peer, port.peer_port});
  }
  while (!todo.empty() && todo.size() < 100000) {
    const auto [sw, ingress] = todo.front();
    todo.pop_front();
    if (++(*switch_visits)[sw] > 1) continue;  // a loop or a duplicate: counted, not followed
    const auto it = tree.masks.find(sw);
    if (it == tree.masks.end()) continue;
    for (unsigned p = 0; p <= subnet.node(sw).num_ports; ++p) {
      if (!it->second.test(p) || p == ingress) continue;
      if (p == 0) {
        if (!(sw == from.node && ingress == 0)) ++reached[{sw, 0}];
        continue;
      }
      const SmPort& port = subnet.node(sw).ports[p];
      if (!port.linked()) continue;
      if (subnet.node(port.peer).is_switch()) {
        todo.push_back({port.peer, port.peer_port});
      } else {
        ++reached[{port.peer, port.peer_port}];
      }
    }
  }
  return reached;
}

// Every member's packet reaches each other member once and nothing else; no switch twice.
void ExpectTreeDelivers(const Subnet& subnet, const std::vector<EndPort>& members) {
  const McastTree tree = ComputeMcastTree(subnet, members);
  ASSERT_TRUE(tree.ok()) << tree.error;
  ASSERT_NE(tree.root, kNoNode);
  for (const EndPort& m : members) {
    std::map<NodeId, unsigned> visits;
    const auto reached = Flood(subnet, tree, m, &visits);
    for (const auto& [sw, n] : visits) EXPECT_EQ(n, 1u) << "switch " << sw << " twice";
    std::map<EndPort, unsigned> want;
    for (const EndPort& other : members)
      if (!(other == m)) want[other] = 1;
    EXPECT_EQ(reached, want) << "from node " << m.node << " port " << int(m.port);
  }
}

std::vector<EndPort> CaPorts(const Subnet& subnet) {
  std::vector<EndPort> out;
  for (const EndPort& e : subnet.EndPorts())
    if (!subnet.node(e.node).is_switch()) out.push_back(e);
  return out;
}

// About a third of the end ports (CA ports and switches' port 0), by seed.
std::vector<EndPort> SomeMembers(const Subnet& subnet, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<EndPort> out;
  for (const EndPort& e : subnet.EndPorts())
    if (rng() % 3 == 0) out.push_back(e);
  return out;
}

void ExpectAllAndSubsetsDelivered(const fabric::Topology& topology) {
  const Subnet subnet = WithLids(topology);
  ExpectTreeDelivers(subnet, CaPorts(subnet));
  for (unsigned seed = 1; seed <= 5; ++seed) ExpectTreeDelivers(subnet, SomeMembers(subnet, seed));
}

TEST(McastTree, DefaultFabricAllHostsAndSubsets) {
  const Subnet subnet = WithLids(fabric::DefaultTopology());
  ExpectTreeDelivers(subnet, CaPorts(subnet));
  const auto cas = CaPorts(subnet);
  ExpectTreeDelivers(subnet, {cas[0], cas[1]});  // one leaf: the spine stays out
  const McastTree one_leaf = ComputeMcastTree(subnet, {cas[0], cas[1]});
  EXPECT_EQ(one_leaf.masks.size(), 1u);
  ExpectTreeDelivers(subnet, {cas[0], cas[3]});
  ExpectTreeDelivers(subnet, {cas[2]});  // a lone member: nothing to deliver
  EXPECT_TRUE(ComputeMcastTree(subnet, {}).masks.empty());
}

TEST(McastTree, FatTreesWithParallelUplinks) {
  fabric::FatTreeShape shape;
  shape.leaves = 6;
  shape.hosts_per_leaf = 4;
  shape.spines = 3;
  shape.uplinks = 2;  // two cables from every leaf to every spine
  ExpectAllAndSubsetsDelivered(*fabric::GenerateFatTree(shape).topology);

  fabric::FatTreeShape three;
  three.levels = 3;
  three.pods = 2;
  three.leaves = 4;
  three.aggs_per_pod = 2;
  three.spines = 4;
  three.hosts_per_leaf = 4;
  ExpectAllAndSubsetsDelivered(*fabric::GenerateFatTree(three).topology);
}

TEST(McastTree, TorusRingsCloseNoLoop) {
  fabric::TorusShape torus;
  torus.x = 4;
  torus.y = 4;
  torus.hosts_per_switch = 2;
  ExpectAllAndSubsetsDelivered(*fabric::GenerateTorus(torus).topology);
}

TEST(McastTree, RootIsCentral) {
  // Members behind both leaves of the default fabric: the spine is the root.
  const Subnet subnet = WithLids(fabric::DefaultTopology());
  const McastTree tree = ComputeMcastTree(subnet, CaPorts(subnet));
  EXPECT_EQ(subnet.node(tree.root).description, "spine-01");
  EXPECT_EQ(tree.masks.size(), 3u);
}

// MFT blocks: 32 MLIDs per block, 16 ports per position; modifier = position << 28 | block.
TEST(MftBlocks, OnlyChangedBlocksAndPositions) {
  std::map<uint16_t, PortMask> have, want;
  want[0xC000] = PortMask{}.set(1).set(3);
  want[0xC021] = PortMask{}.set(2).set(17);  // block 1, both positions
  auto blocks = MftBlocksToWrite(20, have, want, false);
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0].modifier, 0x00000000u);
  EXPECT_EQ(blocks[0].masks[0], 0x000Au);  // ports 1 and 3
  EXPECT_EQ(blocks[1].modifier, 0x00000001u);
  EXPECT_EQ(blocks[1].masks[1], 0x0004u);  // port 2
  EXPECT_EQ(blocks[2].modifier, 0x10000001u);
  EXPECT_EQ(blocks[2].masks[1], 0x0002u);  // port 17 = position 1, bit 1

  // Programmed as wanted: nothing to write; a heavy sweep writes every block in use.
  EXPECT_TRUE(MftBlocksToWrite(20, want, want, false).empty());
  EXPECT_EQ(MftBlocksToWrite(20, want, want, true).size(), 4u);  // 2 blocks x 2 positions

  // A port joins 0xC021 in position 0: one block; a group goes away: its block is cleared.
  auto more = want;
  more[0xC021].set(5);
  blocks = MftBlocksToWrite(20, want, more, false);
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].modifier, 0x00000001u);
  EXPECT_EQ(blocks[0].masks[1], 0x0024u);
  auto fewer = want;
  fewer.erase(0xC000);
  blocks = MftBlocksToWrite(20, want, fewer, false);
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].modifier, 0u);
  EXPECT_EQ(blocks[0].masks[0], 0u);
}

}  // namespace
}  // namespace softib::sm
