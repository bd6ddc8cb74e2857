// Up/down and fat-tree routing (no I/O): every pair routed on 2- and 3-level fat trees and
// tori, no credit loop where the engine promises none, roots from a GUID list, fat-tree
// spreading of a leaf's LIDs over the spines, and the credit-loop checker failing on
// min-hop's torus routes and on a planted cycle.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "fabric/topology/generators.h"
#include "softib/sm/lids.h"
#include "softib/sm/routing.h"
#include "subnet_fixtures.h"

namespace softib::sm {
namespace {

using testing::FatTree2;
using testing::WithLids;

fabric::Topology FatTree3() {
  fabric::FatTreeShape shape;
  shape.levels = 3;
  shape.pods = 2;
  shape.leaves = 4;
  shape.aggs_per_pod = 2;
  shape.spines = 4;
  shape.hosts_per_leaf = 4;
  return *fabric::GenerateFatTree(shape).topology;
}

fabric::Topology Torus(unsigned x, unsigned y) {
  fabric::TorusShape torus;
  torus.x = x;
  torus.y = y;
  torus.hosts_per_switch = 2;
  return *fabric::GenerateTorus(torus).topology;
}

// Routes with `options`, then checks every pair and the credit loops.
struct Outcome {
  Subnet subnet;
  RoutingReport routing;
  RouteCheckReport routes;
  CreditLoopReport credit;
};
Outcome Route(const fabric::Topology& topology, RoutingOptions options, uint8_t lmc = 0) {
  Outcome o{WithLids(topology, lmc), {}, {}, {}};
  o.routing = ComputeRoutes(o.subnet, options);
  if (o.routing.ok()) {
    o.routes = CheckRoutes(o.subnet);
    // Switch LIDs may be routed unrestricted (management traffic): check the data routes,
    // and all of them when the engine needed no exception.
    o.credit = CheckCreditLoops(o.subnet, o.routing.unrestricted != 0);
  }
  return o;
}

RoutingOptions Engine(RoutingEngine e) {
  RoutingOptions o;
  o.engine = e;
  return o;
}

uint64_t AllPairs(const Subnet& s, unsigned lids_per_ca = 1) {
  uint64_t lids = 0;
  for (const EndPort& e : s.EndPorts()) lids += s.node(e.node).is_switch() ? 1 : lids_per_ca;
  return s.EndPorts().size() * lids - lids;
}

TEST(UpDown, TwoLevelFatTreeEveryPairNoCreditLoop) {
  const Outcome o = Route(FatTree2(4, 8, 4), Engine(RoutingEngine::kUpDown));
  ASSERT_TRUE(o.routing.ok()) << o.routing.error;
  EXPECT_EQ(o.routing.unreachable, 0u);
  // Spine to spine has no up/down path (two roots): the 4 x 3 spine LIDs go unrestricted.
  EXPECT_EQ(o.routing.unrestricted, 12u);
  EXPECT_TRUE(o.routes.ok()) << o.routes.problems[0];
  EXPECT_EQ(o.routes.pairs, AllPairs(o.subnet));
  EXPECT_EQ(o.routes.max_hops, 2u);  // the spines are the automatic roots: minimal
  EXPECT_FALSE(o.credit.cycle) << o.credit.example;
  EXPECT_GT(o.credit.dependencies, 0u);
  EXPECT_EQ(o.credit.channels, 4u * 4u * 2u);  // every leaf-spine link, both directions
}

TEST(UpDown, ThreeLevelFatTreeWithLmc) {
  const Outcome o = Route(FatTree3(), Engine(RoutingEngine::kUpDown), 1);
  ASSERT_TRUE(o.routing.ok()) << o.routing.error;
  EXPECT_TRUE(o.routes.ok());
  EXPECT_EQ(o.routes.pairs, AllPairs(o.subnet, 2));
  EXPECT_EQ(o.routes.max_hops, 4u);
  EXPECT_FALSE(o.credit.cycle) << o.credit.example;
}

TEST(UpDown, TorusIsCreditLoopFreeWhereMinHopIsNot) {
  for (const auto& [x, y] : {std::pair{4u, 4u}, std::pair{5u, 3u}, std::pair{6u, 6u}}) {
    SCOPED_TRACE(std::to_string(x) + "x" + std::to_string(y));
    const Outcome updn = Route(Torus(x, y), Engine(RoutingEngine::kUpDown));
    ASSERT_TRUE(updn.routing.ok()) << updn.routing.error;
    EXPECT_EQ(updn.routing.unreachable, 0u);
    EXPECT_EQ(updn.routing.unrestricted, 0u);  // one root: every pair has an up/down path
    EXPECT_TRUE(updn.routes.ok()) << updn.routes.problems[0];
    EXPECT_EQ(updn.routes.pairs, AllPairs(updn.subnet));
    EXPECT_FALSE(updn.credit.cycle) << updn.credit.example;

    // Min-hop goes both ways round the rings: its dependencies close a cycle.
    const Outcome minhop = Route(Torus(x, y), Engine(RoutingEngine::kMinHop));
    EXPECT_TRUE(minhop.routes.ok());
    EXPECT_TRUE(minhop.credit.cycle);
    EXPECT_NE(minhop.credit.example.find(" -> "), std::string::npos);
  }
}

TEST(UpDown, RootsFromAGuidFile) {
  const fabric::Topology topology = Torus(4, 4);
  Subnet probe = WithLids(topology);
  // Root at a corner switch (the last switch of the torus).
  uint64_t root = 0;
  for (const SmNode& n : probe.nodes())
    if (n.is_switch()) root = n.guid;
  char path[] = "/tmp/softib-sm-roots-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    std::ofstream out(path);
    out << "# roots\n" << std::hex << "0x" << root << "  \n\n";
  }
  RoutingOptions options = Engine(RoutingEngine::kUpDown);
  std::string error;
  ASSERT_TRUE(LoadRootGuids(path, &options.root_guids, &error)) << error;
  ASSERT_EQ(options.root_guids, std::vector<uint64_t>{root});
  const Outcome o = Route(topology, options);
  ASSERT_TRUE(o.routing.ok()) << o.routing.error;
  EXPECT_TRUE(o.routes.ok());
  EXPECT_FALSE(o.credit.cycle) << o.credit.example;
  // The root switch never forwards a LID back up: it has no switch above it, so every
  // route it carries descends; one of its neighbours sends its own LID straight to it.
  const NodeId root_node = *o.subnet.Find(root);
  const uint16_t root_lid = o.subnet.node(root_node).ports[0].lid;
  unsigned direct = 0;
  for (uint8_t p = 1; p <= o.subnet.node(root_node).num_ports; ++p) {
    const SmPort& port = o.subnet.node(root_node).ports[p];
    if (!port.linked() || !o.subnet.node(port.peer).is_switch()) continue;
    direct += o.subnet.node(port.peer).lft[root_lid] == port.peer_port ? 1 : 0;
  }
  EXPECT_EQ(direct, 4u);

