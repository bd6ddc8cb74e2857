// LID assignment: uniqueness, LMC alignment, switches at LMC 0, stability from guid2lid,
// presets kept, and the guid2lid file format.
#include <gtest/gtest.h>

#include <set>

#include "fabric/topology/generators.h"
#include "softib/sm/lids.h"

namespace softib::sm {
namespace {

Subnet FatTree(unsigned leaves, unsigned hosts, unsigned spines) {
  fabric::FatTreeShape shape;
  shape.leaves = leaves;
  shape.hosts_per_leaf = hosts;
  shape.spines = spines;
  auto generated = fabric::GenerateFatTree(shape);
  EXPECT_TRUE(generated.ok()) << generated.error;
  return SubnetFromTopology(*generated.topology);
}

// Every LID of every end port, checking the blocks do not overlap.
std::set<unsigned> AllLids(const Subnet& subnet) {
  std::set<unsigned> lids;
  for (const EndPort& e : subnet.EndPorts()) {
    const SmPort& port = subnet.node(e.node).ports[e.port];
    EXPECT_NE(port.lid, 0u);
    EXPECT_EQ(port.lid % (1u << port.lmc), 0u) << "block not aligned";
    for (unsigned i = 0; i < (1u << port.lmc); ++i)
      EXPECT_TRUE(lids.insert(port.lid + i).second) << "LID " << port.lid + i << " twice";
  }
  return lids;
}

TEST(Lids, UniqueAndDenseWithoutLmc) {
  Subnet subnet = FatTree(4, 6, 2);
  const LidReport report = AssignLids(subnet, 0, nullptr);
  ASSERT_TRUE(report.ok()) << report.error;
  EXPECT_EQ(report.end_ports, 6u + 24u);
  EXPECT_EQ(report.assigned, 30u);
  const std::set<unsigned> lids = AllLids(subnet);
  EXPECT_EQ(*lids.begin(), 1u);
  EXPECT_EQ(*lids.rbegin(), 30u);
  EXPECT_EQ(subnet.TopLid(), 30);
  for (unsigned lid = 1; lid <= 30; ++lid) EXPECT_TRUE(subnet.Owner(lid).has_value());
  EXPECT_FALSE(subnet.Owner(31).has_value());
}

TEST(Lids, LmcBlocksAlignedAndSwitchesSingle) {
  Subnet subnet = FatTree(2, 3, 1);
  const LidReport report = AssignLids(subnet, 2, nullptr);
  ASSERT_TRUE(report.ok()) << report.error;
  AllLids(subnet);
  for (const EndPort& e : subnet.EndPorts()) {
    const SmNode& node = subnet.node(e.node);
    EXPECT_EQ(node.ports[e.port].lmc, node.is_switch() ? 0 : 2) << node.description;
  }
  // 3 switch LIDs + 6 hosts x 4 LIDs, each host block on a multiple of 4.
  EXPECT_EQ(AllLids(subnet).size(), 3u + 24u);
}

TEST(Lids, RejectsLmcAbove7) {
  Subnet subnet = FatTree(2, 1, 1);
  EXPECT_FALSE(AssignLids(subnet, 8, nullptr).ok());
}

TEST(Lids, StableAcrossRestartsFromGuid2Lid) {
  Subnet first = FatTree(3, 4, 2);
  Guid2Lid file;
  ASSERT_TRUE(AssignLids(first, 1, &file).ok());
  const std::string text = file.Format();
  // A restarted SM finds the spine holding what the file remembers for a leaf.
  Subnet second = FatTree(3, 4, 2);
  second.node(0).ports[0].info.LID = first.node(2).ports[0].lid;
  Guid2Lid reloaded;
  std::string error;
  ASSERT_TRUE(reloaded.Parse(text, "guid2lid", &error)) << error;
  const LidReport report = AssignLids(second, 1, &reloaded);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report.from_file, report.end_ports);
  for (NodeId n = 0; n < first.nodes().size(); ++n)
    for (std::size_t p = 0; p < first.node(n).ports.size(); ++p)
      EXPECT_EQ(first.node(n).ports[p].lid, second.node(n).ports[p].lid);
  EXPECT_EQ(reloaded.Format(), text);
}

TEST(Lids, KeepsPresetLidsAndFillsAroundThem) {
  Subnet subnet = FatTree(2, 2, 1);
  // The spine comes preset with LID 5, the first host with 8.
  subnet.node(0).ports[0].info.LID = 5;
  const NodeId host = static_cast<NodeId>(subnet.nodes().size() - 4);
  subnet.node(host).ports[1].info.LID = 8;
  const LidReport report = AssignLids(subnet, 0, nullptr);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report.kept, 2u);
  EXPECT_EQ(subnet.node(0).ports[0].lid, 5);
  EXPECT_EQ(subnet.node(host).ports[1].lid, 8);
  EXPECT_EQ(AllLids(subnet), (std::set<unsigned>{1, 2, 3, 4, 5, 6, 8}));
}

TEST(Lids, FileLidWinsOverAConflictingPreset) {
  Subnet subnet = FatTree(2, 1, 1);
  Guid2Lid file;
  const uint64_t spine = subnet.node(0).guid;
  file.entries()[spine] = {7, 7};
  subnet.node(1).ports[0].info.LID = 7;  // a leaf holds the spine's remembered LID
  ASSERT_TRUE(AssignLids(subnet, 0, &file).ok());
  EXPECT_EQ(subnet.node(0).ports[0].lid, 7);
  EXPECT_NE(subnet.node(1).ports[0].lid, 7);
  AllLids(subnet);
}

TEST(Guid2LidFile, ParsesOpenSmLinesAndRejectsGarbage) {
  Guid2Lid file;
  std::string error;
  ASSERT_TRUE(file.Parse("# comment\n0x0002c90300a00011 0x0005 0x0008\n\n", "f", &error));
  ASSERT_EQ(file.entries().size(), 1u);
  EXPECT_EQ(file.entries().at(0x0002c90300a00011ull), (std::pair<uint16_t, uint16_t>{5, 8}));
  EXPECT_EQ(file.Format(), "0x0002c90300a00011 0x0005 0x0008\n");
  EXPECT_FALSE(file.Parse("0x11 0x0005\n", "f", &error));
  EXPECT_NE(error.find("f:1:"), std::string::npos) << error;
  EXPECT_FALSE(file.Parse("0x11 0x9 0x8\n", "f", &error));     // top < base
  EXPECT_FALSE(file.Parse("0x11 0x1 0xc000\n", "f", &error));  // multicast
  EXPECT_FALSE(file.Parse("0x11 0x1 0x1 junk\n", "f", &error));
  EXPECT_TRUE(file.entries().empty());
  EXPECT_TRUE(file.Load("/nonexistent-dir-softib/guid2lid", &error));  // first start
}

}  // namespace
}  // namespace softib::sm
