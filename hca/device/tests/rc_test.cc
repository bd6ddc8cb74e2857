// RC between two HCAs cabled back to back: every operation crosses as real IBA packets,
// segmented by the path MTU (1024 here) and acknowledged by the responder.
#include <endian.h>
#include <gtest/gtest.h>

#include "rc_fixture.h"

namespace softib::hca {
namespace {

using abi::WcOpcode;
using abi::WcStatus;
using abi::WrType;
using testing::Fill;
using testing::Matches;
using testing::RcOptions;
using testing::RcPair;

// Counts packets on the cable by BTH opcode, in both directions.
struct OpcodeCounter {
  explicit OpcodeCounter(BackToBackCable& cable) {
    cable.SetTap([this](int, std::span<const uint8_t> bytes) {
      ParsedPacket p;
      if (ParsePacket(bytes, &p) == DropReason::kNone) {
        ++by_opcode[p.hdr.bth.OpCode];
        if (p.hdr.bth.OpCode == static_cast<uint8_t>(wire::BthOpcode::RC_ACKNOWLEDGE))
          syndromes.push_back(p.hdr.aeth.Syndrome);
      }
    });
  }
  uint32_t operator[](wire::BthOpcode op) const { return by_opcode[static_cast<uint8_t>(op)]; }
  uint32_t by_opcode[256] = {};
  std::vector<uint8_t> syndromes;
};

TEST(Rc, SendWithImmediateAndSolicitedEvent) {
  RcPair p;
  OpcodeCounter ops(p.cable);
  Fill(p.a.buffer, 0, 300, 1);
  uint32_t events = 0;
  p.b.hca.completion_events = [&](uint32_t) { ++events; };
  p.b.hca.Cq(p.b.cq)->RequestNotify(abi::CqNotify::SOLICITED);
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 1000, 77)), abi::Status::SUCCESS);
  abi::SendWorkRequest wr = p.Wr(WrType::SEND, 0, 300);
  wr.send_flags = abi::SendFlags::IMMEDIATE | abi::SendFlags::SOLICITED;
  wr.immediate_data = htobe32(0xCAFEF00D);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, wr), abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  const auto got = p.Poll(p.b);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, WcStatus::SUCCESS);
  EXPECT_EQ(got[0].opcode, WcOpcode::RECV);
  EXPECT_EQ(got[0].wr_id, 77u);
  EXPECT_EQ(got[0].length, 300u);
  EXPECT_EQ(got[0].flags, abi::WcFlags::IMMEDIATE);
  EXPECT_EQ(be32toh(got[0].immediate_data), 0xCAFEF00Du);
  EXPECT_TRUE(Matches(p.b.buffer, 0, 300, 1));
  EXPECT_EQ(p.b.buffer[300], 0);
  EXPECT_EQ(events, 1u);
  const auto sent = p.Poll(p.a);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, WcStatus::SUCCESS);
  EXPECT_EQ(sent[0].opcode, WcOpcode::SEND);
  EXPECT_EQ(ops[wire::BthOpcode::RC_SEND_ONLY_WITH_IMMEDIATE], 1u);
  EXPECT_EQ(ops[wire::BthOpcode::RC_ACKNOWLEDGE], 1u);
  // The PSNs wrapped past 0xFFFFFF without trouble and advanced by one packet.
  EXPECT_EQ(p.a.qp().sq_psn, 0xFFFFF1u);
  EXPECT_EQ(p.b.qp().rq_psn, 0xFFFFF1u);
}

TEST(Rc, MultiPacketSendScattersAndGathersAcrossSegments) {
  RcPair p;
  OpcodeCounter ops(p.cable);
  Fill(p.a.buffer, 0, 1000, 2);
  Fill(p.a.buffer, 5000, 2000, 3);
  abi::RecvWorkRequest recv = p.Recv(0, 700);
  recv.num_sge = 3;
  recv.sge[1] = {p.b.addr(10000), 1500, p.b.key};
  recv.sge[2] = {p.b.addr(20000), 2000, p.b.key};
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, recv), abi::Status::SUCCESS);
  abi::SendWorkRequest wr = p.Wr(WrType::SEND, 0, 1000);
  wr.num_sge = 2;
  wr.sge[1] = {p.a.addr(5000), 2000, p.a.key};
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, wr), abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  const auto got = p.Poll(p.b);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, WcStatus::SUCCESS);
  EXPECT_EQ(got[0].length, 3000u);
  std::vector<uint8_t> sent(p.a.buffer.begin(), p.a.buffer.begin() + 1000);
  sent.insert(sent.end(), p.a.buffer.begin() + 5000, p.a.buffer.begin() + 7000);
  std::vector<uint8_t> landed(p.b.buffer.begin(), p.b.buffer.begin() + 700);
  landed.insert(landed.end(), p.b.buffer.begin() + 10000, p.b.buffer.begin() + 11500);
  landed.insert(landed.end(), p.b.buffer.begin() + 20000, p.b.buffer.begin() + 20800);
  EXPECT_EQ(landed, sent);
  EXPECT_EQ(ops[wire::BthOpcode::RC_SEND_FIRST], 1u);
  EXPECT_EQ(ops[wire::BthOpcode::RC_SEND_MIDDLE], 1u);
  EXPECT_EQ(ops[wire::BthOpcode::RC_SEND_LAST], 1u);
  EXPECT_EQ(ops[wire::BthOpcode::RC_ACKNOWLEDGE], 1u);  // coalesced: one per message
}