  {
    std::ofstream out(path);
    out << "0x12345\n";
  }
  options.root_guids.clear();
  ASSERT_TRUE(LoadRootGuids(path, &options.root_guids, &error));
  Subnet subnet = WithLids(topology);
  const RoutingReport bad = ComputeRoutes(subnet, options);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.error.find("not a switch"), std::string::npos) << bad.error;
  {
    std::ofstream out(path);
    out << "0xzz\n";
  }
  options.root_guids.clear();
  EXPECT_FALSE(LoadRootGuids(path, &options.root_guids, &error));
  EXPECT_NE(error.find(":1: not a GUID"), std::string::npos) << error;
  unlink(path);
  EXPECT_FALSE(LoadRootGuids(path, &options.root_guids, &error));
}

// For every CA LID: the set of top switches that the routes from every other leaf pass
// through.
std::map<uint16_t, std::set<NodeId>> SpinesUsed(const Subnet& s) {
  std::map<uint16_t, std::set<NodeId>> used;
  for (NodeId src = 0; src < s.nodes().size(); ++src) {
    if (!s.node(src).is_switch()) continue;
    if (s.node(src).description.rfind("leaf", 0) != 0) continue;
    for (uint16_t lid = 1; lid <= s.TopLid(); ++lid) {
      const auto owner = s.Owner(lid);
      if (!owner || s.node(owner->node).is_switch()) continue;
      NodeId at = src;
      for (unsigned hop = 0; hop < 8; ++hop) {
        const SmNode& sw = s.node(at);
        if (sw.description.rfind("spine", 0) == 0 || sw.description.rfind("core", 0) == 0)
          used[lid].insert(at);
        const SmPort& out = sw.ports[sw.lft[lid]];
        if (!s.node(out.peer).is_switch()) break;
        at = out.peer;
      }
    }
  }
  return used;
}

