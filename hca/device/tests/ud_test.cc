// UD between two HCAs cabled back to back: every byte crosses as a real IBA packet.
#include <gtest/gtest.h>

#include "ud_fixture.h"

namespace softib::hca {
namespace {

using testing::kQkey;
using testing::UdPair;

TEST(Ud, SendLandsAfterTheGrhRoomAndCompletesBothSides) {
  UdPair p;
  for (int i = 0; i < 300; ++i) p.a.buffer[i] = static_cast<uint8_t>(i);
  p.b.buffer.fill(0xEE);
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 1024)), abi::Status::SUCCESS);
  abi::SendWorkRequest wr = p.Send(0, 300);
  wr.send_flags = abi::SendFlags::IMMEDIATE | abi::SendFlags::SOLICITED;
  wr.immediate_data = htobe32(0xA1B2C3D4);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, wr), abi::Status::SUCCESS);
  EXPECT_EQ(p.cable.Pump(), 1u);

  const auto sent = p.Poll(p.a);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, abi::WcStatus::SUCCESS);
  EXPECT_EQ(sent[0].opcode, abi::WcOpcode::SEND);
  const auto got = p.Poll(p.b);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, abi::WcStatus::SUCCESS);
  EXPECT_EQ(got[0].opcode, abi::WcOpcode::RECV);
  EXPECT_EQ(got[0].wr_id, 200u);
  EXPECT_EQ(got[0].length, 40u + 300u);
  EXPECT_EQ(got[0].src_qp, p.a.qpn);
  EXPECT_EQ(got[0].qp_num, p.b.qpn);
  EXPECT_EQ(got[0].slid, 1);
  EXPECT_EQ(got[0].flags, abi::WcFlags::IMMEDIATE);  // no GRH on a local packet
  EXPECT_EQ(be32toh(got[0].immediate_data), 0xA1B2C3D4u);
  for (int i = 0; i < 300; ++i) ASSERT_EQ(p.b.buffer[40 + i], static_cast<uint8_t>(i)) << i;
  EXPECT_EQ(p.b.buffer[340], 0xEE);
  EXPECT_EQ(p.b.buffer[0], 0xEE);  // GRH room untouched without a GRH
}

TEST(Ud, GlobalRouteFillsTheGrhRoom) {
  UdPair p;
  abi::AddressVector av{};
  av.port_num = 1;
  av.dlid = 2;
  av.grh_present = 1;
  av.grh.hop_limit = 1;
  for (int i = 0; i < 16; ++i) av.grh.dgid.raw[i] = static_cast<uint8_t>(0x40 + i);
  uint32_t ah;
  ASSERT_EQ(p.a.hca.CreateAh(p.a.pd, av, &ah), abi::Status::SUCCESS);
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 100)), abi::Status::SUCCESS);
  abi::SendWorkRequest wr = p.Send(0, 8);
  wr.av.value = ah;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, wr), abi::Status::SUCCESS);
  p.cable.Pump();
  const auto got = p.Poll(p.b);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].flags, abi::WcFlags::GRH);
  EXPECT_EQ(p.b.buffer[0] >> 4, 6);  // GRH:IPVer
  EXPECT_EQ(p.b.buffer[6], 0x1B);    // GRH:NxtHdr
  EXPECT_EQ(p.b.buffer[8], 0xFE);    // SGID: link-local prefix
  EXPECT_EQ(p.b.buffer[24], 0x40);   // DGID
}

TEST(Ud, QkeyMismatchIsDroppedAndCounted) {
  UdPair p;
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 100)), abi::Status::SUCCESS);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 8, kQkey + 1)), abi::Status::SUCCESS);
  p.cable.Pump();
  EXPECT_EQ(p.Poll(p.b).size(), 0u);
  const PortCounters& c = p.b.hca.port(1).counters;
  EXPECT_EQ(c.qkey_violations, 1u);
  EXPECT_EQ(c.recv_drop(RecvDrop::kQkeyViolation), 1u);
  EXPECT_EQ(p.b.hca.Qp(p.b.qpn)->rq.size(), 1u);  // the receive is still there
  // The sender's completion is a success: UD is unacknowledged.
  EXPECT_EQ(p.Poll(p.a).at(0).status, abi::WcStatus::SUCCESS);
  // A Q_Key with the high bit set means the sender QP's own Q_Key, which matches.
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 8, 0x80000000u)), abi::Status::SUCCESS);
  p.cable.Pump();
  EXPECT_EQ(p.Poll(p.b).size(), 1u);
}

