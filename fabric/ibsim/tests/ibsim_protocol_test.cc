// The ibsim client protocol's records, against bytes as Debian's libumad2sim.so sends them
// (captured with strace -xx; docs/notes/ibsim-and-sm-facts.md §1.2-1.3), and the packets a
// record becomes on the client's port.
#include "softib/fabric/ibsim_protocol.h"

#include <gtest/gtest.h>

#include "hca/device/packet.h"

namespace softib::fabric::ibsim {
namespace {

TEST(IbsimProtocol, ACaptureOfConnectParses) {
  // ef be ad de | client 0 | type 1 (CONNECT) | len 0x2c | id = pid 0x5e16, qp 0, issm 0, nodeid
  // "".
  std::array<uint8_t, kCtlBytes> bytes{};
  const uint8_t head[] = {0xef, 0xbe, 0xad, 0xde, 0, 0, 0,    0,    1, 0,
                          0,    0,    0x2c, 0,    0, 0, 0x16, 0x5e, 0, 0};
  std::copy(std::begin(head), std::end(head), bytes.begin());
  const auto ctl = ParseCtl(bytes);
  ASSERT_TRUE(ctl.has_value());
  EXPECT_EQ(ctl->magic, kCtlMagic);
  EXPECT_EQ(ctl->type, CtlType::kConnect);
  EXPECT_EQ(ctl->length, 0x2cu);
  const ClientInfo info = ParseClientInfo(ctl->data);
  EXPECT_EQ(info.id, 0x5e16u);
  EXPECT_EQ(info.issm, 0u);
  EXPECT_EQ(info.nodeid, "");
  EXPECT_EQ(EncodeCtl(*ctl), bytes);
  EXPECT_FALSE(ParseCtl(std::span(bytes).first(79)).has_value());
}

TEST(IbsimProtocol, ConnectReplyCarriesTheSlotAndTheNodeId) {
  CtlMessage reply;
  reply.type = CtlType::kConnect;
  EncodeClientInfo({3, 0, 1, "H-0002c90300a00010"}, &reply.data);
  const auto bytes = EncodeCtl(reply);
  EXPECT_EQ(bytes[16], 3);  // id: the client index
  EXPECT_EQ(bytes[24], 1);  // issm
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(&bytes[28])), "H-0002c90300a00010");
}

TEST(IbsimProtocol, RequestRecordsUseTheirMixedByteOrders) {
  std::array<uint8_t, kRequestBytes> bytes{};
  bytes[0] = 0x12, bytes[1] = 0x34;  // dlid: network-order u16 in a u32
  bytes[4] = 0xFF, bytes[5] = 0xFF;  // slid: permissive (directed route)
  bytes[11] = 0x01;                  // dqp 1, big-endian
  bytes[15] = 0x01;                  // sqp 1
  bytes[19] = 110;                   // status ETIMEDOUT
  bytes[30] = 0x01;                  // length 0x100, big-endian u64
  bytes[32] = 1, bytes[33] = 0x81, bytes[34] = 1, bytes[35] = 0x01;  // DR SubnGet
  const auto r = ParseRequest(bytes);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->dlid, 0x1234);
  EXPECT_EQ(r->slid, 0xFFFF);
  EXPECT_EQ(r->dqp, 1u);
  EXPECT_EQ(r->sqp, 1u);
  EXPECT_EQ(r->status, 110u);
  EXPECT_EQ(r->length, 256u);
  EXPECT_EQ(r->mad[1], 0x81);
  EXPECT_EQ(EncodeRequest(*r), bytes);
  EXPECT_FALSE(ParseRequest(std::span(bytes).first(287)).has_value());
}

TEST(IbsimProtocol, TheClientIndexGoesIntoTidBits63To48) {
  Request r;
  r.mad[8 + 4] = 0x3e;  // umad2sim's agent id sits in bits 47..32 .. its own TID below
  r.mad[8 + 7] = 0xac;
  SetTidClient(&r, 1);
  EXPECT_EQ(Tid(r), 0x000100003e0000acull);
}

TEST(IbsimProtocol, ADirectedRouteSmpLeavesOnVl15WithPermissiveLids) {
  Request r;
  r.dlid = 0xFFFF;
  r.slid = 0xFFFF;
  r.dqp = 0;
  r.sqp = 0;
  r.mad[0] = 1, r.mad[1] = 0x81, r.mad[2] = 1, r.mad[3] = 0x01;
  const std::vector<uint8_t> packet = PacketFromRequest(r, 4);
  hca::ParsedPacket parsed;
  ASSERT_EQ(hca::ParsePacket(packet, &parsed), hca::DropReason::kNone);
  EXPECT_EQ(parsed.hdr.lrh.VL, 15);
  EXPECT_EQ(parsed.hdr.lrh.DLID, 0xFFFF);
  EXPECT_EQ(parsed.hdr.lrh.SLID, 0xFFFF);
  EXPECT_EQ(parsed.hdr.bth.DestQP, 0u);
  EXPECT_EQ(parsed.hdr.deth.Q_Key, 0u);
  EXPECT_EQ(parsed.payload.size(), 256u);
  // And back: what arrives at the port becomes the same record.
  const auto back = RequestFromPacket(packet);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->mad, r.mad);
}

TEST(IbsimProtocol, AGmpGoesToQp1WithTheWellKnownQKeyFromThePortsLid) {
  Request r;
  r.dlid = 2;
  r.slid = 0;  // the server fills in the client port's LID
  r.dqp = 1;
  r.sqp = 1;
  r.mad[0] = 1, r.mad[1] = 0x03, r.mad[2] = 2, r.mad[3] = 0x12;  // SA GetTable
  const std::vector<uint8_t> packet = PacketFromRequest(r, 7);
  hca::ParsedPacket parsed;
  ASSERT_EQ(hca::ParsePacket(packet, &parsed), hca::DropReason::kNone);
  EXPECT_EQ(parsed.hdr.lrh.VL, 0);
  EXPECT_EQ(parsed.hdr.lrh.SLID, 7);
  EXPECT_EQ(parsed.hdr.lrh.DLID, 2);
  EXPECT_EQ(parsed.hdr.deth.Q_Key, 0x80010000u);
  EXPECT_EQ(parsed.hdr.deth.SrcQP, 1u);
}

TEST(IbsimProtocol, RecordsThatCannotBeMadPacketsAreRefused) {
  Request r;
  r.mad[0] = 2;  // BaseVersion 2
  EXPECT_TRUE(PacketFromRequest(r, 1).empty());
  r.mad[0] = 1;
  r.mad[2] = 3;  // ClassVersion 3
  EXPECT_TRUE(PacketFromRequest(r, 1).empty());
  r.mad[2] = 1;
  r.dqp = 5;  // not QP0/QP1
  EXPECT_TRUE(PacketFromRequest(r, 1).empty());
  EXPECT_FALSE(RequestFromPacket(std::vector<uint8_t>(40, 0)).has_value());
}

}  // namespace
}  // namespace softib::fabric::ibsim
