// The topology model: each validation rule, the lookups, equality, link rates.
#include <gtest/gtest.h>

#include <string>

#include "fabric/topology/topology.h"

namespace softib::fabric {
namespace {

// A switch with 4 ports and two single-port CAs on its ports 1 and 2.
Topology Small() {
  Topology t;
  t.AddNode(MakeNode(NodeType::kSwitch, "S-1", "leaf-01", 0x100, 4));
  t.AddNode(MakeNode(NodeType::kCa, "H-1", "host-0001 HCA-1", 0x200, 1));
  t.AddNode(MakeNode(NodeType::kCa, "H-2", "host-0002 HCA-1", 0x210, 1));
  t.AddLink({{0, 1}, {1, 1}, LinkWidth::k4x, LinkSpeed::kQdr});
  t.AddLink({{2, 1}, {0, 2}, LinkWidth::k1x, LinkSpeed::kEdr});
  return t;
}

TEST(Topology, MakeNodeDefaults) {
  const Node sw = MakeNode(NodeType::kSwitch, "S-1", "d", 0x100, 36);
  EXPECT_EQ(sw.ports.size(), 37u);
  EXPECT_EQ(sw.ports[0].guid, 0x100u);
  EXPECT_EQ(sw.ports[1].guid, 0u);
  EXPECT_EQ(sw.system_image_guid, 0x100u);
  const Node ca = MakeNode(NodeType::kCa, "H-1", "d", 0x200, 2);
  EXPECT_EQ(ca.ports[0].guid, 0u);
  EXPECT_EQ(ca.ports[1].guid, 0x201u);
  EXPECT_EQ(ca.ports[2].guid, 0x202u);
  EXPECT_EQ(CanonicalName(NodeType::kSwitch, 0x2c90200400001), "S-0002c90200400001");
  EXPECT_EQ(CanonicalName(NodeType::kCa, 0x10), "H-0000000000000010");
  EXPECT_EQ(CanonicalName(NodeType::kRouter, 0x10), "R-0000000000000010");
}

TEST(Topology, ValidSmallAndLookups) {
  Topology t = Small();
  EXPECT_FALSE(t.validated());
  EXPECT_FALSE(t.Peer({0, 1}).has_value());  // no index before Validate
  ASSERT_EQ(t.Validate(), "");
  EXPECT_TRUE(t.validated());
  EXPECT_EQ(t.Peer({0, 1}), (PortRef{1, 1}));
  EXPECT_EQ(t.Peer({1, 1}), (PortRef{0, 1}));
  EXPECT_EQ(t.Peer({0, 2}), (PortRef{2, 1}));
  EXPECT_FALSE(t.Peer({0, 3}).has_value());
  EXPECT_FALSE(t.Peer({0, 0}).has_value());
  EXPECT_FALSE(t.Peer({9, 1}).has_value());
  EXPECT_EQ(t.LinkAt({2, 1})->speed, LinkSpeed::kEdr);
  EXPECT_EQ(t.FindByGuid(0x210), 2u);
  EXPECT_FALSE(t.FindByGuid(0x211).has_value());  // a port GUID, not a node GUID
  EXPECT_EQ(t.FindByName("H-1"), 1u);
  EXPECT_EQ(t.Count(NodeType::kSwitch), 1u);
  EXPECT_EQ(t.Count(NodeType::kCa), 2u);
  t.AddLink({{0, 3}, {0, 4}, LinkWidth::k4x, LinkSpeed::kQdr});  // a loopback cable is fine
  EXPECT_FALSE(t.validated());
  EXPECT_EQ(t.Validate(), "");
}

TEST(Topology, EqualityIgnoresLinkOrderAndDirection) {
  Topology a = Small();
  Topology b;
  for (const Node& n : a.nodes()) b.AddNode(n);
  b.AddLink({{0, 2}, {2, 1}, LinkWidth::k1x, LinkSpeed::kEdr});
  b.AddLink({{1, 1}, {0, 1}, LinkWidth::k4x, LinkSpeed::kQdr});
  EXPECT_TRUE(a == b);
  b.mutable_node(1).description = "other";
  EXPECT_FALSE(a == b);
}

struct Rule {
  const char* name;
  void (*mutate)(Topology&);
  const char* error;
};

void PrintTo(const Rule& r, std::ostream* os) { *os << r.name; }

class TopologyRules : public ::testing::TestWithParam<Rule> {};

TEST_P(TopologyRules, Rejects) {
  Topology t = Small();
  GetParam().mutate(t);
  std::optional<NodeIndex> culprit;
  EXPECT_EQ(t.Validate(&culprit), GetParam().error);
  EXPECT_FALSE(t.validated());
}

const Rule kRules[] = {
    {"NoNodes", [](Topology& t) { t = Topology(); }, "the topology has no nodes"},
    {"PortOutOfRange",
     [](Topology& t) {
       t.AddLink({{0, 5}, {0, 3}});
     },
     "S-1 (\"leaf-01\") port 5: out of range (the node has ports 1..4)"},
    {"PortZero",
     [](Topology& t) {
       t.AddLink({{0, 0}, {0, 3}});
     },
     "S-1 (\"leaf-01\") port 0: out of range (the node has ports 1..4)"},
    {"CabledTwice",
     [](Topology& t) {
       t.AddLink({{0, 3}, {1, 1}});
     },
     "H-1 (\"host-0001 HCA-1\") port 1: cabled twice (to S-1 (\"leaf-01\") port 1 and to S-1 "
     "(\"leaf-01\") port 3)"},
    {"CabledToItself",
     [](Topology& t) {
       t.AddLink({{0, 3}, {0, 3}});
     },
     "S-1 (\"leaf-01\") port 3: cabled twice (to S-1 (\"leaf-01\") port 3 and to S-1 "
     "(\"leaf-01\") port 3)"},
    {"NoSuchNode",
     [](Topology& t) {
       t.AddLink({{7, 1}, {0, 3}});
     },
     "link 2: no node #7"},
    {"DuplicateNodeGuid", [](Topology& t) { t.mutable_node(2).guid = 0x200; },
     "node H-2: duplicate node GUID 0x0000000000000200 (also H-1)"},
    {"DuplicatePortGuid", [](Topology& t) { t.mutable_node(2).ports[1].guid = 0x201; },
     "node H-2 port 1: duplicate port GUID 0x0000000000000201 (also a port of H-1)"},
    {"PortGuidIsOtherNode", [](Topology& t) { t.mutable_node(2).ports[1].guid = 0x100; },
     "node H-2 port 1: duplicate port GUID 0x0000000000000100 (also a port of S-1)"},
    {"PortGuidIsOtherNodeGuid", [](Topology& t) { t.mutable_node(1).ports[1].guid = 0x210; },
     "node H-1 port 1: port GUID 0x0000000000000210 is the node GUID of H-2"},
    {"ZeroGuid", [](Topology& t) { t.mutable_node(1).guid = 0; }, "node H-1: node GUID is 0"},
    {"ZeroPortGuid", [](Topology& t) { t.mutable_node(1).ports[1].guid = 0; },
     "node H-1 port 1: port GUID is 0"},
    {"DuplicateName", [](Topology& t) { t.mutable_node(2).name = "H-1"; },
     "node H-1: duplicate node id (node #1 has it too)"},
    {"EmptyName", [](Topology& t) { t.mutable_node(2).name = ""; },
     "node #2: node id must be 1..64 characters"},
    {"NameWithAt", [](Topology& t) { t.mutable_node(2).name = "H@2"; },
     "node H@2: node id may not hold control characters or any of \" # @"},
    {"EmptyDescription", [](Topology& t) { t.mutable_node(1).description = ""; },
     "node H-1: empty node description"},
    {"LongDescription", [](Topology& t) { t.mutable_node(1).description = std::string(65, 'x'); },
     "node H-1: node description is 65 bytes; at most 64"},
    {"QuoteInDescription", [](Topology& t) { t.mutable_node(1).description = "a\"b"; },
     "node H-1: node description may not hold control characters or a double quote"},
    {"NewlineInDescription", [](Topology& t) { t.mutable_node(1).description = "a\nb"; },
     "node H-1: node description may not hold control characters or a double quote"},
    {"ZeroPorts",
     [](Topology& t) {
       t.mutable_node(1).num_ports = 0;
       t.mutable_node(1).ports.resize(1);
     },
     "node H-1: 0 ports; a node has 1..254"},
    {"PortTableSize", [](Topology& t) { t.mutable_node(1).ports.resize(5); },
     "node H-1: port table has 5 entries for 1 ports"},
    {"Lmc", [](Topology& t) { t.mutable_node(1).ports[1].lmc = 8; },
     "node H-1 port 1: LMC 8 out of range 0..7"},
    {"MulticastLid", [](Topology& t) { t.mutable_node(1).ports[1].lid = 0xC000; },
     "node H-1 port 1: LID 49152 is not a unicast LID"},
    {"DuplicateLid",
     [](Topology& t) {
       t.mutable_node(0).ports[0].lid = 7;
       t.mutable_node(2).ports[1].lid = 7;
     },
     "node H-2 port 1: duplicate LID 7 (also S-1)"},
    {"EnhancedOnCa", [](Topology& t) { t.mutable_node(1).enhanced_port0 = true; },
     "node H-1: enhanced port 0 on a non-switch"},
};

INSTANTIATE_TEST_SUITE_P(Table, TopologyRules, ::testing::ValuesIn(kRules),
                         [](const ::testing::TestParamInfo<Rule>& info) {
                           return info.param.name;
                         });

TEST(LinkRate, NamesRoundTrip) {
  for (LinkWidth w :
       {LinkWidth::k1x, LinkWidth::k2x, LinkWidth::k4x, LinkWidth::k8x, LinkWidth::k12x})
    EXPECT_EQ(ParseLinkWidth(ToString(w)), w);
  for (LinkSpeed s : {LinkSpeed::kSdr, LinkSpeed::kDdr, LinkSpeed::kQdr, LinkSpeed::kFdr10,
                      LinkSpeed::kFdr, LinkSpeed::kEdr, LinkSpeed::kHdr, LinkSpeed::kNdr})
    EXPECT_EQ(ParseLinkSpeed(ToString(s)), s);
  EXPECT_EQ(ToString(LinkWidth::k12x), "12x");
  EXPECT_EQ(ToString(LinkSpeed::kFdr10), "FDR10");
  EXPECT_FALSE(ParseLinkWidth("3x").has_value());
  EXPECT_FALSE(ParseLinkSpeed("qdr").has_value());
  EXPECT_EQ(static_cast<int>(LinkWidth::k12x), 8);  // PortInfo LinkWidthActive encoding
}

TEST(LinkRate, CommonRatesFollowIbsim) {
  // Each annotation, against itself, gives itself back.
  for (LinkWidth w :
       {LinkWidth::k1x, LinkWidth::k2x, LinkWidth::k4x, LinkWidth::k8x, LinkWidth::k12x})
    for (LinkSpeed s : {LinkSpeed::kSdr, LinkSpeed::kDdr, LinkSpeed::kQdr, LinkSpeed::kFdr10,
                        LinkSpeed::kFdr, LinkSpeed::kEdr, LinkSpeed::kHdr, LinkSpeed::kNdr}) {
      const EnabledRates r = EnabledFor(w, s);
      EXPECT_EQ(CommonWidth(r, r), w);
      EXPECT_EQ(CommonSpeed(r, r), s);
    }
  // 12x against 4x: 4x. EDR against HDR: EDR. QDR against FDR: QDR. 8x against 4x: none.
  EXPECT_EQ(CommonWidth(EnabledFor(LinkWidth::k12x, LinkSpeed::kQdr),
                        EnabledFor(LinkWidth::k4x, LinkSpeed::kQdr)),
            LinkWidth::k4x);
  EXPECT_EQ(CommonSpeed(EnabledFor(LinkWidth::k4x, LinkSpeed::kEdr),
                        EnabledFor(LinkWidth::k4x, LinkSpeed::kHdr)),
            LinkSpeed::kEdr);
  EXPECT_EQ(CommonSpeed(EnabledFor(LinkWidth::k4x, LinkSpeed::kQdr),
                        EnabledFor(LinkWidth::k4x, LinkSpeed::kFdr)),
            LinkSpeed::kQdr);
  EXPECT_FALSE(CommonWidth(EnabledFor(LinkWidth::k8x, LinkSpeed::kQdr),
                           EnabledFor(LinkWidth::k4x, LinkSpeed::kQdr))
                   .has_value());
}

}  // namespace
}  // namespace softib::fabric
