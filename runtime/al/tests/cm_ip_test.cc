// rdma_cm IP addressing over the CM (cm/cm_ip.h): the CMA header's bytes written by hand
// from Linux rdma_cm's layout (version 0, IP version in the high nibble, source port,
// 16-byte source and destination addresses, IPv4 in the last 4), the port-space service
// IDs, malformed headers refused; and a REQ whose private data carries an IPv4 header
// reaching the listen bound to its destination port, the addresses decoded from it.
#include "runtime/al/src/cm/cm_ip.h"
#include "cm_client.h"

namespace softib::testing::cm_ip_test {
namespace {

using al::cm::DecodeCmaHeader;
using al::cm::EncodeCmaHeader;
using al::cm::IpConnection;
using al::cm::ParseRdmaIpServiceId;
using al::cm::RdmaIpServiceId;
using al::cm::RdmaPortSpace;

// 192.168.1.10:50000 -> 192.168.1.20, by hand.
constexpr std::array<uint8_t, 36> kIpv4Header = {
    0x00, 0x40, 0xC3, 0x50,                                                   // v0, IPv4, 50000
    0,    0,    0,    0,    0, 0, 0, 0, 0, 0, 0, 0, 0xC0, 0xA8, 0x01, 0x0A,   // source
    0,    0,    0,    0,    0, 0, 0, 0, 0, 0, 0, 0, 0xC0, 0xA8, 0x01, 0x14};  // destination

IpConnection Ipv4Connection() {
  IpConnection c;
  c.ip_version = 4;
  c.source.address = {0xC0, 0xA8, 0x01, 0x0A};
  c.source.port = 50000;
  c.destination.address = {0xC0, 0xA8, 0x01, 0x14};
  c.destination.port = 20000;
  return c;
}

TEST(CmIp, ServiceIdsOfThePortSpaces) {
  EXPECT_EQ(RdmaIpServiceId(RdmaPortSpace::TCP, 20000), 0x0000000001064E20u);
  EXPECT_EQ(RdmaIpServiceId(RdmaPortSpace::UDP, 4791), 0x00000000011112B7u);
  EXPECT_EQ(RdmaIpServiceId(RdmaPortSpace::IB, 1), 0x00000000013F0001u);
  const auto tcp = ParseRdmaIpServiceId(0x0000000001064E20);
  ASSERT_TRUE(tcp);
  EXPECT_EQ(tcp->space, RdmaPortSpace::TCP);
  EXPECT_EQ(tcp->port, 20000);
  EXPECT_FALSE(ParseRdmaIpServiceId(0x0000000001074E20));  // no such port space
  EXPECT_FALSE(ParseRdmaIpServiceId(0x1000000001064E20));  // outside the IP CM range
  EXPECT_FALSE(ParseRdmaIpServiceId(0x0000000012345678));
}

TEST(CmIp, HeaderBytesBothWays) {
  EXPECT_EQ(EncodeCmaHeader(Ipv4Connection()), kIpv4Header);
  const auto v4 = DecodeCmaHeader(0x0000000001064E20, kIpv4Header);
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->ip_version, 4);
  EXPECT_EQ(v4->source.address, Ipv4Connection().source.address);
  EXPECT_EQ(v4->source.port, 50000);
  EXPECT_EQ(v4->destination.address, Ipv4Connection().destination.address);
  EXPECT_EQ(v4->destination.port, 20000);  // from the service ID

  // fe80::2:c903:0:1 port 1234 -> fe80::2:c903:0:2, UDP port space 4791.
  std::array<uint8_t, 40> v6_bytes = {0x00, 0x60, 0x04, 0xD2};
  const std::array<uint8_t, 16> src = {0xFE, 0x80, 0,    0,    0, 0, 0, 0,
                                       0,    0x02, 0xC9, 0x03, 0, 0, 0, 1};
  std::array<uint8_t, 16> dst = src;
  dst[15] = 2;
  std::copy(src.begin(), src.end(), v6_bytes.begin() + 4);
  std::copy(dst.begin(), dst.end(), v6_bytes.begin() + 20);
  v6_bytes[36] = 0xEE;  // the consumer's own private data follows the header
  const auto v6 = DecodeCmaHeader(0x00000000011112B7, v6_bytes);
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->ip_version, 6);
  EXPECT_EQ(v6->source.address, src);
  EXPECT_EQ(v6->source.port, 1234);
  EXPECT_EQ(v6->destination.address, dst);
  EXPECT_EQ(v6->destination.port, 4791);
  IpConnection again = *v6;
  const auto encoded = EncodeCmaHeader(again);
  EXPECT_TRUE(std::equal(encoded.begin(), encoded.end(), v6_bytes.begin()));
}

