// RC over a faulty cable: losses, duplicates and reordering must be invisible to the
// consumer (every message exactly once, in order), and a dead link must end in
// RETRY_EXC_ERR after exactly retry_count retransmissions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "rc_fixture.h"

namespace softib::hca {
namespace {

using abi::WcStatus;
using abi::WrType;
using testing::Fill;
using testing::Matches;
using testing::RcOptions;
using testing::RcPair;

TEST(RcReliability, OneLostPacketIsResentOnTheSequenceNak) {
  RcPair p;
  Fill(p.a.buffer, 0, 3000, 1);
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 4000)), abi::Status::SUCCESS);
  uint32_t naks = 0;
  p.cable.SetTap([&](int, std::span<const uint8_t> bytes) {
    ParsedPacket parsed;
    if (ParsePacket(bytes, &parsed) == DropReason::kNone &&
        parsed.hdr.bth.OpCode == static_cast<uint8_t>(wire::BthOpcode::RC_ACKNOWLEDGE) &&
        parsed.hdr.aeth.Syndrome == 0x60)
      ++naks;
  });
  p.cable.DropPacket(1);  // the SEND_MIDDLE
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::SEND, 0, 3000)), abi::Status::SUCCESS);
  p.cable.Pump();  // no time passes: the NAK alone brings the packet back
  EXPECT_EQ(naks, 1u);
  const auto got = p.Poll(p.b);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].length, 3000u);
  EXPECT_TRUE(Matches(p.b.buffer, 0, 3000, 1));
  EXPECT_EQ(p.Poll(p.a).at(0).status, WcStatus::SUCCESS);
}

TEST(RcReliability, LostAckIsRecoveredByTheTimerAndTheDuplicateIsNotRedone) {
  RcPair p;
  uint64_t counter = 0;
  std::memcpy(&p.b.buffer[0], &counter, 8);
  abi::SendWorkRequest faa = p.Wr(WrType::FETCH_ADD, 64, 8, 0);
  faa.compare_add = 1;
  p.cable.DropPacket(1);  // the atomic ACK
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, faa), abi::Status::SUCCESS);
  p.cable.Pump();
  EXPECT_EQ(p.Poll(p.a).size(), 0u);
  ASSERT_TRUE(p.Run());  // the local ACK timeout resends; the responder replays its answer
  const auto sent = p.Poll(p.a);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, WcStatus::SUCCESS);
  std::memcpy(&counter, &p.b.buffer[0], 8);
  EXPECT_EQ(counter, 1u);  // added once
  uint64_t original = 99;
  std::memcpy(&original, &p.a.buffer[64], 8);
  EXPECT_EQ(original, 0u);
}

TEST(RcReliability, LostReadResponseIsServedAgainByTheResponder) {
  RcPair p;
  Fill(p.b.buffer, 0, 2048, 3);
  uint32_t requests = 0;
  p.cable.SetTap([&](int, std::span<const uint8_t> bytes) {
    ParsedPacket parsed;
    if (ParsePacket(bytes, &parsed) == DropReason::kNone &&
        parsed.hdr.bth.OpCode == static_cast<uint8_t>(wire::BthOpcode::RC_RDMA_READ_REQUEST))
      ++requests;
  });
  p.cable.DropPacket(1);  // READ_RESPONSE_FIRST
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_READ, 4096, 2048, 0)),
            abi::Status::SUCCESS);
  const uint32_t responder_psn = p.b.qp().rq_psn;
  p.cable.Pump();  // the LAST response reveals the gap: the read is asked for again
  EXPECT_EQ(requests, 2u);
  // Two PSNs for the read, none for its duplicate.
  EXPECT_EQ(p.b.qp().rq_psn, PsnAdd(responder_psn, 2));
  const auto sent = p.Poll(p.a);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, WcStatus::SUCCESS);
  EXPECT_TRUE(Matches(p.a.buffer, 4096, 2048, 3));
}