TEST(Ud, PkeyMismatchIsDroppedAndCounted) {
  UdPair p;
  p.b.hca.port(1).pkeys[0] = 0x8002;
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 100)), abi::Status::SUCCESS);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 8)), abi::Status::SUCCESS);
  p.cable.Pump();
  EXPECT_EQ(p.Poll(p.b).size(), 0u);
  EXPECT_EQ(p.b.hca.port(1).counters.pkey_violations, 1u);
}

TEST(Ud, NoReceivePostedOrWrongLidDrops) {
  UdPair p;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 8)), abi::Status::SUCCESS);
  p.cable.Pump();
  EXPECT_EQ(p.b.hca.port(1).counters.recv_drop(RecvDrop::kNoReceiveWqe), 1u);
  p.b.hca.port(1).lid = 9;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 8)), abi::Status::SUCCESS);
  p.cable.Pump();
  EXPECT_EQ(p.b.hca.port(1).counters.recv_drop(RecvDrop::kWrongDlid), 1u);
}

TEST(Ud, ReceiveIntoMemoryWithoutLocalWriteFailsAndTouchesNothing) {
  UdPair p(abi::AccessFlags::REMOTE_READ);
  p.b.buffer.fill(0x77);
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 100)), abi::Status::SUCCESS);
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(100, 100)), abi::Status::SUCCESS);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 8)), abi::Status::SUCCESS);
  p.cable.Pump();
  const auto got = p.Poll(p.b);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].status, abi::WcStatus::LOCAL_PROT_ERR);
  EXPECT_EQ(got[1].status, abi::WcStatus::WR_FLUSH_ERR);
  EXPECT_EQ(p.b.hca.Qp(p.b.qpn)->state, abi::QpState::ERROR);
  for (uint8_t byte : p.b.buffer) ASSERT_EQ(byte, 0x77);
}

TEST(Ud, ReceiveTooSmallIsALocalLengthError) {
  UdPair p;
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 40 + 7)), abi::Status::SUCCESS);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 8)), abi::Status::SUCCESS);
  p.cable.Pump();
  EXPECT_EQ(p.Poll(p.b).at(0).status, abi::WcStatus::LOCAL_LENGTH_ERR);
}

TEST(Ud, SenderErrorsCompleteInErrorAndStopTheSendQueue) {
  UdPair p;
  abi::SendWorkRequest bad_key = p.Send(0, 8);
  bad_key.sge[0].lkey ^= 0x80;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, bad_key), abi::Status::SUCCESS);
  auto wcs = p.Poll(p.a);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, abi::WcStatus::LOCAL_PROT_ERR);
  EXPECT_EQ(p.a.hca.Qp(p.a.qpn)->state, abi::QpState::SQE);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 8)), abi::Status::SUCCESS);
  EXPECT_EQ(p.Poll(p.a).at(0).status, abi::WcStatus::WR_FLUSH_ERR);
  EXPECT_EQ(p.cable.queued(), 0u);
  // SQE → RTS resumes.
  ASSERT_EQ(p.a.hca.ModifyQp(p.a.qpn, testing::ToState(abi::QpState::RTS)), abi::Status::SUCCESS);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 4097)), abi::Status::SUCCESS);
  EXPECT_EQ(p.Poll(p.a).at(0).status, abi::WcStatus::LOCAL_LENGTH_ERR);  // over the MTU
}

TEST(Ud, ImmediateErrorsQueueNothing) {
  UdPair p;
  ASSERT_EQ(p.b.hca.ModifyQp(p.b.qpn, testing::ToState(abi::QpState::RESET)), abi::Status::SUCCESS);
  abi::SendWorkRequest wr = p.Send(0, 8);
  EXPECT_EQ(p.b.hca.PostSend(p.b.qpn, wr), abi::Status::INVALID_QP_STATE);
  wr.num_sge = 5;
  EXPECT_EQ(p.a.hca.PostSend(p.a.qpn, wr), abi::Status::INVALID_MAX_SGE);
  wr.num_sge = 1;
  wr.wr_type = abi::WrType::RDMA_WRITE;
  EXPECT_EQ(p.a.hca.PostSend(p.a.qpn, wr), abi::Status::INVALID_WR_TYPE);
  EXPECT_EQ(p.Poll(p.a).size(), 0u);
}

}  // namespace
}  // namespace softib::hca
