// TopologyFromSubnet: what the SM found, written back as a topology, is the fabric it swept
// (GUIDs, types, descriptions, LIDs, links, widths and speeds), and it writes and reads
// back in ibnetdiscover's format.
#include <gtest/gtest.h>

#include "fabric/topology/generators.h"
#include "fabric/topology/ibnetdiscover_reader.h"
#include "fabric/topology/ibnetdiscover_writer.h"
#include "softib/sm/subnet_topology.h"

namespace softib::sm {
namespace {

void ExpectSameFabric(const fabric::Topology& want, const fabric::Topology& got) {
  ASSERT_EQ(got.nodes().size(), want.nodes().size());
  for (std::size_t i = 0; i < want.nodes().size(); ++i) {
    const fabric::Node& w = want.node(static_cast<fabric::NodeIndex>(i));
    const fabric::Node& g = got.node(static_cast<fabric::NodeIndex>(i));
    EXPECT_EQ(g.type, w.type) << w.name;
    EXPECT_EQ(g.guid, w.guid) << w.name;
    EXPECT_EQ(g.name, fabric::CanonicalName(w.type, w.guid));
    EXPECT_EQ(g.description, w.description) << w.name;
    EXPECT_EQ(g.num_ports, w.num_ports) << w.name;
    EXPECT_EQ(g.ports, w.ports) << w.name;  // GUIDs, LIDs and LMC of every port
  }
  fabric::Topology a = want, b = got;
  ASSERT_EQ(a.Validate(), "");
  ASSERT_EQ(b.Validate(), "");
  ASSERT_EQ(b.links().size(), a.links().size());
  for (const fabric::Link& l : a.links()) {
    const fabric::Link* other = b.LinkAt(l.a);
    ASSERT_NE(other, nullptr) << a.node(l.a.node).name << " port " << int(l.a.port);
    EXPECT_EQ(b.Peer(l.a), std::optional(l.b));
    EXPECT_EQ(other->width, l.width);
    EXPECT_EQ(other->speed, l.speed);
  }
}

TEST(SubnetTopology, DefaultFabricRoundTrips) {
  fabric::Topology t = fabric::DefaultTopology();
  ASSERT_EQ(t.Validate(), "");
  ExpectSameFabric(t, TopologyFromSubnet(SubnetFromTopology(t)));
}

TEST(SubnetTopology, FatTreeWithLidsWritesAndReadsBack) {
  std::optional<fabric::Topology> t = fabric::MakePreset("ft36");
  ASSERT_TRUE(t);
  // LIDs as an SM would leave them: switches and CA ports numbered densely, LMC 1 on CAs.
  uint16_t lid = 1;
  for (fabric::NodeIndex i = 0; i < t->nodes().size(); ++i) {
    fabric::Node& n = t->mutable_node(i);
    if (n.is_switch()) {
      n.ports[0].lid = lid++;
      continue;
    }
    for (uint8_t p = 1; p <= n.num_ports; ++p) {
      lid = static_cast<uint16_t>((lid + 1) & ~1);
      n.ports[p].lid = lid;
      n.ports[p].lmc = 1;
      lid += 2;
    }
  }
  ASSERT_EQ(t->Validate(), "");
  const fabric::Topology found = TopologyFromSubnet(SubnetFromTopology(*t));
  ExpectSameFabric(*t, found);

  const fabric::WriteResult written = fabric::WriteIbnetdiscover(found);
  ASSERT_TRUE(written.ok()) << written.error;
  const fabric::ReadResult read = fabric::ReadIbnetdiscover(written.text, "dump");
  ASSERT_TRUE(read.ok()) << read.error;
  ExpectSameFabric(*t, *read.topology);
}

TEST(SubnetTopology, UnprintableDescriptionsAreMadePrintable) {
  fabric::Topology t = fabric::DefaultTopology();
  ASSERT_EQ(t.Validate(), "");
  Subnet subnet = SubnetFromTopology(t);
  subnet.node(0).description = std::string("sw\"1\x01", 5);
  subnet.node(1).description.clear();
  const fabric::Topology found = TopologyFromSubnet(subnet);
  EXPECT_EQ(found.node(0).description, "sw?1?");
  EXPECT_EQ(found.node(1).description, "?");
  EXPECT_TRUE(fabric::WriteIbnetdiscover(found).ok());
}

}  // namespace
}  // namespace softib::sm