TEST(RcReliability, LostAckMakesADuplicateSendThatIsAcknowledgedNotDelivered) {
  RcPair p;
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 64, 1)), abi::Status::SUCCESS);
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(64, 64, 2)), abi::Status::SUCCESS);
  p.cable.DropPacket(1);  // the ACK
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::SEND, 0, 8)), abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  EXPECT_EQ(p.Poll(p.a).size(), 1u);
  EXPECT_EQ(p.Poll(p.b).size(), 1u);  // one delivery; the second receive is still posted
  EXPECT_EQ(p.b.qp().rq.size(), 1u);
  EXPECT_EQ(p.a.hca.port(1).counters.xmit_packets, 2u);  // the send and its retransmission
}

// 1000 operations (sends with sequence numbers, writes, reads, fetch-adds) over a link
// that drops 10%, duplicates 5% and reorders 5% of the packets in both directions; three
// fixed seeds, so three different loss patterns, each replayed identically every run.
class LossyLink : public ::testing::TestWithParam<uint32_t> {};

TEST_P(LossyLink, ThousandMessagesArriveExactlyOnceInOrder) {
  RcOptions options;
  options.buffer_bytes = 6 << 20;
  RcPair p(options);
  p.cable.SetFaults({100, 50, 50, GetParam()});
  constexpr uint32_t kOps = 1000, kSlots = 64, kSlotBytes = 4096, kWindow = 48;
  // A: send sources, read landings, atomic results. B: receive slots, write targets, the
  // read source and the fetch-add counter. Every operation has its own bytes.
  constexpr uint64_t kSendSource = 0, kReadLanding = 1 << 20, kAtomicResults = 5 << 20;
  constexpr uint64_t kRecvArea = 0, kWriteArea = 1 << 20, kReadSource = 3 << 20, kCounter = 4 << 20;
  Fill(p.b.buffer, kReadSource, 3000, 77);
  for (uint32_t s = 0; s < kSlots; ++s)
    ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(kRecvArea + s * kSlotBytes, kSlotBytes, s)),
              abi::Status::SUCCESS);

  uint32_t posted = 0, completed = 0, next_send = 0, faa_done = 0, writes = 0;
  std::vector<uint32_t> send_ids, send_lengths;
  const auto kind_of = [](uint32_t i) {
    return i % 10 == 3 ? 1 : i % 10 == 5 ? 2 : i % 10 == 7 ? 3 : 0;
  };
  const auto source = [&](uint32_t i) { return kSendSource + i % 256 * kSlotBytes; };
  for (int step = 0; completed < kOps && step < 200000; ++step) {
    while (posted < kOps && posted - completed < kWindow) {
      const uint32_t i = posted;
      abi::SendWorkRequest wr{};
      switch (kind_of(i)) {
        case 0: {  // SEND: the operation's number, then a pattern seeded by it
          const uint32_t length = 4 + (i * 131) % 3000;
          Fill(p.a.buffer, source(i), length, i);
          std::memcpy(&p.a.buffer[source(i)], &i, 4);
          wr = p.Wr(WrType::SEND, source(i), length, 0, i);
          send_ids.push_back(i);
          send_lengths.push_back(length);
          break;
        }
        case 1:
          Fill(p.a.buffer, source(i), 1500, i);
          wr = p.Wr(WrType::RDMA_WRITE, source(i), 1500, kWriteArea + i * 1500, i);
          break;
        case 2:
          wr = p.Wr(WrType::RDMA_READ, kReadLanding + i * 3000, 3000, kReadSource, i);
          break;
        case 3:  // FETCH_ADD 1: the k-th one must see k
          wr = p.Wr(WrType::FETCH_ADD, kAtomicResults + i * 8, 8, kCounter, i);
          wr.compare_add = 1;
          break;
      }
      ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, wr), abi::Status::SUCCESS) << i;
      ++posted;
    }
    p.cable.Pump();
    for (const abi::WorkCompletion& wc : p.Poll(p.b)) {
      ASSERT_EQ(wc.status, WcStatus::SUCCESS);
      const uint64_t slot = kRecvArea + wc.wr_id * kSlotBytes;
      uint32_t seq = 0;
      std::memcpy(&seq, &p.b.buffer[slot], 4);
      ASSERT_LT(next_send, send_ids.size()) << "more messages than were sent";
      ASSERT_EQ(seq, send_ids[next_send]) << "out of order or duplicated";
      ASSERT_EQ(wc.length, send_lengths[next_send]);
      std::vector<uint8_t> expected(wc.length);
      Fill(expected, 0, wc.length, seq);
      std::memcpy(expected.data(), &seq, 4);
      ASSERT_TRUE(std::equal(expected.begin(), expected.end(), p.b.buffer.begin() + slot)) << seq;
      ++next_send;
      ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(slot, kSlotBytes, wc.wr_id)),
                abi::Status::SUCCESS);
    }
    const auto sent = p.Poll(p.a);
    for (const abi::WorkCompletion& wc : sent) {
      ASSERT_EQ(wc.status, WcStatus::SUCCESS) << wc.wr_id;
      ASSERT_EQ(wc.wr_id, completed) << "send completions out of order";
      const uint32_t i = completed++;
      if (kind_of(i) == 1) {
        ASSERT_TRUE(Matches(p.b.buffer, kWriteArea + i * 1500, 1500, i)) << i;
        ++writes;
      } else if (kind_of(i) == 2) {
        ASSERT_TRUE(Matches(p.a.buffer, kReadLanding + i * 3000, 3000, 77)) << i;
      } else if (kind_of(i) == 3) {
        uint64_t seen = 0;
        std::memcpy(&seen, &p.a.buffer[kAtomicResults + i * 8], 8);
        ASSERT_EQ(seen, faa_done++) << i;
      }
    }
    if (sent.empty() && p.cable.queued() == 0) p.Advance(1'000'000);
  }
  EXPECT_EQ(completed, kOps);
  EXPECT_EQ(next_send, send_lengths.size());
  EXPECT_EQ(writes, 100u);
  uint64_t counter = 0;
  std::memcpy(&counter, &p.b.buffer[kCounter], 8);
  EXPECT_EQ(counter, faa_done);  // every fetch-add executed exactly once
  const FaultCounters& faults = p.cable.fault_counters();
  EXPECT_GT(faults.dropped, 100u);
  EXPECT_GT(faults.duplicated, 50u);
  EXPECT_GT(faults.reordered, 50u);
}

