// Fabric → host, bytes in and bytes out written by hand, and round trips host → wire → host.
#include <gtest/gtest.h>

#include <string>

#include "softib/ipoib/translate.h"
#include "translate_test_util.h"

namespace softib::ipoib {
namespace {

using testing::Frame;
using testing::GidOf;
using testing::Hex;

constexpr const char* kLocalHwHex = "00 000048 fe80000000000000 0002c90300a1b2c3";
constexpr const char* kPeerHwHex = "00 000051 fe80000000000000 0002c90300d4e5f6";
constexpr const char* kPeerMacText = "de7663f6fe2f";

std::string Join(std::initializer_list<std::string> parts) {
  std::string out;
  for (const auto& p : parts) out += p + " ";
  return out;
}

RxSource Unicast() {  // from the peer, no GRH
  RxSource s;
  s.qpn = 0x51;
  s.slid = testing::kPeerLid;
  return s;
}
RxSource ToGroup(const Gid& mgid) {  // from the peer through a multicast group
  RxSource s = Unicast();
  s.has_grh = true;
  s.sgid = testing::PeerHw().gid;
  s.dgid = mgid;
  return s;
}

class ToHost : public ::testing::Test {
 protected:
  RxResult Run(testing::Framed& f, const RxSource& source) {
    return TranslateToHost(f.buffer, f.offset, f.length, source, local_, table_);
  }
  LocalIdentity local_ = testing::Local();
  NeighbourTable table_;
};

TEST_F(ToHost, ArpRequestFromTheBroadcastGroupTeachesTheSenderAndIsBroadcast) {
  auto f = Frame(
      Hex(Join({"0806 0000 0020 0800 14 04 0001", "80 000051 fe80000000000000 0002c90300d4e5f6",
                "c6120002 0000000000000000000000000000000000000000 c6120001"})));
  const RxResult r = Run(f, ToGroup(BroadcastMgid(0xFFFF)));
  ASSERT_EQ(r.drop, Drop::kNone);
  ASSERT_NE(r.neighbour, nullptr);
  EXPECT_EQ(r.neighbour->mac, testing::kPeerMac);
  EXPECT_TRUE(r.neighbour->hw.connected());  // the 'C' it announced
  EXPECT_EQ(r.neighbour->lid, testing::kPeerLid);
  EXPECT_EQ(r.offset, f.offset - 10);
  EXPECT_EQ(f.Out(r.offset, r.length),
            Hex(Join({"ffffffffffff", kPeerMacText, "0806 0001 0800 06 04 0001", kPeerMacText,
                      "c6120002 000000000000 c6120001"})));
}

TEST_F(ToHost, ArpReplyUnicastNamesUsByOurMac) {
  auto f = Frame(Hex(
      Join({"0806 0000 0020 0800 14 04 0002", kPeerHwHex, "c6120002", kLocalHwHex, "c6120001"})));
  const RxResult r = Run(f, Unicast());
  ASSERT_EQ(r.drop, Drop::kNone);
  EXPECT_EQ(f.Out(r.offset, r.length),
            Hex(Join({"020000000001", kPeerMacText, "0806 0001 0800 06 04 0002", kPeerMacText,
                      "c6120002 020000000001 c6120001"})));
  EXPECT_EQ(table_.size(), 1u);
  EXPECT_EQ(table_.FindBySource(testing::kPeerLid, 0x51), r.neighbour);
}

TEST_F(ToHost, ArpThatIsNotIpoibOrNotFromItsSenderIsBadArp) {
  // Hardware type 1 with 20-byte addresses.
  auto f1 = Frame(Hex(Join({"0806 0000 0001 0800 14 04 0001", kPeerHwHex, "c6120002",
                            "0000000000000000000000000000000000000000 c6120001"})));
  EXPECT_EQ(Run(f1, Unicast()).drop, Drop::kBadArp);
  // A sender address whose QPN is not the packet's source QPN: forged.
  auto f2 = Frame(Hex(Join({"0806 0000 0020 0800 14 04 0001", kPeerHwHex, "c6120002",
                            "0000000000000000000000000000000000000000 c6120001"})));
  RxSource other = Unicast();
  other.qpn = 0x99;
  EXPECT_EQ(Run(f2, other).drop, Drop::kBadArp);
  // Or whose GID is not the GRH's source GID.
  auto f3 = Frame(Hex(Join({"0806 0000 0020 0800 14 04 0001", kPeerHwHex, "c6120002",
                            "0000000000000000000000000000000000000000 c6120001"})));
  RxSource spoofed = ToGroup(BroadcastMgid(0xFFFF));
  spoofed.sgid[15] ^= 1;
  EXPECT_EQ(Run(f3, spoofed).drop, Drop::kBadArp);
  EXPECT_EQ(table_.size(), 0u);
  // 55 bytes of IPoIB ARP.
  auto f4 = Frame(Hex(Join({"0806 0000 0020 0800 14 04 0001", kPeerHwHex, "c6120002",
                            "0000000000000000000000000000000000000000 c61200"})));
  EXPECT_EQ(Run(f4, Unicast()).drop, Drop::kRunt);
}

const std::string kIpv4UdpIn =
    "4500 0020 0001 0000 4011 0000 c6120002 c6120001 0400 0007 000c 0000 61626364";

TEST_F(ToHost, Ipv4UnicastFromAKnownNeighbourIsOurs) {
  table_.Learn(testing::PeerHw(), testing::kPeerLid);
  auto f = Frame(Hex(Join({"0800 0000", kIpv4UdpIn})));
  const RxResult r = Run(f, Unicast());
  ASSERT_EQ(r.drop, Drop::kNone);
  EXPECT_EQ(f.Out(r.offset, r.length),
            Hex(Join({"020000000001", kPeerMacText, "0800", kIpv4UdpIn})));
}

TEST_F(ToHost, Ipv4FromAnUnknownSourceWithoutGrhHasNoNeighbour) {
  auto f = Frame(Hex(Join({"0800 0000", kIpv4UdpIn})));
  EXPECT_EQ(Run(f, Unicast()).drop, Drop::kNoNeighbour);
}

TEST_F(ToHost, MulticastGetsTheGroupMacFromTheIpDestinationAndLearnsTheSender) {
  const std::string ip =
      "4500 0020 0002 0000 0111 0000 c6120002 ef810101 0400 0007 000c 0000 61626364";
  auto f = Frame(Hex(Join({"0800 0000", ip})));
  const RxResult r = Run(f, ToGroup(Ipv4MulticastMgid(0xEF810101, 0xFFFF)));
  ASSERT_EQ(r.drop, Drop::kNone);
  EXPECT_EQ(f.Out(r.offset, r.length), Hex(Join({"01005e010101", kPeerMacText, "0800", ip})));
  EXPECT_EQ(table_.size(), 1u);

  const std::string ip6 =
      "6000 0000 0008 11 40 fe800000000000000000000000000002 ff020000000000000000000000000001"
      " 0222 0223 0008 0000";
  auto f6 = Frame(Hex(Join({"86dd 0000", ip6})));
  const Gid all_nodes = GidOf("ff02 0000 0000 0000 0000 0000 0000 0001");
  const RxResult r6 = Run(f6, ToGroup(Ipv6MulticastMgid(all_nodes, 0xFFFF)));
  ASSERT_EQ(r6.drop, Drop::kNone);
  EXPECT_EQ(f6.Out(r6.offset, r6.length), Hex(Join({"333300000001", kPeerMacText, "86dd", ip6})));
}

TEST_F(ToHost, TheBroadcastGroupGivesTheBroadcastMac) {
  const std::string ip =
      "4500 0020 0003 0000 4011 0000 c6120002 ffffffff 0044 0043 000c 0000 61626364";
  auto f = Frame(Hex(Join({"0800 0000", ip})));
  const RxResult r = Run(f, ToGroup(BroadcastMgid(0xFFFF)));
  ASSERT_EQ(r.drop, Drop::kNone);
  EXPECT_EQ(f.Out(r.offset, r.length), Hex(Join({"ffffffffffff", kPeerMacText, "0800", ip})));
}

TEST_F(ToHost, OurOwnMulticastComingBackIsLoopedBack) {
  auto f = Frame(Hex(Join({"0800 0000", kIpv4UdpIn})));
  RxSource own = ToGroup(BroadcastMgid(0xFFFF));
  own.qpn = 0x48;
  own.sgid = local_.hw.gid;
  EXPECT_EQ(Run(f, own).drop, Drop::kLoopedBack);
}

TEST_F(ToHost, BadEncapsulationAndRuntsAreDropped) {
  table_.Learn(testing::PeerHw(), testing::kPeerLid);
  auto reserved = Frame(Hex(Join({"0800 0001", kIpv4UdpIn})));
  EXPECT_EQ(Run(reserved, Unicast()).drop, Drop::kBadEncap);
  auto unknown = Frame(Hex(Join({"88cc 0000", kIpv4UdpIn})));
  EXPECT_EQ(Run(unknown, Unicast()).drop, Drop::kBadEncap);
  auto three = Frame(Hex("0800 00"));
  EXPECT_EQ(Run(three, Unicast()).drop, Drop::kRunt);
  auto short_ip = Frame(Hex("0800 0000 4500 0020 0001"));
  EXPECT_EQ(Run(short_ip, Unicast()).drop, Drop::kRunt);
  // No room before the packet for the Ethernet header.
  auto no_room = Frame(Hex(Join({"0800 0000", kIpv4UdpIn})), 9);
  EXPECT_EQ(Run(no_room, Unicast()).drop, Drop::kRunt);
}

// Neighbour advertisement fe80::2 → fe80::1 (solicited, override) with the peer's target
// link-layer address: IPoIB option (checksum 0x6b67) → Ethernet option (0xd97e).
TEST_F(ToHost, NeighbourAdvertisementOptionBecomesTheEthernetOneWithItsChecksum) {
  const std::string na_ib =
      "6000 0000 0030 3a ff fe800000000000000000000000000002 fe800000000000000000000000000001"
      " 88 00 6b67 60000000 fe800000000000000000000000000002 02 03 0000 "
      "00 000051 fe80000000000000 0002c90300d4e5f6";
  const std::string na_eth =
      "6000 0000 0020 3a ff fe800000000000000000000000000002 fe800000000000000000000000000001"
      " 88 00 d97e 60000000 fe800000000000000000000000000002 02 01 de7663f6fe2f";
  auto f = Frame(Hex(Join({"86dd 0000", na_ib})));
  const RxResult r = Run(f, Unicast());
  ASSERT_EQ(r.drop, Drop::kNone);
  EXPECT_EQ(f.Out(r.offset, r.length), Hex(Join({"020000000001", kPeerMacText, "86dd", na_eth})));
  ASSERT_NE(r.neighbour, nullptr);
  EXPECT_EQ(r.neighbour->lid, testing::kPeerLid);
}

TEST_F(ToHost, NdWithAnEthernetSizedOptionIsBadNd) {
  const std::string na =
      "6000 0000 0020 3a ff fe800000000000000000000000000002 fe800000000000000000000000000001"
      " 88 00 0000 60000000 fe800000000000000000000000000002 02 01 de7663f6fe2f";
  table_.Learn(testing::PeerHw(), testing::kPeerLid);
  auto f = Frame(Hex(Join({"86dd 0000", na})));
  EXPECT_EQ(Run(f, Unicast()).drop, Drop::kBadNd);
}

// host A → wire → host B: the same frame, with the MACs each host sees.
TEST(RoundTrip, Ipv4AndNeighbourSolicitationCrossTheLinkUnchangedButForMacs) {
  const LocalIdentity a = testing::Local();
  const LocalIdentity b = testing::PeerIdentity();
  NeighbourTable a_table;
  NeighbourTable b_table;
  const Mac b_in_a = a_table.Learn(b.hw, 9)->mac;

  const std::string ip =
      "4500 0020 0001 0000 4011 0000 c6120001 c6120002 0400 0007 000c 0000 61626364";
  std::vector<uint8_t> frame = Hex(Join({"020000000001 0800", ip}));
  frame.insert(frame.begin(), b_in_a.begin(), b_in_a.end());
  auto f = Frame(frame);
  const TxResult tx = TranslateFromHost(f.buffer, f.offset, f.length, a, a_table);
  ASSERT_EQ(tx.drop, Drop::kNone);
  RxSource from_a;
  from_a.qpn = a.hw.qpn;
  from_a.slid = 3;
  from_a.has_grh = true;  // unicast with a GRH: the sender is learnt from it
  from_a.sgid = a.hw.gid;
  from_a.dgid = b.hw.gid;
  const RxResult rx = TranslateToHost(f.buffer, tx.offset, tx.length, from_a, b, b_table);
  ASSERT_EQ(rx.drop, Drop::kNone);
  const Mac a_in_b = DeriveMac(a.hw);
  std::vector<uint8_t> expected(b.mac.begin(), b.mac.end());
  expected.insert(expected.end(), a_in_b.begin(), a_in_b.end());
  const auto rest = Hex(Join({"0800", ip}));
  expected.insert(expected.end(), rest.begin(), rest.end());
  EXPECT_EQ(f.Out(rx.offset, rx.length), expected);

  // ND: A's solicitation reaches B with A's MAC as B knows it in the option.
  const std::string ns_head =
      "6000 0000 0020 3a ff fe800000000000000000000000000001 ff0200000000000000000001ff000002";
  auto ns = Frame(Hex(Join({"3333ff000002 020000000001 86dd", ns_head,
                            "87 00 7a97 00000000 fe800000000000000000000000000002 01 01 "
                            "020000000001"})));
  const TxResult ns_tx = TranslateFromHost(ns.buffer, ns.offset, ns.length, a, a_table);
  ASSERT_EQ(ns_tx.drop, Drop::kNone);
  from_a.dgid = ns_tx.mgid;
  const RxResult ns_rx = TranslateToHost(ns.buffer, ns_tx.offset, ns_tx.length, from_a, b, b_table);
  ASSERT_EQ(ns_rx.drop, Drop::kNone);
  // Same bytes as A sent but for the source MAC and the option's address (and checksum).
  std::vector<uint8_t> got = ns.Out(ns_rx.offset, ns_rx.length);
  ASSERT_EQ(got.size(), 14u + 40 + 32);
  EXPECT_EQ(std::vector<uint8_t>(got.begin() + 6, got.begin() + 12),
            std::vector<uint8_t>(a_in_b.begin(), a_in_b.end()));
  EXPECT_EQ(std::vector<uint8_t>(got.end() - 6, got.end()),
            std::vector<uint8_t>(a_in_b.begin(), a_in_b.end()));
  EXPECT_EQ(std::vector<uint8_t>(got.begin() + 14, got.begin() + 54), Hex(ns_head));
}

}  // namespace
}  // namespace softib::ipoib