TEST(Rc, InlineSendCarriesTheBytesOfTheRequest) {
  RcPair p;
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 64)), abi::Status::SUCCESS);
  abi::SendWorkRequest wr = p.Wr(WrType::SEND, 0, 0);
  wr.send_flags = abi::SendFlags::INLINE;
  wr.inline_length = 11;
  std::memcpy(wr.sge, "hello, rc!", 11);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, wr), abi::Status::SUCCESS);
  std::memset(wr.sge, 0, sizeof wr.sge);  // the data was taken at post time
  ASSERT_TRUE(p.Run());
  EXPECT_EQ(p.Poll(p.b).at(0).length, 11u);
  EXPECT_STREQ(reinterpret_cast<const char*>(p.b.buffer.data()), "hello, rc!");
}

TEST(Rc, RdmaWriteMultiPacketAndWithImmediate) {
  RcPair p;
  OpcodeCounter ops(p.cable);
  constexpr uint32_t kLength = 10 * 1024;
  Fill(p.a.buffer, 0, kLength, 4);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_WRITE, 0, kLength, 4096, 10)),
            abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  EXPECT_TRUE(Matches(p.b.buffer, 4096, kLength, 4));
  EXPECT_EQ(p.b.buffer[4095], 0);
  EXPECT_EQ(p.b.buffer[4096 + kLength], 0);
  EXPECT_EQ(ops[wire::BthOpcode::RC_RDMA_WRITE_FIRST], 1u);
  EXPECT_EQ(ops[wire::BthOpcode::RC_RDMA_WRITE_MIDDLE], 8u);
  EXPECT_EQ(ops[wire::BthOpcode::RC_RDMA_WRITE_LAST], 1u);
  EXPECT_EQ(p.Poll(p.b).size(), 0u);  // a plain write consumes no receive
  auto sent = p.Poll(p.a);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, WcOpcode::RDMA_WRITE);
  EXPECT_EQ(sent[0].wr_id, 10u);

  // With immediate: the data lands at the RETH's address, the immediate in a receive.
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 0, 55)), abi::Status::SUCCESS);
  Fill(p.a.buffer, 0, 2000, 5);
  abi::SendWorkRequest wr = p.Wr(WrType::RDMA_WRITE, 0, 2000, 100000, 11);
  wr.send_flags = abi::SendFlags::IMMEDIATE;
  wr.immediate_data = htobe32(42);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, wr), abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  EXPECT_TRUE(Matches(p.b.buffer, 100000, 2000, 5));
  const auto got = p.Poll(p.b);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].opcode, WcOpcode::RECV_RDMA_WRITE);
  EXPECT_EQ(got[0].wr_id, 55u);
  EXPECT_EQ(got[0].length, 2000u);
  EXPECT_EQ(be32toh(got[0].immediate_data), 42u);
  EXPECT_EQ(ops[wire::BthOpcode::RC_RDMA_WRITE_LAST_WITH_IMMEDIATE], 1u);
}