TEST(CmIp, MalformedHeadersAreRefused) {
  const uint64_t service = 0x0000000001064E20;
  EXPECT_FALSE(DecodeCmaHeader(service, std::span(kIpv4Header).first(35)));  // short
  EXPECT_FALSE(DecodeCmaHeader(0x0000000012345678, kIpv4Header));            // not IP CM
  auto bad = kIpv4Header;
  bad[0] = 1;  // CMA version
  EXPECT_FALSE(DecodeCmaHeader(service, bad));
  bad = kIpv4Header;
  bad[1] = 0x50;  // IP version 5
  EXPECT_FALSE(DecodeCmaHeader(service, bad));
  bad = kIpv4Header;
  bad[4] = 0xFF;  // an IPv4 source with padding
  EXPECT_FALSE(DecodeCmaHeader(service, bad));
  bad = kIpv4Header;
  bad[20 + 11] = 1;  // an IPv4 destination with padding
  EXPECT_FALSE(DecodeCmaHeader(service, bad));
}

TEST(CmIp, AReqWithAnIpHeaderReachesTheListenOnItsPort) {
  auto node = BootDefault("cm-ip");
  ASSERT_TRUE(node);
  Side a, b;
  Client client(node->node());
  ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[0], 1, &a));
  ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[1], 2, &b));
  ASSERT_NO_FATAL_FAILURE(InitQp(client, a));
  // A listen on TCP port 20000, and one on 20001 that must not see the REQ.
  const uint64_t listen = CreateCep(client, 0x20000);
  ASSERT_EQ(Listen(client, listen, RdmaIpServiceId(RdmaPortSpace::TCP, 20000)), Status::SUCCESS);
  const uint64_t other = CreateCep(client, 0x20001);
  ASSERT_EQ(Listen(client, other, RdmaIpServiceId(RdmaPortSpace::TCP, 20001)), Status::SUCCESS);

  const uint64_t active = CreateCep(client, 0xA);
  std::string private_data(reinterpret_cast<const char*>(kIpv4Header.data()), kIpv4Header.size());
  private_data += "hello";
  ASSERT_EQ(SendReq(client, active, a.qp, ReqParams(0x0000000001064E20, 1, 2), private_data),
            Status::SUCCESS);
  abi::CepGetEventOut req{};
  ASSERT_TRUE(NextCepEvent(client, listen, &req));
  ASSERT_EQ(req.event, abi::CepEventType::REQ_RECEIVED);
  EXPECT_EQ(req.context, 0x20000u);
  const uint8_t* m = req.mad + 24;
  const uint64_t service = Be64(m + 8);
  EXPECT_EQ(service, 0x0000000001064E20u);
  const auto c = DecodeCmaHeader(service, std::span<const uint8_t>(m + 140, 92));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->ip_version, 4);
  EXPECT_EQ(c->source.address, Ipv4Connection().source.address);
  EXPECT_EQ(c->source.port, 50000);
  EXPECT_EQ(c->destination.address, Ipv4Connection().destination.address);
  EXPECT_EQ(c->destination.port, 20000);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m + 140 + 36), 5), "hello");
  abi::CepGetEventOut none{};
  EXPECT_EQ(kernel::IbCepGetEvent(client.al(), {{other}}, none), Status::CANCELED);
  abi::CepSendRejIn rej{};
  rej.cep.value = req.new_cep.value;
  rej.reason = 28;
  EXPECT_EQ(kernel::IbCepSendRej(client.al(), rej, {}), Status::SUCCESS);
  EXPECT_EQ(NextEventType(client, active), abi::CepEventType::REJ_RECEIVED);
}

}  // namespace
}  // namespace softib::testing::cm_ip_test
