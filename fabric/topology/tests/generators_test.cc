// Generators: node-count formulas, invariants (every host cabled to a switch, port use
// within the radix, no port reused, the wiring pattern), round trips through the writer
// and reader, the presets, and the errors for impossible shapes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "fabric/topology/generators.h"
#include "fabric/topology/ibnetdiscover_reader.h"
#include "fabric/topology/ibnetdiscover_writer.h"

namespace softib::fabric {
namespace {

struct Counts {
  std::size_t switches, cas, links;
};

Counts CountsOf(const Topology& t) {
  return {t.Count(NodeType::kSwitch), t.Count(NodeType::kCa), t.links().size()};
}

// Invariants every generated fabric keeps.
void CheckInvariants(const Topology& t, unsigned radix, unsigned hca_ports) {
  ASSERT_TRUE(t.validated());  // Validate(): no port reused, ports in range, GUIDs unique
  std::set<PortRef> used;
  for (const Link& l : t.links()) {
    EXPECT_TRUE(used.insert(l.a).second);
    EXPECT_TRUE(used.insert(l.b).second);
  }
  for (NodeIndex i = 0; i < t.nodes().size(); ++i) {
    const Node& n = t.node(i);
    if (n.is_switch()) {
      EXPECT_EQ(n.num_ports, radix);
      EXPECT_EQ(n.ports[0].guid, n.guid);
      EXPECT_EQ(n.name, CanonicalName(NodeType::kSwitch, n.guid));
      continue;
    }
    // A host: port 1 goes to a switch; the others are not cabled.
    EXPECT_EQ(n.num_ports, hca_ports);
    const auto peer = t.Peer({i, 1});
    ASSERT_TRUE(peer.has_value()) << n.description << " is not cabled";
    EXPECT_TRUE(t.node(peer->node).is_switch());
    for (unsigned p = 2; p <= n.num_ports; ++p)
      EXPECT_FALSE(t.Peer({i, static_cast<uint8_t>(p)}).has_value());
    EXPECT_EQ(n.ports[1].guid, n.guid + 1);
    EXPECT_EQ(n.name, CanonicalName(NodeType::kCa, n.guid));
    EXPECT_EQ(n.description.substr(n.description.size() - 6), " HCA-1");
  }
}

void CheckRoundTrip(const Topology& t) {
  const WriteResult w = WriteIbnetdiscover(t);
  ASSERT_TRUE(w.ok()) << w.error;
  ReadResult r = ReadIbnetdiscover(w.text, "generated");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(*r.topology == t);
}

std::map<std::string, NodeIndex> ByDescription(const Topology& t) {
  std::map<std::string, NodeIndex> m;
  for (NodeIndex i = 0; i < t.nodes().size(); ++i) m[t.node(i).description] = i;
  return m;
}

TEST(FatTree, TwoLevelCountsAndWiring) {
  FatTreeShape s;
  s.leaves = 4;
  s.hosts_per_leaf = 5;
  s.spines = 3;
  s.uplinks = 2;
  s.hardware.radix = 12;
  GenerateResult g = GenerateFatTree(s);
  ASSERT_TRUE(g.ok()) << g.error;
  const Topology& t = *g.topology;
  const Counts c = CountsOf(t);
  EXPECT_EQ(c.switches, 4u + 3u);
  EXPECT_EQ(c.cas, 4u * 5u);
  EXPECT_EQ(c.links, 4u * 5u + 4u * 3u * 2u);
  CheckInvariants(t, 12, 1);
  CheckRoundTrip(t);

  // Spines first, then leaves, then hosts; leaf ports 1..5 hosts, 6.. uplinks spine by spine.
  EXPECT_EQ(t.node(0).description, "spine-01");
  EXPECT_EQ(t.node(3).description, "leaf-01");
  EXPECT_EQ(t.node(7).description, "host-0001 HCA-1");
  EXPECT_EQ(t.node(0).guid, 0x0002c90200400001u);
  EXPECT_EQ(t.node(7).guid, 0x0002c90300a00010u);
  auto d = ByDescription(t);
  // host 7 (0-based 6) is leaf-02's second host.
  EXPECT_EQ(t.Peer({d["host-0007 HCA-1"], 1}), (PortRef{d["leaf-02"], 2}));
  // leaf-02 (l=1) to spine-03 (sp=2), link u=1: leaf port 5+2*2+1+1 = 11, spine port 1*2+1+1 = 4.
  EXPECT_EQ(t.Peer({d["leaf-02"], 11}), (PortRef{d["spine-03"], 4}));
  EXPECT_FALSE(t.Peer({d["leaf-02"], 12}).has_value());
  EXPECT_FALSE(t.Peer({d["spine-01"], 9}).has_value());
}

TEST(FatTree, ThreeLevelCountsAndWiring) {
  FatTreeShape s;
  s.levels = 3;
  s.pods = 3;
  s.leaves = 6;
  s.hosts_per_leaf = 4;
  s.aggs_per_pod = 2;
  s.spines = 4;
  s.hardware.radix = 8;
  s.hardware.hca_ports = 2;
  GenerateResult g = GenerateFatTree(s);
  ASSERT_TRUE(g.ok()) << g.error;
  const Topology& t = *g.topology;
  const Counts c = CountsOf(t);
  EXPECT_EQ(c.switches, 4u + 3u * 2u + 6u);
  EXPECT_EQ(c.cas, 24u);
  // hosts + leaf-agg (each leaf to each agg of its pod) + agg-core (each agg to its group).
  EXPECT_EQ(c.links, 24u + 6u * 2u + 6u * 2u);
  CheckInvariants(t, 8, 2);
  CheckRoundTrip(t);
  auto d = ByDescription(t);
  // Pod 2 (0-based 1) holds leaves 3,4 and aggs 3,4. leaf-04 (second leaf of pod 1) port 4+2
  // goes to agg-04 (agg j=1 of pod 1) port 2.
  EXPECT_EQ(t.Peer({d["leaf-04"], 6}), (PortRef{d["agg-04"], 2}));
  // agg-04 is agg j=1: core group 1 = spines 3 and 4, on its ports 3 and 4, spine port = pod+1.
  EXPECT_EQ(t.Peer({d["agg-04"], 3}), (PortRef{d["spine-03"], 2}));
  EXPECT_EQ(t.Peer({d["agg-04"], 4}), (PortRef{d["spine-04"], 2}));
}

TEST(Torus, CountsWraparoundAndRoundTrip) {
  for (auto [x, y, h] : {std::tuple{3u, 4u, 2u}, std::tuple{2u, 2u, 1u}, std::tuple{1u, 5u, 3u},
                         std::tuple{1u, 1u, 4u}}) {
    SCOPED_TRACE(std::to_string(x) + "x" + std::to_string(y) + " h" + std::to_string(h));
    TorusShape s;
    s.x = x;
    s.y = y;
    s.hosts_per_switch = h;
    GenerateResult g = GenerateTorus(s);
    ASSERT_TRUE(g.ok()) << g.error;
    const Topology& t = *g.topology;
    const Counts c = CountsOf(t);
    EXPECT_EQ(c.switches, x * y);
    EXPECT_EQ(c.cas, x * y * h);
    EXPECT_EQ(c.links, x * y * h + (x > 1 ? x * y : 0) + (y > 1 ? x * y : 0));
    CheckInvariants(t, 36, 1);
    CheckRoundTrip(t);
  }
  TorusShape s;
  s.x = 3;
  s.y = 4;
  s.hosts_per_switch = 2;
  const Topology t = *GenerateTorus(s).topology;
  auto d = ByDescription(t);
  // +x of (2,1) wraps to -x of (0,1); +y of (1,3) wraps to -y of (1,0).
  EXPECT_EQ(t.Peer({d["torus-x02-y01"], 3}), (PortRef{d["torus-x00-y01"], 4}));
  EXPECT_EQ(t.Peer({d["torus-x01-y03"], 5}), (PortRef{d["torus-x01-y00"], 6}));
}

TEST(Presets, DefaultTopology) {
  Topology t = DefaultTopology();
  ASSERT_TRUE(t.validated());
  const Counts c = CountsOf(t);
  EXPECT_EQ(c.switches, 3u);
  EXPECT_EQ(c.cas, 4u);
  EXPECT_EQ(c.links, 4u + 2u * 2u);
  CheckInvariants(t, 36, 2);
  CheckRoundTrip(t);
  EXPECT_EQ(t.node(0).description, "spine-01");
  EXPECT_EQ(t.node(1).description, "leaf-01");
  EXPECT_EQ(t.node(3).description, "host-0001 HCA-1");
  EXPECT_EQ(t.node(6).description, "host-0004 HCA-1");
  EXPECT_TRUE(*MakePreset("default") == t);
}

TEST(Presets, BenchmarkShapes) {
  auto ft36 = MakePreset("ft36");
  ASSERT_TRUE(ft36.has_value());
  EXPECT_EQ(ft36->Count(NodeType::kSwitch), 36u);
  EXPECT_EQ(ft36->Count(NodeType::kCa), 576u);
  EXPECT_EQ(ft36->links().size(), 576u + 24u * 12u);
  CheckInvariants(*ft36, 36, 1);
  CheckRoundTrip(*ft36);

  auto ft92 = MakePreset("ft92");
  ASSERT_TRUE(ft92.has_value());
  EXPECT_EQ(ft92->Count(NodeType::kSwitch), 92u);
  EXPECT_EQ(ft92->Count(NodeType::kCa), 1920u);
  EXPECT_EQ(ft92->links().size(), 1920u + 60u * 4u + 20u * 3u);
  CheckInvariants(*ft92, 36, 1);
  CheckRoundTrip(*ft92);
  EXPECT_FALSE(MakePreset("ft37").has_value());
  EXPECT_EQ(Presets().size(), 4u);
}

// The >= 10,000-node preset: counts, round trip, and the read/write times printed
// (measured, not asserted: the brief wants them well under a second).
TEST(Presets, LargeFatTree) {
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  auto big = MakePreset("ft-k36");
  auto t1 = Clock::now();
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(big->Count(NodeType::kSwitch), 1620u);
  EXPECT_EQ(big->Count(NodeType::kCa), 11664u);
  EXPECT_GE(big->nodes().size(), 10000u);
  EXPECT_EQ(big->links().size(), 3u * 11664u);
  const WriteResult w = WriteIbnetdiscover(*big);
  auto t2 = Clock::now();
  ASSERT_TRUE(w.ok());
  ReadResult r = ReadIbnetdiscover(w.text, "ft-k36");
  auto t3 = Clock::now();
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(*r.topology == *big);
  CheckInvariants(*r.topology, 36, 1);
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::printf(
      "ft-k36: %zu nodes, %zu links, %zu bytes; generate %.1f ms, write %.1f ms, read %.1f ms\n",
      big->nodes().size(), big->links().size(), w.text.size(), ms(t1 - t0), ms(t2 - t1),
      ms(t3 - t2));
}

struct BadShape {
  const char* name;
  FatTreeShape shape;
  const char* error;
};

void PrintTo(const BadShape& b, std::ostream* os) { *os << b.name; }

FatTreeShape Shape(unsigned levels, unsigned leaves, unsigned hosts, unsigned spines,
                   unsigned uplinks = 1, unsigned pods = 1, unsigned aggs = 1,
                   unsigned radix = 36) {
  FatTreeShape s;
  s.levels = levels;
  s.leaves = leaves;
  s.hosts_per_leaf = hosts;
  s.spines = spines;
  s.uplinks = uplinks;
  s.pods = pods;
  s.aggs_per_pod = aggs;
  s.hardware.radix = radix;
  return s;
}

class FatTreeErrors : public ::testing::TestWithParam<BadShape> {};

TEST_P(FatTreeErrors, Rejects) {
  GenerateResult g = GenerateFatTree(GetParam().shape);
  EXPECT_FALSE(g.ok());
  EXPECT_EQ(g.error, GetParam().error);
}

const BadShape kBadShapes[] = {
    {"Levels", Shape(4, 2, 2, 1), "levels must be 2 or 3"},
    {"NoLeaves", Shape(2, 0, 2, 1), "a fat tree needs at least 1 leaf"},
    {"NoSpines", Shape(2, 2, 2, 0), "more than 1 leaf needs at least 1 spine"},
    {"LeafPorts", Shape(2, 2, 30, 4, 2), "a leaf needs 38 ports but switches have 36"},
    {"SpinePorts", Shape(2, 37, 1, 1), "a spine needs 37 ports but switches have 36"},
    {"Radix", Shape(2, 2, 2, 1, 1, 1, 1, 255), "radix must be 1..254"},
    {"PodsDivide", Shape(3, 5, 2, 2, 1, 2, 1), "leaves (5) must divide evenly into 2 pods"},
    {"GroupsDivide", Shape(3, 4, 2, 3, 1, 2, 2),
     "spines (3) must divide evenly into 2 groups, one per aggregation switch of a pod"},
    {"AggPorts", Shape(3, 40, 2, 2, 1, 1, 2),
     "an aggregation switch needs 41 ports but switches have 36"},
    {"CorePorts", Shape(3, 37, 2, 1, 1, 37, 1), "a spine needs 37 ports but switches have 36"},
};

INSTANTIATE_TEST_SUITE_P(Table, FatTreeErrors, ::testing::ValuesIn(kBadShapes),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Torus, Errors) {
  TorusShape s;
  s.x = 0;
  EXPECT_EQ(GenerateTorus(s).error, "torus dimensions must be at least 1");
  s.x = 4;
  s.y = 4;
  s.hosts_per_switch = 33;
  EXPECT_EQ(GenerateTorus(s).error, "a torus switch needs 37 ports but switches have 36");
  s.hosts_per_switch = 1;
  s.hardware.hca_ports = 16;
  EXPECT_EQ(GenerateTorus(s).error, "HCA ports must be 1..15");
}

}  // namespace
}  // namespace softib::fabric
