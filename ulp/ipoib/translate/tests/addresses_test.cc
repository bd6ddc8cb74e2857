// The hardware address codec, the multicast GIDs of RFC 4391 §4, the derived MACs, the drop
// names and the neighbour table.
#include <gtest/gtest.h>

#include <array>
#include <set>
#include <string>

#include "softib/ipoib/translate.h"
#include "translate_test_util.h"

namespace softib::ipoib {
namespace {

using testing::GidOf;
using testing::Hex;

TEST(HwAddr, EncodesFlagsQpnAndGidAsRfc4391Lays) {
  HwAddr hw;
  hw.flags = HwAddr::kConnectedFlag;
  hw.qpn = 0x123456;
  hw.gid = GidOf("fe80 0000 0000 0000 0002 c903 00a1 b2c3");
  std::array<uint8_t, kHwAddrBytes> out{};
  EncodeHwAddr(hw, out);
  EXPECT_EQ(std::vector<uint8_t>(out.begin(), out.end()),
            Hex("80 123456 fe80000000000000 0002c90300a1b2c3"));
  const HwAddr back = DecodeHwAddr(out);
  EXPECT_EQ(back, hw);
  EXPECT_TRUE(back.connected());
}

TEST(HwAddr, DecodesAUdOnlyAddress) {
  const auto bytes = Hex("00 000048 fe80000000000000 0002c90300a1b2c3");
  const HwAddr hw = DecodeHwAddr(std::span<const uint8_t, kHwAddrBytes>(bytes.data(), 20));
  EXPECT_EQ(hw.flags, 0);
  EXPECT_FALSE(hw.connected());
  EXPECT_EQ(hw.qpn, 0x48u);
  EXPECT_EQ(hw.gid, GidOf("fe80 0000 0000 0000 0002 c903 00a1 b2c3"));
}

TEST(Mgid, BroadcastIsFf1sP401bPkeyFfffffff) {
  EXPECT_EQ(BroadcastMgid(0xFFFF), GidOf("ff12 401b ffff 0000 0000 0000 ffff ffff"));
  // A partition's P_Key gets the full-membership bit; the scope is the caller's.
  EXPECT_EQ(BroadcastMgid(0x0001, 5), GidOf("ff15 401b 8001 0000 0000 0000 ffff ffff"));
  EXPECT_TRUE(IsBroadcastMgid(GidOf("ff15 401b 8001 0000 0000 0000 ffff ffff"), 0x8001));
  EXPECT_FALSE(IsBroadcastMgid(GidOf("ff12 401b 8001 0000 0000 0000 ffff ffff"), 0xFFFF));
  EXPECT_FALSE(IsBroadcastMgid(GidOf("ff12 401b ffff 0000 0000 0000 0fff ffff"), 0xFFFF));
}

TEST(Mgid, Ipv4KeepsAllTwentyEightGroupBits) {
  // 239.129.1.1: its MAC 01:00:5e:01:01:01 loses bit 23; the MGID keeps it.
  EXPECT_EQ(Ipv4MulticastMgid(0xEF810101, 0xFFFF),
            GidOf("ff12 401b ffff 0000 0000 0000 0f81 0101"));
  EXPECT_EQ(Ipv4MulticastMgid(0xE00000FB, 0x8001, 8),
            GidOf("ff18 401b 8001 0000 0000 0000 0000 00fb"));
}

TEST(Mgid, Ipv6KeepsTheLowEightyBitsAndTheGroupScope) {
  const Gid group = GidOf("ff05 0000 0000 0000 1234 5678 0001 0003");
  EXPECT_EQ(Ipv6MulticastMgid(group, 0xFFFF), GidOf("ff15 601b ffff 0000 1234 5678 0001 0003"));
  const Gid solicited = GidOf("ff02 0000 0000 0000 0000 0001 ff00 0002");
  EXPECT_EQ(Ipv6MulticastMgid(solicited, 0x7FFF), GidOf("ff12 601b ffff 0000 0000 0001 ff00 0002"));
}

TEST(DeriveMac, IsLocallyAdministeredUnicastAndDeterministic) {
  EXPECT_EQ(DeriveMac(testing::PeerHw()), testing::kPeerMac);
  // The attempt changes the result; the flags do not (one endpoint, one MAC).
  HwAddr connected = testing::PeerHw();
  connected.flags = HwAddr::kConnectedFlag;
  EXPECT_EQ(DeriveMac(connected), testing::kPeerMac);
  EXPECT_NE(DeriveMac(testing::PeerHw(), 1), testing::kPeerMac);
  std::set<Mac> seen;
  for (uint32_t qpn = 1; qpn < 200; ++qpn) {
    HwAddr hw = testing::PeerHw();
    hw.qpn = qpn;
    const Mac mac = DeriveMac(hw);
    EXPECT_EQ(mac[0] & 0x03, 0x02) << "qpn " << qpn;
    seen.insert(mac);
  }
  EXPECT_EQ(seen.size(), 199u);
}

TEST(DropName, NamesEveryCause) {
  EXPECT_STREQ(DropName(Drop::kNone), "none");
  EXPECT_STREQ(DropName(Drop::kRunt), "runt");
  EXPECT_STREQ(DropName(Drop::kOversize), "oversize");
  EXPECT_STREQ(DropName(Drop::kUnknownEthertype), "unknown_ethertype");
  EXPECT_STREQ(DropName(Drop::kBadArp), "bad_arp");
  EXPECT_STREQ(DropName(Drop::kBadNd), "bad_nd");
  EXPECT_STREQ(DropName(Drop::kNoNeighbour), "no_neighbour");
  EXPECT_STREQ(DropName(Drop::kBadEncap), "bad_encap");
  EXPECT_STREQ(DropName(Drop::kSendQueueFull), "send_queue_full");
  EXPECT_STREQ(DropName(Drop::kLoopedBack), "looped_back");
  EXPECT_STREQ(DropName(Drop::kCount), "unknown");
}

TEST(NeighbourTable, LearnsOnceAndRefreshesFlagsAndLid) {
  NeighbourTable table;
  Neighbour* n = table.Learn(testing::PeerHw(), 0);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->mac, testing::kPeerMac);
  EXPECT_EQ(n->lid, 0);
  HwAddr connected = testing::PeerHw();
  connected.flags = HwAddr::kConnectedFlag;
  n = table.Learn(connected, testing::kPeerLid);
  EXPECT_EQ(table.size(), 1u);
  EXPECT_TRUE(n->hw.connected());
  EXPECT_EQ(n->lid, testing::kPeerLid);
  // A later learn without a LID keeps the known one.
  n = table.Learn(testing::PeerHw(), 0);
  EXPECT_EQ(n->lid, testing::kPeerLid);
  EXPECT_FALSE(n->hw.connected());
  EXPECT_EQ(table.FindByMac(testing::kPeerMac), n);
  EXPECT_EQ(table.FindByHw(testing::PeerHw()), n);
  EXPECT_EQ(table.FindBySource(testing::kPeerLid, 0x51), n);
  EXPECT_EQ(table.FindBySource(testing::kPeerLid, 0x52), nullptr);
  EXPECT_EQ(table.FindBySource(8, 0x51), nullptr);
  EXPECT_EQ(table.FindBySource(0, 0x51), nullptr);
}

// Every endpoint gets the same first candidate: the second must get another MAC.
Mac CollidingDeriver(const HwAddr&, uint32_t attempt) {
  return {0x02, 0, 0, 0, 0, static_cast<uint8_t>(0x10 + attempt)};
}
Mac ConstantDeriver(const HwAddr&, uint32_t) { return {0x02, 0, 0, 0, 0, 0x99}; }

TEST(NeighbourTable, ResolvesCollisionsSoOneMacNamesOneAddress) {
  NeighbourTable table(&CollidingDeriver);
  HwAddr a = testing::PeerHw();
  HwAddr b = testing::PeerHw();
  b.qpn = 0x52;
  HwAddr c = testing::PeerHw();
  c.gid[15] ^= 1;
  const Mac mac_a = table.Learn(a, 1)->mac;
  const Mac mac_b = table.Learn(b, 2)->mac;
  const Mac mac_c = table.Learn(c, 3)->mac;
  EXPECT_EQ(mac_a, (Mac{0x02, 0, 0, 0, 0, 0x10}));
  EXPECT_EQ(mac_b, (Mac{0x02, 0, 0, 0, 0, 0x11}));
  EXPECT_EQ(mac_c, (Mac{0x02, 0, 0, 0, 0, 0x12}));
  EXPECT_EQ(table.FindByMac(mac_b)->hw.qpn, 0x52u);
  table.Forget(mac_a);
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.FindByHw(a), nullptr);
  // The freed MAC goes to the next new address.
  HwAddr d = testing::PeerHw();
  d.qpn = 0x99;
  EXPECT_EQ(table.Learn(d, 0)->mac, mac_a);
  EXPECT_EQ(table.Snapshot().size(), 3u);
  table.Clear();
  EXPECT_EQ(table.size(), 0u);
}

TEST(NeighbourTable, GivesUpWhenEveryCandidateIsTaken) {
  NeighbourTable table(&ConstantDeriver);
  ASSERT_NE(table.Learn(testing::PeerHw(), 0), nullptr);
  HwAddr other = testing::PeerHw();
  other.qpn = 0x77;
  EXPECT_EQ(table.Learn(other, 0), nullptr);
  EXPECT_EQ(table.size(), 1u);
}

}  // namespace
}  // namespace softib::ipoib
