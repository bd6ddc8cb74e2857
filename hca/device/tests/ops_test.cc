// Work-request options: NOP, inline limits, fences, solicited events.
#include <gtest/gtest.h>

#include "hca/device/tests/rc_fixture.h"
#include "hca/device/tests/ud_fixture.h"

namespace softib::hca {
namespace {

using abi::Status;
using abi::WcStatus;
using abi::WrType;
using testing::RcPair;

TEST(Ops, NopCompletesInOrderWithoutAPacket) {
  RcPair p;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_WRITE, 0, 8, 0, 1)), Status::SUCCESS);
  abi::SendWorkRequest nop{};
  nop.wr_id = 2;
  nop.wr_type = WrType::NOP;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, nop), Status::SUCCESS);
  EXPECT_TRUE(p.Poll(p.a).empty());  // waits behind the unacknowledged write
  EXPECT_EQ(p.cable.queued(), 1u);   // the write only
  ASSERT_TRUE(p.Run());
  const auto done = p.Poll(p.a);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].opcode, abi::WcOpcode::RDMA_WRITE);
  EXPECT_EQ(done[1].opcode, abi::WcOpcode::NOP);
  EXPECT_EQ(done[1].wr_id, 2u);
  EXPECT_EQ(done[1].status, WcStatus::SUCCESS);
}

TEST(Ops, InlineDataBeyondTheQpsLimitIsRefused) {
  RcPair p;  // max_inline_data 64
  struct Case {
    uint32_t length;
    Status expected;
  };
  const Case cases[] = {
      {64, Status::SUCCESS}, {65, Status::INVALID_PARAMETER}, {257, Status::INVALID_PARAMETER}};
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 128)), Status::SUCCESS);
  for (const Case& c : cases) {
    abi::SendWorkRequest wr = p.Wr(WrType::SEND, 0, 0);
    wr.send_flags = abi::SendFlags::INLINE;
    wr.num_sge = 0;
    wr.inline_length = c.length;
    EXPECT_EQ(p.a.hca.PostSend(p.a.qpn, wr), c.expected) << c.length;
  }
  ASSERT_TRUE(p.Run());
  EXPECT_EQ(p.Poll(p.a).size(), 1u);
  // CreateQp refuses a QP asking for more inline data than the device carries.
  abi::QpCreateParams params{};
  params.qp_type = abi::QpType::RC;
  params.caps = {4, 4, 1, 1, 257, 0};
  uint32_t qp = 0;
  EXPECT_EQ(p.a.hca.CreateQp(p.a.pd, params, p.a.cq, p.a.cq, &qp), Status::INVALID_SETTING);
}

TEST(Ops, FencedNopWaitsForAnEarlierRead) {
  RcPair p;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_READ, 0, 8, 0, 1)), Status::SUCCESS);
  abi::SendWorkRequest write = p.Wr(WrType::RDMA_WRITE, 64, 8, 64, 2);
  write.send_flags = abi::SendFlags::FENCE;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, write), Status::SUCCESS);
  EXPECT_EQ(p.cable.queued(), 1u);  // the read request only: the write is fenced
  ASSERT_TRUE(p.Run());
  const auto done = p.Poll(p.a);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].opcode, abi::WcOpcode::RDMA_READ);
  EXPECT_EQ(done[1].opcode, abi::WcOpcode::RDMA_WRITE);
}

TEST(Ops, CqArmedForSolicitedWakesOnlyOnSolicitedMessages) {
  testing::UdPair p;
  int events = 0;
  p.b.hca.completion_events = [&](uint32_t cq) {
    EXPECT_EQ(cq, p.b.cq);
    ++events;
  };
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(i * 100, 100)), Status::SUCCESS);
  p.b.hca.Cq(p.b.cq)->RequestNotify(abi::CqNotify::SOLICITED);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 8)), Status::SUCCESS);
  p.cable.Pump();
  EXPECT_EQ(events, 0);  // not solicited
  abi::SendWorkRequest solicited = p.Send(0, 8);
  solicited.send_flags = abi::SendFlags::SOLICITED;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, solicited), Status::SUCCESS);
  p.cable.Pump();
  EXPECT_EQ(events, 1);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, solicited), Status::SUCCESS);
  p.cable.Pump();
  EXPECT_EQ(events, 1);  // one event per arming
  EXPECT_EQ(p.Poll(p.b).size(), 3u);
}

}  // namespace
}  // namespace softib::hca
