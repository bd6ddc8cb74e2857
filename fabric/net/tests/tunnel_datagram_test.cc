// The tunnel's datagram codec against bytes written by hand from the README's table.
#include "softib/fabric/tunnel_datagram.h"

#include <gtest/gtest.h>

namespace softib::fabric::tunnel {
namespace {

TEST(TunnelDatagram, PacketHeaderBytes) {
  const std::vector<uint8_t> packet = {0xAA, 0xBB, 0xCC};
  const std::vector<uint8_t> expected = {
      'S',  'I',  'B',  'T',  1,    1,    0,    0,     // magic, version, type packet, reserved
      0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,  // link id
      0x11, 0x22, 0x33, 0x44,                          // sequence
      0x00, 0x03, 0,    0,                             // length, reserved
      0xAA, 0xBB, 0xCC};
  EXPECT_EQ(EncodePacket(0x0102030405060708ull, 0x11223344u, packet), expected);
  Header h;
  ASSERT_EQ(DecodeHeader(expected, &h), DecodeError::kNone);
  EXPECT_EQ(h.type, Type::kPacket);
  EXPECT_EQ(h.id, 0x0102030405060708ull);
  EXPECT_EQ(h.sequence, 0x11223344u);
  EXPECT_EQ(h.length, 3u);
}

TEST(TunnelDatagram, HelloBytesAndRoundTrip) {
  const std::vector<HelloEntry> entries = {{0x1122334455667788ull, HelloState::kHearYou},
                                           {0x99ull, HelloState::kDisabled}};
  const std::vector<uint8_t> hello = EncodeHello(0xABCDull, 7, entries);
  const std::vector<uint8_t> expected = {
      'S',  'I',  'B',  'T',  1,    2,    0,    0,     // type hello
      0,    0,    0,    0,    0,    0,    0xAB, 0xCD,  // sender
      0,    0,    0,    7,    0,    24,   0,    0,     // sequence, length 2 x 12
      0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 2, 0, 0, 0,
      0,    0,    0,    0,    0,    0,    0,    0x99, 0, 0, 0, 0};
  EXPECT_EQ(hello, expected);
  Header h;
  ASSERT_EQ(DecodeHeader(hello, &h), DecodeError::kNone);
  EXPECT_EQ(h.type, Type::kHello);
  std::vector<HelloEntry> back;
  ASSERT_TRUE(DecodeHello(std::span(hello).subspan(kHeaderBytes), &back));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].link_id, 0x1122334455667788ull);
  EXPECT_EQ(back[0].state, HelloState::kHearYou);
  EXPECT_EQ(back[1].state, HelloState::kDisabled);
}

TEST(TunnelDatagram, RefusesBadHeaders) {
  const std::vector<uint8_t> good = EncodePacket(5, 1, std::vector<uint8_t>(30, 0));
  Header h;
  EXPECT_EQ(DecodeHeader(std::span(good).first(23), &h), DecodeError::kShort);
  for (std::size_t at : {0u, 3u, 4u, 6u, 7u, 22u, 23u}) {
    std::vector<uint8_t> bad = good;
    bad[at] ^= 0x40;
    EXPECT_EQ(DecodeHeader(bad, &h), DecodeError::kBadHeader) << "byte " << at;
  }
  for (uint8_t type : {0, 3, 255}) {
    std::vector<uint8_t> bad = good;
    bad[5] = type;
    EXPECT_EQ(DecodeHeader(bad, &h), DecodeError::kBadHeader) << int{type};
  }
  std::vector<uint8_t> longer = good;
  longer.push_back(0);  // length field disagrees with the datagram
  EXPECT_EQ(DecodeHeader(longer, &h), DecodeError::kBadHeader);
  EXPECT_EQ(DecodeHeader(std::span(good).first(good.size() - 1), &h), DecodeError::kBadHeader);
}

TEST(TunnelDatagram, RefusesBadHelloBodies) {
  std::vector<HelloEntry> out;
  EXPECT_FALSE(DecodeHello(std::vector<uint8_t>(11, 0), &out));
  std::vector<uint8_t> body(12, 0);
  body[8] = 3;  // no such state
  EXPECT_FALSE(DecodeHello(body, &out));
  body[8] = 1;
  body[10] = 1;  // reserved
  EXPECT_FALSE(DecodeHello(body, &out));
  body[10] = 0;
  EXPECT_TRUE(DecodeHello(body, &out));
  EXPECT_TRUE(DecodeHello({}, &out));
  EXPECT_TRUE(out.empty());
}

TEST(TunnelDatagram, LinkIdIsTheSameFromBothEnds) {
  const uint64_t id = LinkId(0x0002c90200400001ull, 3, 0x0002c90200400002ull, 5);
  EXPECT_EQ(id, LinkId(0x0002c90200400002ull, 5, 0x0002c90200400001ull, 3));
  EXPECT_NE(id, LinkId(0x0002c90200400001ull, 4, 0x0002c90200400002ull, 5));
  EXPECT_NE(id, LinkId(0x0002c90200400001ull, 5, 0x0002c90200400002ull, 3));
  EXPECT_NE(id, 0u);
}

}  // namespace
}  // namespace softib::fabric::tunnel