INSTANTIATE_TEST_SUITE_P(RcReliability, LossyLink, ::testing::Values(1u, 7u, 20261122u));

TEST(RcReliability, DeadLinkEndsInRetryExceededAndFlush) {
  RcOptions options;
  options.retry_count = 3;
  RcPair p(options);
  p.cable.SetFaults({1000, 0, 0, 1});
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::SEND, 0, 1500, 0, 1)), abi::Status::SUCCESS);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_WRITE, 0, 8, 0, 2)), abi::Status::SUCCESS);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_READ, 0, 8, 0, 3)), abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  const auto sent = p.Poll(p.a);
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0].status, WcStatus::RETRY_EXC_ERR);
  EXPECT_EQ(sent[0].wr_id, 1u);
  EXPECT_EQ(sent[1].status, WcStatus::WR_FLUSH_ERR);
  EXPECT_EQ(sent[2].status, WcStatus::WR_FLUSH_ERR);
  EXPECT_EQ(p.a.qp().state, abi::QpState::ERROR);
  // Four packets (2 + 1 + 1), sent once and then retry_count more times.
  EXPECT_EQ(p.a.hca.port(1).counters.xmit_packets, 4u * (1 + 3));
  // About (retry_count + 1) local ACK timeouts of 4.2 ms went by.
  EXPECT_GE(p.now, 4 * 4'194'304ull);
  EXPECT_LE(p.now, 4 * 4'194'304ull + 5'000'000ull);
}

}  // namespace
}  // namespace softib::hca
