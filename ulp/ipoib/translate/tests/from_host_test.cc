// Host → fabric, bytes in and bytes out, written by hand from RFC 826, RFC 4391 and RFC 4861.
#include <gtest/gtest.h>

#include <string>

#include "softib/ipoib/translate.h"
#include "translate_test_util.h"

namespace softib::ipoib {
namespace {

using testing::Frame;
using testing::GidOf;
using testing::Hex;

constexpr const char* kLocalHw = "00 000048 fe80000000000000 0002c90300a1b2c3";
constexpr const char* kPeerHw = "00 000051 fe80000000000000 0002c90300d4e5f6";
constexpr const char* kPeerMacHex = "de7663f6fe2f";

std::string Cat(std::initializer_list<std::string> parts) {
  std::string out;
  for (const auto& p : parts) out += p + " ";
  return out;
}

class FromHost : public ::testing::Test {
 protected:
  TxResult Run(testing::Framed& f) {
    return TranslateFromHost(f.buffer, f.offset, f.length, local_, table_);
  }
  void LearnPeer() { ASSERT_NE(table_.Learn(testing::PeerHw(), testing::kPeerLid), nullptr); }
  LocalIdentity local_ = testing::Local();
  NeighbourTable table_;
};

// What Linux sends for `arping 198.18.0.2` from 198.18.0.1 (Ethernet ARP request, RFC 826).
const std::string kArpRequestFrame =
    "ffffffffffff 020000000001 0806"
    " 0001 0800 06 04 0001 020000000001 c6120001 000000000000 c6120002";

TEST_F(FromHost, ArpRequestBecomesIpoibArpToTheBroadcastGroup) {
  auto f = Frame(Hex(kArpRequestFrame));
  const TxResult r = Run(f);
  ASSERT_EQ(r.drop, Drop::kNone);
  EXPECT_TRUE(r.multicast);
  EXPECT_EQ(r.mgid, GidOf("ff12 401b ffff 0000 0000 0000 ffff ffff"));
  EXPECT_EQ(r.neighbour, nullptr);
  EXPECT_EQ(r.offset, f.offset + 10);
  // RFC 4391 §9.1.1: hardware type 32, length 20, our address as sender, target zero.
  EXPECT_EQ(f.Out(r.offset, r.length),
            Hex(Cat({"0806 0000 0020 0800 14 04 0001", kLocalHw, "c6120001",
                     "0000000000000000000000000000000000000000 c6120002"})));
}

TEST_F(FromHost, ArpRequestWithConnectedModeCarriesTheCFlag) {
  local_.hw.flags = HwAddr::kConnectedFlag;
  auto f = Frame(Hex(kArpRequestFrame));
  const TxResult r = Run(f);
  ASSERT_EQ(r.drop, Drop::kNone);
  EXPECT_EQ(f.buffer[r.offset + 4 + 8], 0x80);  // the sender address's first octet
}

TEST_F(FromHost, ArpReplyGoesUnicastToTheNeighbourNamedByTheDestination) {
  LearnPeer();
  auto f = Frame(Hex(Cat({kPeerMacHex, "020000000001 0806 0001 0800 06 04 0002 020000000001",
                          "c6120001", kPeerMacHex, "c6120002"})));
  const TxResult r = Run(f);
  ASSERT_EQ(r.drop, Drop::kNone);
  EXPECT_FALSE(r.multicast);
  ASSERT_NE(r.neighbour, nullptr);
  EXPECT_EQ(r.neighbour->hw.qpn, 0x51u);
  EXPECT_EQ(
      f.Out(r.offset, r.length),
      Hex(Cat({"0806 0000 0020 0800 14 04 0002", kLocalHw, "c6120001", kPeerHw, "c6120002"})));
}

TEST_F(FromHost, ArpReplyToAnUnknownMacHasNoNeighbour) {
  auto f = Frame(Hex(Cat({kPeerMacHex, "020000000001 0806 0001 0800 06 04 0002 020000000001",
                          "c6120001", kPeerMacHex, "c6120002"})));
  EXPECT_EQ(Run(f).drop, Drop::kNoNeighbour);
}

TEST_F(FromHost, MalformedAndForgedArpIsDropped) {
  // Hardware type 6 (IEEE 802), not Ethernet.
  auto bad_type =
      Frame(Hex("ffffffffffff 020000000001 0806 0006 0800 06 04 0001 020000000001 c6120001 "
                "000000000000 c6120002"));
  EXPECT_EQ(Run(bad_type).drop, Drop::kBadArp);
  // Operation 3 (RARP request).
  auto bad_op =
      Frame(Hex("ffffffffffff 020000000001 0806 0001 0800 06 04 0003 020000000001 c6120001 "
                "000000000000 c6120002"));
  EXPECT_EQ(Run(bad_op).drop, Drop::kBadArp);
  // A sender MAC that is not ours: forged.
  auto forged =
      Frame(Hex("ffffffffffff 020000000001 0806 0001 0800 06 04 0001 020000000009 c6120001 "
                "000000000000 c6120002"));
  EXPECT_EQ(Run(forged).drop, Drop::kBadArp);
  // 27 bytes of ARP.
  auto runt =
      Frame(Hex("ffffffffffff 020000000001 0806 0001 0800 06 04 0001 020000000001 c6120001 "
                "000000000000 c61200"));
  EXPECT_EQ(Run(runt).drop, Drop::kRunt);
}

// IPv4 UDP 198.18.0.1:1024 → 198.18.0.2:7, 4 bytes of data, padded by Ethernet to 60 bytes.
const std::string kIpv4Udp =
    "4500 0020 0001 0000 4011 0000 c6120001 c6120002 0400 0007 000c 0000 61626364";

TEST_F(FromHost, Ipv4UnicastGoesToTheNeighbourByMacWithoutEthernetPadding) {
  LearnPeer();
  auto f = Frame(Hex(
      Cat({kPeerMacHex, "020000000001 0800", kIpv4Udp, "000000000000000000000000000000000000"})));
  ASSERT_EQ(f.length, 14u + 32 + 18);
  const TxResult r = Run(f);
  ASSERT_EQ(r.drop, Drop::kNone);
  EXPECT_FALSE(r.multicast);
  ASSERT_NE(r.neighbour, nullptr);
  EXPECT_EQ(r.neighbour->mac, testing::kPeerMac);
  EXPECT_EQ(f.Out(r.offset, r.length), Hex(Cat({"0800 0000", kIpv4Udp})));
}

TEST_F(FromHost, UnicastToAnUnknownMacHasNoNeighbour) {
  auto f = Frame(Hex(Cat({"020000000077 020000000001 0800", kIpv4Udp})));
  EXPECT_EQ(Run(f).drop, Drop::kNoNeighbour);
}

TEST_F(FromHost, Ipv4MulticastGoesToTheGroupOfTheIpDestinationNotTheMac) {
  // To 239.129.1.1: the MAC 01:00:5e:01:01:01 is also 239.1.1.1's; the MGID is not.
  const std::string ip =
      "4500 0020 0002 0000 0111 0000 c6120001 ef810101 0400 0007 000c 0000 61626364";
  auto f = Frame(Hex(Cat({"01005e010101 020000000001 0800", ip})));
  const TxResult r = Run(f);
  ASSERT_EQ(r.drop, Drop::kNone);
  EXPECT_TRUE(r.multicast);
  EXPECT_EQ(r.mgid, GidOf("ff12 401b ffff 0000 0000 0000 0f81 0101"));
  EXPECT_EQ(f.Out(r.offset, r.length), Hex(Cat({"0800 0000", ip})));
}

TEST_F(FromHost, EthernetBroadcastGoesToTheBroadcastGroup) {
  // A DHCP-style limited broadcast 255.255.255.255.
  const std::string ip =
      "4500 0020 0003 0000 4011 0000 00000000 ffffffff 0044 0043 000c 0000 61626364";
  auto f = Frame(Hex(Cat({"ffffffffffff 020000000001 0800", ip})));
  const TxResult r = Run(f);
  ASSERT_EQ(r.drop, Drop::kNone);
  EXPECT_TRUE(r.multicast);
  EXPECT_EQ(r.mgid, BroadcastMgid(0xFFFF));
}

TEST_F(FromHost, Ipv6MulticastGoesToTheGroupWithItsScope) {
  // UDP to ff05::1:3 (site-local scope 5), payload length 8.
  const std::string ip6 =
      "6000 0000 0008 11 40 fe800000000000000000000000000001 ff050000000000000000000000010003"
      " 0222 0223 0008 0000";
  auto f = Frame(Hex(Cat({"333300010003 020000000001 86dd", ip6})));
  const TxResult r = Run(f);
  ASSERT_EQ(r.drop, Drop::kNone);
  EXPECT_TRUE(r.multicast);
  EXPECT_EQ(r.mgid, GidOf("ff15 601b ffff 0000 0000 0000 0001 0003"));
  EXPECT_EQ(f.Out(r.offset, r.length), Hex(Cat({"86dd 0000", ip6})));
}

// Neighbour solicitation fe80::1 → ff02::1:ff00:2 for fe80::2 with our source link-layer
// address: Ethernet option (8 bytes, checksum 0x7a97) → IPoIB option (24 bytes, 0x0153).
const std::string kNsEthernet =
    "6000 0000 0020 3a ff fe800000000000000000000000000001 ff0200000000000000000001ff000002"
    " 87 00 7a97 00000000 fe800000000000000000000000000002 01 01 020000000001";
const std::string kNsIpoib =
    "6000 0000 0030 3a ff fe800000000000000000000000000001 ff0200000000000000000001ff000002"
    " 87 00 0153 00000000 fe800000000000000000000000000002 01 03 0000 "
    "00 000048 fe80000000000000 0002c90300a1b2c3";

TEST_F(FromHost, NeighbourSolicitationOptionBecomesTheIpoibOneWithItsChecksum) {
  auto f = Frame(Hex(Cat({"3333ff000002 020000000001 86dd", kNsEthernet})));
  const TxResult r = Run(f);
  ASSERT_EQ(r.drop, Drop::kNone);
  EXPECT_TRUE(r.multicast);
  EXPECT_EQ(r.mgid, GidOf("ff12 601b ffff 0000 0000 0001 ff00 0002"));
  EXPECT_EQ(f.Out(r.offset, r.length), Hex(Cat({"86dd 0000", kNsIpoib})));
}

TEST_F(FromHost, NdOptionsThatCannotBeTranslatedAreDropped) {
  // A source link-layer address that is neither ours nor a neighbour's.
  std::string unknown = kNsEthernet;
  unknown.replace(unknown.size() - 12, 12, "020000000099");
  auto f1 = Frame(Hex(Cat({"3333ff000002 020000000001 86dd", unknown})));
  EXPECT_EQ(Run(f1).drop, Drop::kBadNd);
  // An option of length 0.
  std::string zero = kNsEthernet;
  zero.replace(zero.size() - 15, 2, "00");
  auto f2 = Frame(Hex(Cat({"3333ff000002 020000000001 86dd", zero})));
  EXPECT_EQ(Run(f2).drop, Drop::kBadNd);
  // A link-layer option of length 2 (16 bytes) on Ethernet.
  const std::string long_option =
      "6000 0000 0028 3a ff fe800000000000000000000000000001 ff0200000000000000000001ff000002"
      " 87 00 0000 00000000 fe800000000000000000000000000002 01 02 020000000001 0000000000000000";
  auto f3 = Frame(Hex(Cat({"3333ff000002 020000000001 86dd", long_option})));
  EXPECT_EQ(Run(f3).drop, Drop::kBadNd);
}

TEST_F(FromHost, RuntsOversizeAndUnknownEthertypesAreDropped) {
  auto short_frame = Frame(Hex("ffffffffffff 020000000001 08"));
  EXPECT_EQ(Run(short_frame).drop, Drop::kRunt);
  auto lldp = Frame(Hex("0180c200000e 020000000001 88cc 0000"));
  EXPECT_EQ(Run(lldp).drop, Drop::kUnknownEthertype);
  auto vlan = Frame(Hex(Cat({"ffffffffffff 020000000001 8100 0001 0800", kIpv4Udp})));
  EXPECT_EQ(Run(vlan).drop, Drop::kUnknownEthertype);
  // An IPv4 header that claims more than the frame holds.
  auto truncated =
      Frame(Hex("ffffffffffff 020000000001 0800 4500 0040 0001 0000 4011 0000 c6120001 ffffffff"));
  EXPECT_EQ(Run(truncated).drop, Drop::kRunt);
  // 2045 bytes of IPv4 over an MTU of 2044.
  LearnPeer();
  std::vector<uint8_t> big = Hex(
      Cat({kPeerMacHex, "020000000001 0800", "4500 07fd 0001 0000 4011 0000 c6120001 c6120002"}));
  big.resize(14 + 2045, 0x5a);
  auto oversize = Frame(big);
  EXPECT_EQ(Run(oversize).drop, Drop::kOversize);
  big[14 + 3] = 0xfc;  // 2044: fits
  big.resize(14 + 2044);
  auto fits = Frame(big);
  const TxResult r = Run(fits);
  EXPECT_EQ(r.drop, Drop::kNone);
  EXPECT_EQ(r.length, 4u + 2044);
  // The frame outside the buffer.
  std::vector<uint8_t> tiny(10);
  EXPECT_EQ(TranslateFromHost(tiny, 4, 20, local_, table_).drop, Drop::kRunt);
}

}  // namespace
}  // namespace softib::ipoib
