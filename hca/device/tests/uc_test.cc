// UC between two back-to-back HCAs: RC's packets without acknowledgements. Sends complete
// once on the wire; a lost packet loses its message, and the receive waits for the next.
#include <endian.h>
#include <gtest/gtest.h>

#include "rc_fixture.h"

namespace softib::hca {
namespace {

using abi::WcStatus;
using abi::WrType;
using testing::Fill;
using testing::Matches;
using testing::RcOptions;
using testing::RcPair;

RcOptions Uc() {
  RcOptions options;
  options.type = abi::QpType::UC;
  options.qp_access = abi::AccessFlags::REMOTE_WRITE;
  options.buffer_bytes = 1 << 16;
  return options;
}

TEST(Uc, MultiPacketSendAndWriteWithImmediateWithoutAcks) {
  RcPair p(Uc());
  uint32_t packets_to_a = 0;
  p.cable.SetTap([&](int from, std::span<const uint8_t>) { packets_to_a += from == 1; });
  Fill(p.a.buffer, 0, 2500, 1);
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 4096, 1)), abi::Status::SUCCESS);
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 0, 2)), abi::Status::SUCCESS);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::SEND, 0, 2500, 0, 10)), abi::Status::SUCCESS);
  abi::SendWorkRequest write = p.Wr(WrType::RDMA_WRITE, 0, 2500, 8192, 11);
  write.send_flags = abi::SendFlags::IMMEDIATE;
  write.immediate_data = htobe32(9);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, write), abi::Status::SUCCESS);
  EXPECT_EQ(p.Poll(p.a).size(), 2u);  // complete as soon as they are sent
  p.cable.Pump();
  EXPECT_EQ(packets_to_a, 0u);
  const auto got = p.Poll(p.b);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].length, 2500u);
  EXPECT_EQ(got[1].opcode, abi::WcOpcode::RECV_RDMA_WRITE);
  EXPECT_EQ(be32toh(got[1].immediate_data), 9u);
  EXPECT_TRUE(Matches(p.b.buffer, 0, 2500, 1));
  EXPECT_TRUE(Matches(p.b.buffer, 8192, 2500, 1));
}

TEST(Uc, ALostPacketLosesItsMessageAndTheReceiveTakesTheNext) {
  RcPair p(Uc());
  Fill(p.a.buffer, 0, 2500, 2);
  Fill(p.a.buffer, 4096, 100, 3);
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 4096, 1)), abi::Status::SUCCESS);
  p.cable.DropPacket(1);  // the middle of the first message
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::SEND, 0, 2500)), abi::Status::SUCCESS);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::SEND, 4096, 100)), abi::Status::SUCCESS);
  p.cable.Pump();
  const auto got = p.Poll(p.b);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].wr_id, 1u);
  EXPECT_EQ(got[0].length, 100u);
  EXPECT_TRUE(Matches(p.b.buffer, 0, 100, 3));
  EXPECT_EQ(p.b.qp().state, abi::QpState::RTS);
}

TEST(Uc, NoReceiveOrBadRkeyDropsSilently) {
  RcPair p(Uc());
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::SEND, 0, 8)), abi::Status::SUCCESS);
  abi::SendWorkRequest bad = p.Wr(WrType::RDMA_WRITE, 0, 8, 0);
  bad.rkey ^= 0x80;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, bad), abi::Status::SUCCESS);
  p.cable.Pump();
  EXPECT_EQ(p.Poll(p.b).size(), 0u);
  EXPECT_EQ(p.b.qp().state, abi::QpState::RTS);
  for (uint8_t byte : p.b.buffer) ASSERT_EQ(byte, 0);
  for (const auto& wc : p.Poll(p.a)) EXPECT_EQ(wc.status, WcStatus::SUCCESS);
  // Reads and atomics do not exist on UC.
  EXPECT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_READ, 0, 8)), abi::Status::INVALID_WR_TYPE);
  EXPECT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::FETCH_ADD, 0, 8)), abi::Status::INVALID_WR_TYPE);
}

}  // namespace
}  // namespace softib::hca