TEST(Rc, RdmaWriteLargerThanAGatherWindowFromOddSegments) {
  // The requester reads a message a window of packets at a time (Hca::kGatherWindowBytes):
  // segments of odd sizes cross packet and window edges, and one packet of the second
  // window is lost, so its retransmission reads packet by packet.
  RcOptions options;
  options.buffer_bytes = 1u << 20;
  RcPair p(options);
  OpcodeCounter ops(p.cable);
  const uint32_t lengths[3] = {Hca::kGatherWindowBytes + 1001, 7, 40000 + 3};
  const uint64_t offsets[3] = {0, 300000, 400001};
  abi::SendWorkRequest wr = p.Wr(WrType::RDMA_WRITE, 0, 0, 600000, 5);
  wr.num_sge = 3;
  uint32_t total = 0;
  for (int i = 0; i < 3; ++i) {
    Fill(p.a.buffer, offsets[i], lengths[i], 20 + i);
    wr.sge[i] = {p.a.addr(offsets[i]), lengths[i], p.a.key};
    total += lengths[i];
  }
  const uint32_t packets = (total + 1023) / 1024;
  p.cable.DropPacket(Hca::kGatherWindowBytes / 1024 + 5);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, wr), abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  EXPECT_TRUE(Matches(p.b.buffer, 600000, lengths[0], 20));
  EXPECT_TRUE(Matches(p.b.buffer, 600000 + lengths[0], lengths[1], 21));
  EXPECT_TRUE(Matches(p.b.buffer, 600000 + lengths[0] + lengths[1], lengths[2], 22));
  EXPECT_EQ(p.b.buffer[600000 - 1], 0);
  EXPECT_EQ(p.b.buffer[600000 + total], 0);
  EXPECT_EQ(ops[wire::BthOpcode::RC_RDMA_WRITE_FIRST], 1u);
  EXPECT_GE(ops[wire::BthOpcode::RC_RDMA_WRITE_MIDDLE], packets - 2);
  EXPECT_GE(ops[wire::BthOpcode::RC_RDMA_WRITE_LAST], 1u);
  const auto sent = p.Poll(p.a);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, WcStatus::SUCCESS);
}

TEST(Rc, RdmaReadMultiPacketIntoTwoSegments) {
  RcPair p;
  OpcodeCounter ops(p.cable);
  constexpr uint32_t kLength = 10 * 1024 + 10;
  Fill(p.b.buffer, 8192, kLength, 6);
  abi::SendWorkRequest wr = p.Wr(WrType::RDMA_READ, 0, 4000, 8192, 20);
  wr.num_sge = 2;
  wr.sge[1] = {p.a.addr(50000), kLength - 4000, p.a.key};
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, wr), abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  const auto sent = p.Poll(p.a);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, WcStatus::SUCCESS);
  EXPECT_EQ(sent[0].opcode, WcOpcode::RDMA_READ);
  EXPECT_EQ(sent[0].length, kLength);
  std::vector<uint8_t> landed(p.a.buffer.begin(), p.a.buffer.begin() + 4000);
  landed.insert(landed.end(), p.a.buffer.begin() + 50000,
                p.a.buffer.begin() + 50000 + kLength - 4000);
  EXPECT_EQ(landed,
            std::vector<uint8_t>(p.b.buffer.begin() + 8192, p.b.buffer.begin() + 8192 + kLength));
  EXPECT_EQ(ops[wire::BthOpcode::RC_RDMA_READ_REQUEST], 1u);
  EXPECT_EQ(ops[wire::BthOpcode::RC_RDMA_READ_RESPONSE_FIRST], 1u);
  EXPECT_EQ(ops[wire::BthOpcode::RC_RDMA_READ_RESPONSE_MIDDLE], 9u);
  EXPECT_EQ(ops[wire::BthOpcode::RC_RDMA_READ_RESPONSE_LAST], 1u);
  // A read takes one PSN per response packet.
  EXPECT_EQ(p.a.qp().sq_psn, (0xFFFFF0u + 11) & 0xFFFFFF);
}

TEST(Rc, CompareSwapAndFetchAddReturnTheOriginalValue) {
  RcPair p;
  uint64_t target = 1000;
  std::memcpy(&p.b.buffer[64], &target, 8);
  abi::SendWorkRequest cas = p.Wr(WrType::COMPARE_SWAP, 0, 8, 64, 1);
  cas.compare_add = 1000;
  cas.swap = 7;
  abi::SendWorkRequest cas_miss = p.Wr(WrType::COMPARE_SWAP, 8, 8, 64, 2);
  cas_miss.compare_add = 1000;  // no longer the value: no swap
  cas_miss.swap = 99;
  abi::SendWorkRequest faa = p.Wr(WrType::FETCH_ADD, 16, 8, 64, 3);
  faa.compare_add = 5;
  for (const auto& wr : {cas, cas_miss, faa})
    ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, wr), abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  const auto sent = p.Poll(p.a);
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0].opcode, WcOpcode::COMPARE_SWAP);
  EXPECT_EQ(sent[2].opcode, WcOpcode::FETCH_ADD);
  for (const auto& wc : sent) EXPECT_EQ(wc.status, WcStatus::SUCCESS);
  uint64_t results[3];
  std::memcpy(results, p.a.buffer.data(), sizeof results);
  EXPECT_EQ(results[0], 1000u);
  EXPECT_EQ(results[1], 7u);
  EXPECT_EQ(results[2], 7u);
  std::memcpy(&target, &p.b.buffer[64], 8);
  EXPECT_EQ(target, 12u);
}

