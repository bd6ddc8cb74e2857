// A topology built into a fabric with LIDs, min-hop LFTs and active ports, checked by
// walking every LID pair through the programmed tables and by sending real packets.
#include "softib/fabric/static_subnet.h"

#include <gtest/gtest.h>

#include <set>

#include "fabric/topology/generators.h"
#include "fabric_fixture.h"
#include "hca/device/packet.h"

namespace softib::fabric {
namespace {

struct Built {
  Topology topology;
  Fabric fabric{1};
  StaticSubnet subnet;
  std::vector<std::vector<std::vector<uint8_t>>> got;  // per CA port: packets delivered
};

std::unique_ptr<Built> Build(Topology topology) {
  auto b = std::make_unique<Built>();
  b->topology = std::move(topology);
  EXPECT_EQ(b->topology.Validate(), "");
  Built* raw = b.get();
  const std::string error = BuildStaticSubnet(
      b->topology, b->fabric,
      [raw](NodeIndex, uint8_t, uint16_t) {
        const auto index = static_cast<uint32_t>(raw->got.size());
        raw->got.emplace_back();
        return raw->fabric.AddCaPort([raw, index](std::span<const uint8_t> p) {
          raw->got[index].emplace_back(p.begin(), p.end());
        });
      },
      &b->subnet);
  EXPECT_EQ(error, "");
  return b;
}

// Walks LID `dlid` from switch node `from` through the LFTs: the number of switches
// crossed, or -1 on a loop or a hole.
int Walk(const Built& b, NodeIndex from, uint16_t dlid) {
  NodeIndex at = from;
  for (int hops = 1; hops <= 64; ++hops) {
    const Switch& sw =
        const_cast<Fabric&>(b.fabric).switch_at(static_cast<uint32_t>(b.subnet.switch_index[at]));
    const uint8_t port = sw.lft_entry(dlid);
    if (port == 0) return dlid == b.subnet.lid[at][0] ? hops : -1;
    if (port == 0xFF) return -1;
    const auto peer = b.topology.Peer({at, port});
    if (!peer) return -1;
    if (!b.topology.node(peer->node).is_switch())
      return b.subnet.lid[peer->node][peer->port] == dlid ? hops : -1;
    at = peer->node;
  }
  return -1;  // a loop
}

TEST(StaticSubnet, EveryLidPairOfAFatTreeHasAMinHopPathAndNoLoop) {
  auto b = Build(*MakePreset("ft36"));  // 36 switches, 576 HCAs
  const Topology& t = b->topology;
  std::set<uint16_t> lids;
  for (NodeIndex i = 0; i < t.nodes().size(); ++i) {
    for (uint16_t lid : b->subnet.lid[i]) {
      if (lid == 0) continue;
      EXPECT_TRUE(lids.insert(lid).second) << "LID " << lid << " twice";
    }
  }
  std::size_t ports = 0;
  for (const Node& node : t.nodes()) ports += node.is_switch() ? 1 : node.num_ports;
  EXPECT_EQ(lids.size(), ports);
  // Routed: switch LIDs and the LIDs of cabled CA ports.
  std::vector<uint16_t> routed;
  for (NodeIndex i = 0; i < t.nodes().size(); ++i) {
    for (uint8_t p = 0; p < b->subnet.lid[i].size(); ++p) {
      const bool cabled_ca_port = p != 0 && b->subnet.ca_port[i][p] >= 0;
      if ((t.node(i).is_switch() && p == 0) || cabled_ca_port)
        routed.push_back(b->subnet.lid[i][p]);
    }
  }
  int walks = 0;
  for (NodeIndex s = 0; s < t.nodes().size(); ++s) {
    if (!t.node(s).is_switch()) continue;
    for (uint16_t lid : routed) {
      const int hops = Walk(*b, s, lid);
      ASSERT_GT(hops, 0) << t.node(s).name << " -> LID " << lid;
      ASSERT_LE(hops, 3) << "a 2-level fat tree is at most leaf-spine-leaf";
      ++walks;
    }
  }
  EXPECT_EQ(walks, 36 * static_cast<int>(routed.size()));
  EXPECT_GE(routed.size(), 36u + 576u);
}

TEST(StaticSubnet, ThePacketsOfTheDefaultFabricReachTheirLidAcrossItsSwitches) {
  auto b = Build(DefaultTopology());
  const Topology& t = b->topology;
  std::vector<std::pair<int32_t, uint16_t>> ca_ports;  // fabric CA port, LID
  for (NodeIndex i = 0; i < t.nodes().size(); ++i) {
    for (uint8_t p = 1; p < b->subnet.ca_port[i].size(); ++p) {
      if (b->subnet.ca_port[i][p] >= 0)
        ca_ports.push_back({b->subnet.ca_port[i][p], b->subnet.lid[i][p]});
    }
  }
  ASSERT_EQ(ca_ports.size(), 4u);  // 4 hosts, port 1 cabled
  for (const auto& [from, slid] : ca_ports) {
    for (const auto& [to, dlid] : ca_ports) {
      if (from == to) continue;
      const std::vector<uint8_t> packet = testing::UdPacket(slid, dlid, 0x77);
      (void)b->fabric.ca_link(static_cast<uint32_t>(from)).Transmit(packet);
      b->fabric.Pump();
      ASSERT_FALSE(b->got[static_cast<std::size_t>(to)].empty()) << slid << " -> " << dlid;
      EXPECT_EQ(b->got[static_cast<std::size_t>(to)].back(), packet);
    }
  }
  std::size_t total = 0;
  for (const auto& port : b->got) total += port.size();
  EXPECT_EQ(total, 12u);  // each of 4 ports heard from the 3 others, nothing else
}

}  // namespace
}  // namespace softib::fabric
