// DHCP over InfiniBand (RFC 4390), bytes written by hand: the IPv4 + UDP headers and the BOOTP
// fixed fields (RFC 2131 §2) of what udhcpc and dnsmasq send, the checksums worked out apart
// from the code under test. Local and peer are translate_test_util.h's.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "softib/ipoib/translate.h"
#include "translate_test_util.h"

namespace softib::ipoib {
namespace {

using testing::Frame;
using testing::Hex;

// IPv4 + UDP header (28 bytes), op .. chaddr (44 bytes), sname and file (192 zero bytes), the
// magic cookie and the options.
std::vector<uint8_t> Datagram(const std::string& headers, const std::string& fixed,
                              const std::string& cookie_and_options) {
  std::vector<uint8_t> out = Hex(headers);
  const auto f = Hex(fixed);
  out.insert(out.end(), f.begin(), f.end());
  out.insert(out.end(), 192, 0);
  const auto o = Hex(cookie_and_options);
  out.insert(out.end(), o.begin(), o.end());
  return out;
}

// udhcpc's DHCPDISCOVER: xid 3903f326, chaddr 02:00:00:00:00:01, option 53 = 1, end.
const char* const kDiscoverFixed =
    "01 01 06 00 3903f326 0000 0000 00000000 00000000 00000000 00000000"
    " 020000000001 00000000000000000000";
const char* const kWireClientFixed =  // htype 32, hlen 0, BROADCAST, chaddr zero
    "01 20 00 00 3903f326 0000 8000 00000000 00000000 00000000 00000000"
    " 00000000000000000000000000000000";
const std::vector<uint8_t> kDiscoverHost =
    Datagram("4510 0110 0000 0000 4011 79ce 00000000 ffffffff | 0044 0043 00fc da5d",
             kDiscoverFixed, "63825363 350101 ff");
// Option 61 first: ff, IAID 0000ffff, DUID-LL (0003), hardware type 32, the port GUID.
const std::vector<uint8_t> kDiscoverWire =
    Datagram("4510 0123 0000 0000 4011 79bb 00000000 ffffffff | 0044 0043 010f cf53",
             kWireClientFixed, "63825363 3d11 ff 0000ffff 0003 0020 0002c90300a1b2c3 350101 ff");

TEST(Dhcp, ClientIdentifierIsIaidAndGuidDuid) {
  const auto id = DhcpClientIdentifier(testing::Local());
  EXPECT_EQ(std::vector<uint8_t>(id.begin(), id.end()),
            Hex("ff 0000ffff 0003 0020 0002c90300a1b2c3"));
}

TEST(Dhcp, ClientMessageGetsIpoibFieldsAndClientIdentifier) {
  auto ip = kDiscoverHost;
  size_t length = ip.size();
  ip.resize(length + kDhcpOptionGrowth, 0xEE);
  ASSERT_EQ(RewriteDhcpFromHost(ip, &length, testing::Local()), Drop::kNone);
  ASSERT_EQ(length, kDiscoverWire.size());
  EXPECT_EQ(std::vector<uint8_t>(ip.begin(), ip.begin() + static_cast<ptrdiff_t>(length)),
            kDiscoverWire);
}

TEST(Dhcp, ZeroUdpChecksumStaysZero) {
  auto ip = kDiscoverHost;
  ip[26] = ip[27] = 0;
  size_t length = ip.size();
  ip.resize(length + kDhcpOptionGrowth, 0xEE);
  ASSERT_EQ(RewriteDhcpFromHost(ip, &length, testing::Local()), Drop::kNone);
  auto expected = kDiscoverWire;
  expected[26] = expected[27] = 0;
  EXPECT_EQ(std::vector<uint8_t>(ip.begin(), ip.begin() + static_cast<ptrdiff_t>(length)),
            expected);
}

TEST(Dhcp, NoRoomForTheOptionIsOversize) {
  auto ip = kDiscoverHost;
  size_t length = ip.size();
  ip.resize(length + kDhcpOptionGrowth - 1, 0xEE);
  EXPECT_EQ(RewriteDhcpFromHost(ip, &length, testing::Local()), Drop::kOversize);
  EXPECT_EQ(length, kDiscoverHost.size());
}

TEST(Dhcp, ClientIdentifierOfTheClientIsKept) {
  // Option 61 type 1 + the MAC, as a configured client sends it: nothing inserted.
  const auto host =
      Datagram("4510 0119 0000 0000 4011 79c5 00000000 ffffffff | 0044 0043 0105 d30a",
               kDiscoverFixed, "63825363 350101 3d07 01 020000000001 ff");
  const auto wire =
      Datagram("4510 0119 0000 0000 4011 79c5 00000000 ffffffff | 0044 0043 0105 5aec",
               kWireClientFixed, "63825363 350101 3d07 01 020000000001 ff");
  auto ip = host;
  size_t length = ip.size();
  ip.resize(length + kDhcpOptionGrowth, 0xEE);
  ASSERT_EQ(RewriteDhcpFromHost(ip, &length, testing::Local()), Drop::kNone);
  ASSERT_EQ(length, wire.size());
  EXPECT_EQ(std::vector<uint8_t>(ip.begin(), ip.begin() + static_cast<ptrdiff_t>(length)), wire);
}

// dnsmasq's DHCPOFFER of 198.18.0.10 from 198.18.0.1, echoing a client identifier.
const char* const kOfferWireFixed =
    "02 20 00 00 3903f326 0000 8000 00000000 c612000a 00000000 00000000"
    " 00000000000000000000000000000000";

TEST(Dhcp, ReplyForUsGetsEthernetFieldsAndOurMac) {
  auto ip = Datagram("4510 0129 0000 0000 4011 b3a1 c6120001 ffffffff | 0043 0044 0115 2f15",
                     kOfferWireFixed,
                     "63825363 350102 3604c6120001 3d11 ff0000ffff000300200002c90300a1b2c3 ff");
  RewriteDhcpToHost(ip, testing::PeerIdentity().mac, testing::Local());
  EXPECT_EQ(ip, Datagram("4510 0129 0000 0000 4011 b3a1 c6120001 ffffffff | 0043 0044 0115 2733",
                         "02 01 06 00 3903f326 0000 8000 00000000 c612000a 00000000 00000000"
                         " 020000000001 00000000000000000000",
                         "63825363 350102 3604c6120001 3d11 ff0000ffff000300200002c90300a1b2c3 "
                         "ff"));
}

TEST(Dhcp, ReplyForAnotherClientGetsNoMac) {
  auto ip = Datagram("4510 0129 0000 0000 4011 b3a1 c6120001 ffffffff | 0043 0044 0115 fbae",
                     kOfferWireFixed,
                     "63825363 350102 3604c6120001 3d11 ff0000ffff000300200002c90300d4e5f6 ff");
  RewriteDhcpToHost(ip, testing::PeerIdentity().mac, testing::Local());
  EXPECT_EQ(ip, Datagram("4510 0129 0000 0000 4011 b3a1 c6120001 ffffffff | 0043 0044 0115 f5cd",
                         "02 01 06 00 3903f326 0000 8000 00000000 c612000a 00000000 00000000"
                         " 00000000000000000000000000000000",
                         "63825363 350102 3604c6120001 3d11 ff0000ffff000300200002c90300d4e5f6 "
                         "ff"));
}

// Server side: the peer's DHCPREQUEST from the wire reaches dnsmasq as an Ethernet client
// with the peer's MAC; dnsmasq's DHCPACK goes back with the IPoIB fields.
TEST(Dhcp, ServerSeesTheWireClientAsEthernet) {
  const std::string options =
      "63825363 350103 3d11 ff0000ffff000300200002c90300d4e5f6 3204c612000a ff";
  auto ip = Datagram("4510 0129 0000 0000 4011 79b5 00000000 ffffffff | 0044 0043 0115 a7ba",
                     kWireClientFixed, options);
  RewriteDhcpToHost(ip, testing::kPeerMac, testing::Local());
  EXPECT_EQ(ip, Datagram("4510 0129 0000 0000 4011 79b5 00000000 ffffffff | 0044 0043 0115 613c",
                         "01 01 06 00 3903f326 0000 8000 00000000 00000000 00000000 00000000"
                         " de7663f6fe2f 00000000000000000000",
                         options));
}

TEST(Dhcp, ServerReplyGetsIpoibFieldsAndNoOption) {
  const std::string options =
      "63825363 350105 3604c6120001 3d11 ff0000ffff000300200002c90300d4e5f6 ff";
  auto ip = Datagram("4510 0129 0000 0000 4011 b3a1 c6120001 ffffffff | 0043 0044 0115 b230",
                     "02 01 06 00 3903f326 0000 8000 00000000 c612000a 00000000 00000000"
                     " de7663f6fe2f 00000000000000000000",
                     options);
  size_t length = ip.size();
  const auto wire =
      Datagram("4510 0129 0000 0000 4011 b3a1 c6120001 ffffffff | 0043 0044 0115 f8ae",
               std::string("02 20 00 00 3903f326 0000 8000 00000000 c612000a 00000000 "
                           "00000000 00000000000000000000000000000000"),
               options);
  ASSERT_EQ(RewriteDhcpFromHost(ip, &length, testing::Local()), Drop::kNone);
  EXPECT_EQ(length, wire.size());
  EXPECT_EQ(ip, wire);
}

TEST(Dhcp, OtherUdpIsUntouched) {
  // The same bytes to port 53: not BOOTP.
  auto ip = kDiscoverHost;
  ip[22] = 0x00;
  ip[23] = 0x35;
  const auto before = ip;
  size_t length = ip.size();
  ip.resize(length + kDhcpOptionGrowth, 0xEE);
  ASSERT_EQ(RewriteDhcpFromHost(ip, &length, testing::Local()), Drop::kNone);
  EXPECT_EQ(length, before.size());
  RewriteDhcpToHost(std::span<uint8_t>(ip).first(length), testing::kPeerMac, testing::Local());
  EXPECT_EQ(std::vector<uint8_t>(ip.begin(), ip.begin() + static_cast<ptrdiff_t>(length)), before);
}

// Through the whole translation: udhcpc's broadcast frame becomes an IPoIB packet to the
// broadcast group 19 bytes longer; the peer's translation shows the server an Ethernet client.
TEST(Dhcp, DiscoverThroughBothTranslations) {
  std::vector<uint8_t> frame = Hex("ffffffffffff 020000000001 0800");
  frame.insert(frame.end(), kDiscoverHost.begin(), kDiscoverHost.end());
  auto f = Frame(frame);
  NeighbourTable table;
  const TxResult tx = TranslateFromHost(f.buffer, f.offset, f.length, testing::Local(), table);
  ASSERT_EQ(tx.drop, Drop::kNone);
  EXPECT_TRUE(tx.multicast);
  ASSERT_EQ(tx.length, kEncapBytes + kDiscoverWire.size());
  std::vector<uint8_t> expected = Hex("0800 0000");
  expected.insert(expected.end(), kDiscoverWire.begin(), kDiscoverWire.end());
  EXPECT_EQ(f.Out(tx.offset, tx.length), expected);

  // The server's side: the packet came to the broadcast group with a GRH from "local".
  std::vector<uint8_t> rx(64, 0);
  rx.insert(rx.end(), expected.begin(), expected.end());
  RxSource source;
  source.qpn = testing::Local().hw.qpn;
  source.slid = 3;
  source.has_grh = true;
  source.sgid = testing::Local().hw.gid;
  source.dgid = BroadcastMgid(0xFFFF);
  NeighbourTable server_table;
  const RxResult r =
      TranslateToHost(rx, 64, expected.size(), source, testing::PeerIdentity(), server_table);
  ASSERT_EQ(r.drop, Drop::kNone);
  ASSERT_NE(r.neighbour, nullptr);
  const size_t bootp = r.offset + kEthHeaderBytes + 28;
  EXPECT_EQ(rx[bootp + 1], 1);  // htype Ethernet
  EXPECT_EQ(rx[bootp + 2], 6);
  EXPECT_EQ(std::vector<uint8_t>(rx.begin() + static_cast<ptrdiff_t>(bootp + 28),
                                 rx.begin() + static_cast<ptrdiff_t>(bootp + 34)),
            std::vector<uint8_t>(r.neighbour->mac.begin(), r.neighbour->mac.end()));
}

}  // namespace
}  // namespace softib::ipoib