TEST(Rc, MisalignedAtomicIsAnInvalidRequest) {
  RcPair p;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::FETCH_ADD, 0, 8, 68)), abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  EXPECT_EQ(p.Poll(p.a).at(0).status, WcStatus::REM_INV_REQ_ERR);
  EXPECT_EQ(p.a.qp().state, abi::QpState::ERROR);
  EXPECT_EQ(p.b.qp().state, abi::QpState::ERROR);
}

TEST(Rc, FencedRequestWaitsForEarlierReads) {
  RcPair p;
  OpcodeCounter ops(p.cable);
  Fill(p.b.buffer, 0, 100, 7);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_READ, 0, 100, 0, 1)), abi::Status::SUCCESS);
  // The fenced write sends what the read brings back: it must not leave before it.
  abi::SendWorkRequest write = p.Wr(WrType::RDMA_WRITE, 0, 100, 5000, 2);
  write.send_flags = abi::SendFlags::FENCE;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, write), abi::Status::SUCCESS);
  EXPECT_EQ(p.cable.queued(), 1u);  // only the read request
  ASSERT_TRUE(p.Run());
  EXPECT_TRUE(Matches(p.b.buffer, 5000, 100, 7));
  EXPECT_EQ(ops[wire::BthOpcode::RC_RDMA_WRITE_ONLY], 1u);
  EXPECT_EQ(p.Poll(p.a).size(), 2u);
}

TEST(Rc, UnsignaledSuccessesAreSilent) {
  RcOptions options;
  options.sq_signaled = false;
  RcPair p(options);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_WRITE, 0, 10, 0, 1)), abi::Status::SUCCESS);
  abi::SendWorkRequest signaled = p.Wr(WrType::RDMA_WRITE, 0, 10, 0, 2);
  signaled.send_flags = abi::SendFlags::SIGNALED;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, signaled), abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  const auto sent = p.Poll(p.a);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].wr_id, 2u);
}

TEST(Rc, SendWithInvalidateOfAKeyThatIsNoWindowFailsOnBothSides) {
  // Successful remote invalidation is in mw_test.cc; a key naming no type 2 window is a
  // remote access violation that the consumed receive reports.
  RcPair p;
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 64)), abi::Status::SUCCESS);
  abi::SendWorkRequest wr = p.Wr(WrType::SEND_WITH_INVALIDATE, 0, 16);
  wr.invalidate_rkey = 0x1234;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, wr), abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  const auto got = p.Poll(p.b);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, WcStatus::LOCAL_ACCESS_ERR);
  const auto sent = p.Poll(p.a);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, WcStatus::REM_ACCESS_ERR);
}

TEST(Rc, RnrNakThenSuccessOnceAReceiveIsPosted) {
  RcPair p;
  OpcodeCounter ops(p.cable);
  Fill(p.a.buffer, 0, 1500, 8);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::SEND, 0, 1500)), abi::Status::SUCCESS);
  p.cable.Pump();
  ASSERT_EQ(ops.syndromes.size(), 1u);
  EXPECT_EQ(ops.syndromes[0], 0x21);  // RNR NAK, timer code 1 (the QP's min_rnr_timer)
  EXPECT_EQ(p.Poll(p.a).size(), 0u);
  p.Advance(5'000);  // 5 µs: the 10 µs RNR wait is not over, nothing is resent
  EXPECT_EQ(p.cable.queued(), 0u);
  p.Advance(5'000);
  p.cable.Pump();
  EXPECT_EQ(ops.syndromes.size(), 2u);  // still nothing posted: RNR NAK again
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 2000)), abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  const auto got = p.Poll(p.b);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].length, 1500u);
  EXPECT_TRUE(Matches(p.b.buffer, 0, 1500, 8));
  EXPECT_EQ(p.Poll(p.a).at(0).status, WcStatus::SUCCESS);
}

TEST(Rc, RnrRetryExceeded) {
  RcOptions options;
  options.rnr_retry = 2;
  RcPair p(options);
  OpcodeCounter ops(p.cable);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::SEND, 0, 8, 0, 1)), abi::Status::SUCCESS);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_WRITE, 0, 8, 0, 2)), abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  const auto sent = p.Poll(p.a);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].status, WcStatus::RNR_RETRY_EXC_ERR);
  EXPECT_EQ(sent[1].status, WcStatus::WR_FLUSH_ERR);
  EXPECT_EQ(ops[wire::BthOpcode::RC_SEND_ONLY], 3u);  // the first try and two retries
  EXPECT_EQ(p.a.qp().state, abi::QpState::ERROR);
}