TEST(FatTree, TwoLevelSpreadsEachLeafOverTheSpines) {
  const Outcome o = Route(FatTree2(6, 8, 4), Engine(RoutingEngine::kFatTree));
  ASSERT_TRUE(o.routing.ok()) << o.routing.error;
  EXPECT_EQ(o.routing.unreachable, 0u);
  EXPECT_TRUE(o.routes.ok()) << o.routes.problems[0];
  EXPECT_EQ(o.routes.pairs, AllPairs(o.subnet));
  EXPECT_EQ(o.routes.max_hops, 2u);
  EXPECT_FALSE(o.credit.cycle) << o.credit.example;
  // Each host LID descends through exactly one spine, and each leaf's 8 hosts are spread
  // 2 per spine, so every spine->leaf link carries 2 destinations.
  std::map<std::pair<NodeId, NodeId>, unsigned> per_spine_leaf;
  for (const auto& [lid, spines] : SpinesUsed(o.subnet)) {
    ASSERT_EQ(spines.size(), 1u) << "LID " << lid;
    const EndPort owner = *o.subnet.Owner(lid);
    ++per_spine_leaf[{*spines.begin(), o.subnet.node(owner.node).ports[owner.port].peer}];
  }
  EXPECT_EQ(per_spine_leaf.size(), 4u * 6u);
  for (const auto& [key, n] : per_spine_leaf) EXPECT_EQ(n, 2u);
}

TEST(FatTree, MinHopDoesNotSpreadTheSameWay) {
  // The contrast that makes the fat-tree test meaningful: with min-hop, some host LID is
  // reached through more than one spine.
  const Outcome o = Route(FatTree2(6, 8, 4), Engine(RoutingEngine::kMinHop));
  ASSERT_TRUE(o.routes.ok());
  bool several = false;
  for (const auto& [lid, spines] : SpinesUsed(o.subnet)) several |= spines.size() > 1;
  EXPECT_TRUE(several);
}

TEST(FatTree, ThreeLevelAndParallelUplinks) {
  const Outcome o = Route(FatTree3(), Engine(RoutingEngine::kFatTree), 1);
  ASSERT_TRUE(o.routing.ok()) << o.routing.error;
  EXPECT_TRUE(o.routes.ok()) << o.routes.problems[0];
  EXPECT_EQ(o.routes.pairs, AllPairs(o.subnet, 2));
  EXPECT_EQ(o.routes.max_hops, 4u);
  EXPECT_FALSE(o.credit.cycle) << o.credit.example;
  for (const auto& [lid, spines] : SpinesUsed(o.subnet)) EXPECT_EQ(spines.size(), 1u);

  const Outcome parallel = Route(FatTree2(3, 4, 2, 2), Engine(RoutingEngine::kFatTree));
  ASSERT_TRUE(parallel.routing.ok()) << parallel.routing.error;
  EXPECT_TRUE(parallel.routes.ok());
  EXPECT_FALSE(parallel.credit.cycle);

  const Outcome ft36 = Route(*fabric::MakePreset("ft36"), Engine(RoutingEngine::kFatTree));
  ASSERT_TRUE(ft36.routing.ok()) << ft36.routing.error;
  EXPECT_TRUE(ft36.routes.ok());
  EXPECT_EQ(ft36.routes.pairs, 612ull * 611ull);
  EXPECT_FALSE(ft36.credit.cycle);
}

TEST(FatTree, RefusesWhatIsNotAFatTree) {
  Subnet torus = WithLids(Torus(3, 3));
  RoutingReport r = ComputeFatTreeRoutes(torus);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("not a fat tree"), std::string::npos) << r.error;
}

TEST(CreditLoops, PlantedCycleIsFoundAndCleanTableIsNot) {
  // Default fabric: spine (0), leaf-01 (1), leaf-02 (2). A LID bounced leaf-01 -> spine ->
  // leaf-01 ... would be a routing loop; instead plant two LIDs whose routes chain the
  // spine<->leaf channels into a cycle: LID a goes leaf-01 -> spine -> leaf-02, LID b goes
  // leaf-02 -> spine -> leaf-01, and both continue back up (a routing loop for each).
  Outcome o = Route(fabric::DefaultTopology(), Engine(RoutingEngine::kUpDown));
  ASSERT_TRUE(o.routes.ok());
  EXPECT_FALSE(o.credit.cycle);
  Subnet& s = o.subnet;
  auto port_to = [&](NodeId from, NodeId to) {
    for (uint8_t p = 1; p <= s.node(from).num_ports; ++p)
      if (s.node(from).ports[p].peer == to) return p;
    return uint8_t{0};
  };
  const uint16_t host = s.node(6).ports[1].lid;  // behind leaf-02
  s.node(2).lft[host] = port_to(2, 0);           // leaf-02 sends it up
  s.node(0).lft[host] = port_to(0, 1);           // the spine down to leaf-01
  s.node(1).lft[host] = port_to(1, 0);           // leaf-01 up again
  const CreditLoopReport c = CheckCreditLoops(s);
  EXPECT_TRUE(c.cycle);
  EXPECT_NE(c.example.find("spine"), std::string::npos) << c.example;
}

}  // namespace
}  // namespace softib::sm