TEST(Rc, BadRkeyIsARemoteAccessErrorAndTouchesNothing) {
  RcPair p;
  Fill(p.a.buffer, 0, 3000, 9);
  abi::SendWorkRequest wr = p.Wr(WrType::RDMA_WRITE, 0, 3000, 0, 1);
  wr.rkey ^= 0x80;  // stale key byte
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, wr), abi::Status::SUCCESS);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_WRITE, 0, 8, 0, 2)), abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  const auto sent = p.Poll(p.a);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].status, WcStatus::REM_ACCESS_ERR);
  EXPECT_EQ(sent[1].status, WcStatus::WR_FLUSH_ERR);
  for (uint8_t byte : p.b.buffer) ASSERT_EQ(byte, 0);
  EXPECT_EQ(p.b.qp().state, abi::QpState::ERROR);

  // Out of bounds and missing rights are the same error.
  RcPair q;
  ASSERT_EQ(q.a.hca.PostSend(q.a.qpn, q.Wr(WrType::RDMA_READ, 0, 64, q.b.buffer.size() - 32)),
            abi::Status::SUCCESS);
  ASSERT_TRUE(q.Run());
  EXPECT_EQ(q.Poll(q.a).at(0).status, WcStatus::REM_ACCESS_ERR);
}

TEST(Rc, QpWithoutRemoteWriteRightRefusesWrites) {
  RcOptions options;
  options.qp_access = abi::AccessFlags::REMOTE_READ;
  RcPair p(options);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_WRITE, 0, 8)), abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  EXPECT_EQ(p.Poll(p.a).at(0).status, WcStatus::REM_INV_REQ_ERR);
  for (uint8_t byte : p.b.buffer) ASSERT_EQ(byte, 0);
}

TEST(Rc, ReceiveWithBadKeyIsARemoteOperationalError) {
  RcPair p;
  abi::RecvWorkRequest recv = p.Recv(0, 64, 9);
  recv.sge[0].lkey ^= 0x80;
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, recv), abi::Status::SUCCESS);
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 64, 10)), abi::Status::SUCCESS);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::SEND, 0, 8)), abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  EXPECT_EQ(p.Poll(p.a).at(0).status, WcStatus::REM_OP_ERR);
  const auto got = p.Poll(p.b);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].wr_id, 9u);
  EXPECT_EQ(got[0].status, WcStatus::LOCAL_PROT_ERR);
  EXPECT_EQ(got[1].status, WcStatus::WR_FLUSH_ERR);
}

TEST(Rc, ReceiveTooSmallIsAnInvalidRequest) {
  RcPair p;
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 1500)), abi::Status::SUCCESS);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::SEND, 0, 2000)), abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  EXPECT_EQ(p.Poll(p.a).at(0).status, WcStatus::REM_INV_REQ_ERR);
  EXPECT_EQ(p.Poll(p.b).at(0).status, WcStatus::LOCAL_LENGTH_ERR);
}

TEST(Rc, LocalKeyErrorCompletesInOrderAndFlushes) {
  RcPair p;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_WRITE, 0, 8, 0, 1)), abi::Status::SUCCESS);
  abi::SendWorkRequest bad = p.Wr(WrType::RDMA_WRITE, 0, 8, 0, 2);
  bad.sge[0].lkey ^= 0x80;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, bad), abi::Status::SUCCESS);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_WRITE, 0, 8, 0, 3)), abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  const auto sent = p.Poll(p.a);
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0].status, WcStatus::SUCCESS);
  EXPECT_EQ(sent[1].status, WcStatus::LOCAL_PROT_ERR);
  EXPECT_EQ(sent[2].status, WcStatus::WR_FLUSH_ERR);
}

TEST(Rc, PostingErrorsQueueNothing) {
  RcPair p;
  abi::SendWorkRequest read = p.Wr(WrType::RDMA_READ, 0, 8);
  read.send_flags = abi::SendFlags::IMMEDIATE;
  EXPECT_EQ(p.a.hca.PostSend(p.a.qpn, read), abi::Status::INVALID_PARAMETER);
  abi::SendWorkRequest unknown = p.Wr(static_cast<WrType>(5), 0, 8);  // no such operation
  EXPECT_EQ(p.a.hca.PostSend(p.a.qpn, unknown), abi::Status::INVALID_WR_TYPE);
  EXPECT_EQ(p.cable.queued(), 0u);
  EXPECT_TRUE(p.a.qp().rc.req.wqes.empty());
}

}  // namespace
}  // namespace softib::hca
