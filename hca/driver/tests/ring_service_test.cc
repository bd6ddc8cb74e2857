// The HCA driver's speed path: work posted into shared-memory rings is consumed by the ring
// service, executed by the device, and completed into CQ rings; a process that writes
// nonsense into its rings only breaks its own queues.
#include "ring_fixture.h"

#include <atomic>

#include "softib/rings/ring.h"

namespace softib::hca::testing {
namespace {

using abi::WcOpcode;
using abi::WcStatus;

TEST_F(RingFixture, SendAndRdmaWriteThroughTheRings) {
  Connect();
  Side& a = sides_[0];
  Side& b = sides_[1];
  for (std::size_t i = 0; i < 4096; ++i) a.buffer[i] = static_cast<uint8_t>(i * 7 + 1);

  abi::SendWorkRequest write = Send(a, 1, abi::WrType::RDMA_WRITE, 0, 4096);
  write.remote_addr = reinterpret_cast<uintptr_t>(b.buffer.data() + 4096);
  write.rkey = b.key;
  ASSERT_EQ(PostSend(a, write), Status::SUCCESS);
  abi::WorkCompletion wc{};
  ASSERT_EQ(PollOne(a, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 1u);
  EXPECT_EQ(wc.opcode, WcOpcode::RDMA_WRITE);
  EXPECT_EQ(wc.status, WcStatus::SUCCESS);
  EXPECT_EQ(std::memcmp(a.buffer.data(), b.buffer.data() + 4096, 4096), 0);

  ASSERT_EQ(PostRecv(b, Recv(b, 20, 0, 1024)), Status::SUCCESS);
  std::memcpy(a.buffer.data(), "over the rings", 15);
  ASSERT_EQ(PostSend(a, Send(a, 2, abi::WrType::SEND, 0, 15)), Status::SUCCESS);
  ASSERT_EQ(PollOne(a, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 2u);
  EXPECT_EQ(wc.opcode, WcOpcode::SEND);
  EXPECT_EQ(wc.status, WcStatus::SUCCESS);
  ASSERT_EQ(PollOne(b, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 20u);
  EXPECT_EQ(wc.opcode, WcOpcode::RECV);
  EXPECT_EQ(wc.status, WcStatus::SUCCESS);
  EXPECT_EQ(wc.length, 15u);
  EXPECT_EQ(wc.qp_num, b.qpn);
  EXPECT_STREQ(reinterpret_cast<const char*>(b.buffer.data()), "over the rings");

  // The CI's own poll finds nothing: the completions live in the ring.
  abi::WorkCompletion none[4];
  uint32_t count = 7;
  EXPECT_EQ(a.ci->PollCq(a.cq, none, &count), Status::NOT_FOUND);
  EXPECT_EQ(count, 0u);
}

TEST_F(RingFixture, ManySendsKeepTheirOrder) {
  Connect(/*cq_size=*/256, /*depth=*/64);
  Side& a = sides_[0];
  Side& b = sides_[1];
  constexpr int kCount = 500;
  int received = 0, sent = 0, posted_recv = 0, posted_send = 0;
  abi::WorkCompletion wc{};
  while (received < kCount || sent < kCount) {
    while (posted_recv < kCount && posted_recv - received < 32 &&
           PostRecv(b, Recv(b, 1000 + posted_recv, 64 * (posted_recv % 32), 64)) ==
               Status::SUCCESS) {
      ++posted_recv;
    }
    while (posted_send < kCount && posted_send - sent < 32 && posted_send < posted_recv) {
      abi::SendWorkRequest wr = Send(a, posted_send, abi::WrType::SEND, 0, 8);
      std::memcpy(a.buffer.data(), &posted_send, sizeof posted_send);
      wr.send_flags = wr.send_flags | abi::SendFlags::INLINE;
      wr.inline_length = 8;
      std::memcpy(wr.sge, &posted_send, sizeof posted_send);
      if (PostSend(a, wr) != Status::SUCCESS) break;
      ++posted_send;
    }
    if (sent < posted_send) {
      ASSERT_EQ(PollOne(a, &wc), Status::SUCCESS);
      ASSERT_EQ(wc.status, WcStatus::SUCCESS);
      ASSERT_EQ(wc.wr_id, static_cast<uint64_t>(sent));
      ++sent;
    }
    uint32_t n = 0;
    while (received < posted_send &&
           b.cq_ring.PollCq(std::span<abi::WorkCompletion>(&wc, 1), &n) == Status::SUCCESS) {
      ASSERT_EQ(wc.status, WcStatus::SUCCESS);
      ASSERT_EQ(wc.wr_id, static_cast<uint64_t>(1000 + received));
      int value = -1;
      std::memcpy(&value, b.buffer.data() + 64 * (received % 32), sizeof value);
      ASSERT_EQ(value, received);
      ++received;
    }
    if (received < sent) {
      ASSERT_EQ(PollOne(b, &wc), Status::SUCCESS);
      ASSERT_EQ(wc.wr_id, static_cast<uint64_t>(1000 + received));
      ++received;
    }
  }
  EXPECT_EQ(received, kCount);
}

TEST_F(RingFixture, SendPostedBeforeRtsWaitsInTheRing) {
  for (Side& s : sides_) {
    MakeQp(s);
    MapRings(s);
    Init(s);
  }
  Side& a = sides_[0];
  Side& b = sides_[1];
  ASSERT_EQ(PostRecv(b, Recv(b, 5, 0, 64)), Status::SUCCESS);
  ASSERT_EQ(PostSend(a, Send(a, 6, abi::WrType::SEND, 0, 32)), Status::SUCCESS);
  // A receive posted after it on the same QP: the service takes receives in INIT. Once it
  // took this one, it served the QP's send ring in the same pass, under the CA's lock, which
  // QueryQp (StateOf) takes after it: the send was looked at, and left.
  ASSERT_EQ(PostRecv(a, Recv(a, 7, 0, 64)), Status::SUCCESS);
  abi::RingControl* recv_control = rings::ControlAt(a.qp_memory.base(), a.recv_mapping);
  ASSERT_TRUE(Eventually([&] {
    return std::atomic_ref<uint32_t>(recv_control->consumer.consumer_index).load() ==
           std::atomic_ref<uint32_t>(recv_control->producer.producer_index).load();
  }));
  EXPECT_EQ(StateOf(a), abi::QpState::INIT);
  abi::WorkCompletion wc{};
  uint32_t n = 0;
  EXPECT_EQ(a.cq_ring.PollCq(std::span<abi::WorkCompletion>(&wc, 1), &n), Status::NOT_FOUND);
  EXPECT_EQ(StateOf(a), abi::QpState::INIT);  // nothing failed while it waited
  ToRtr(a, b);
  ToRtr(b, a);
  ToRts(b);
  ToRts(a);
  ASSERT_EQ(PollOne(a, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 6u);
  EXPECT_EQ(wc.status, WcStatus::SUCCESS);
  ASSERT_EQ(PollOne(b, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 5u);
  EXPECT_EQ(wc.length, 32u);
}

TEST_F(RingFixture, BadProducerIndexFailsTheRingAndTheQp) {
  Connect();
  Side& a = sides_[0];
  abi::RingControl* control = rings::ControlAt(a.qp_memory.base(), a.send_mapping);
  // The process claims far more entries than the ring holds.
  std::atomic_ref<uint32_t>(control->producer.producer_index)
      .store(a.send_mapping.num_entries * 3 + 1, std::memory_order_seq_cst);
  rings::RingDoorbell(control);
  EXPECT_TRUE(Eventually([&] {
    return std::atomic_ref<abi::RingError>(control->status.error).load() ==
           abi::RingError::BAD_PRODUCER_INDEX;
  }));
  EXPECT_TRUE(a.events.WaitFor(ci::CaEventKind::kAsync, a.qpn, abi::AsyncEventType::QP_FATAL));
  EXPECT_EQ(StateOf(a), abi::QpState::ERROR);
  // The other side and the CA are fine: B still answers and the CA serves new QPs.
  EXPECT_EQ(StateOf(sides_[1]), abi::QpState::RTS);
  uint32_t cq = 0;
  EXPECT_EQ(CreateCq(a, 4, &cq), Status::SUCCESS);
  EXPECT_EQ(DestroyCq(a, cq), Status::SUCCESS);
}

TEST_F(RingFixture, EntryWithTooManySgesCompletesWithLocalQpOpError) {
  Connect();
  Side& a = sides_[0];
  // Written straight into the ring, past the provider's own checks.
  rings::RingProducer<abi::SendWorkRequest> raw(
      rings::ControlAt(a.qp_memory.base(), a.send_mapping),
      rings::EntriesAt<abi::SendWorkRequest>(a.qp_memory.base(), a.send_mapping),
      a.send_mapping.num_entries, rings::Side::kClient);
  abi::SendWorkRequest bad = Send(a, 77, abi::WrType::SEND, 0, 8);
  bad.num_sge = abi::kMaxWrSge + 1;
  abi::SendWorkRequest next = Send(a, 78, abi::WrType::SEND, 0, 8);
  ASSERT_TRUE(raw.TryPush(bad));
  ASSERT_TRUE(raw.TryPush(next));
  raw.Publish();
  abi::WorkCompletion wc{};
  ASSERT_EQ(PollOne(a, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 77u);
  EXPECT_EQ(wc.status, WcStatus::LOCAL_QP_OP_ERR);
  EXPECT_EQ(wc.vendor_err, static_cast<uint8_t>(abi::Status::INVALID_MAX_SGE));
  ASSERT_EQ(PollOne(a, &wc), Status::SUCCESS);  // the QP is in error: the rest is flushed
  EXPECT_EQ(wc.wr_id, 78u);
  EXPECT_EQ(wc.status, WcStatus::WR_FLUSH_ERR);
  EXPECT_EQ(StateOf(a), abi::QpState::ERROR);
}

TEST_F(RingFixture, BadLkeyCompletesWithLocalProtectionError) {
  Connect();
  Side& a = sides_[0];
  abi::SendWorkRequest wr = Send(a, 9, abi::WrType::SEND, 0, 8);
  wr.sge[0].lkey = a.key ^ 0x5500;
  ASSERT_EQ(PostSend(a, wr), Status::SUCCESS);
  abi::WorkCompletion wc{};
  ASSERT_EQ(PollOne(a, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 9u);
  EXPECT_EQ(wc.status, WcStatus::LOCAL_PROT_ERR);
}

TEST_F(RingFixture, FullCqRingIsACqOverflow) {
  Connect(/*cq_size=*/2, /*depth=*/8);
  Side& a = sides_[0];
  Side& b = sides_[1];
  ASSERT_EQ(a.cq_ring.capacity(), 2u);
  for (int i = 0; i < 3; ++i) {
    abi::SendWorkRequest write = Send(a, 100 + i, abi::WrType::RDMA_WRITE, 0, 64);
    write.remote_addr = reinterpret_cast<uintptr_t>(b.buffer.data() + 4096);
    write.rkey = b.key;
    ASSERT_EQ(PostSend(a, write), Status::SUCCESS);
  }
  EXPECT_TRUE(a.events.WaitFor(ci::CaEventKind::kAsync, a.cq, abi::AsyncEventType::CQ_OVERFLOW));
  abi::WorkCompletion wc{};
  EXPECT_EQ(PollOne(a, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 100u);
  EXPECT_EQ(PollOne(a, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 101u);
  EXPECT_EQ(PollOne(a, &wc), Status::OVERFLOW);
  EXPECT_TRUE(Eventually([&] { return StateOf(a) == abi::QpState::ERROR; }));
  EXPECT_EQ(a.events.Count(ci::CaEventKind::kAsync, a.cq, abi::AsyncEventType::CQ_OVERFLOW), 1u);
}

TEST_F(RingFixture, CorruptConsumerIndexIsACqError) {
  Connect(/*cq_size=*/2, /*depth=*/8);
  Side& a = sides_[0];
  Side& b = sides_[1];
  abi::RingControl* control = rings::ControlAt(a.cq_memory.base(), a.cq_ring_mapping);
  // The poller claims to have taken completions the HCA never produced. The HCA reads the
  // consumer index when the ring looks full to it (the third completion here).
  std::atomic_ref<uint32_t>(control->consumer.consumer_index).store(1000);
  for (int i = 0; i < 3; ++i) {
    abi::SendWorkRequest write = Send(a, 1 + i, abi::WrType::RDMA_WRITE, 0, 64);
    write.remote_addr = reinterpret_cast<uintptr_t>(b.buffer.data() + 4096);
    write.rkey = b.key;
    ASSERT_EQ(PostSend(a, write), Status::SUCCESS);
  }
  EXPECT_TRUE(a.events.WaitFor(ci::CaEventKind::kAsync, a.cq, abi::AsyncEventType::CQ_ERROR));
  EXPECT_EQ(std::atomic_ref<abi::RingError>(control->status.error).load(),
            abi::RingError::BAD_CONSUMER_INDEX);
  // Only that CQ: B's completions still flow.
  ASSERT_EQ(PostRecv(b, Recv(b, 8, 0, 64)), Status::SUCCESS);
  abi::SendWorkRequest send = Send(a, 4, abi::WrType::SEND, 0, 8);
  ASSERT_EQ(PostSend(a, send), Status::SUCCESS);
  abi::WorkCompletion wc{};
  ASSERT_EQ(PollOne(b, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 8u);
}

TEST_F(RingFixture, ResetDiscardsWhatWaitsInTheRings) {
  for (Side& s : sides_) {
    MakeQp(s);
    MapRings(s);
    Init(s);
  }
  Side& a = sides_[0];
  Side& b = sides_[1];
  ASSERT_EQ(PostSend(a, Send(a, 1, abi::WrType::SEND, 0, 8)), Status::SUCCESS);  // waits: INIT
  abi::QpModifyAttributes reset{};
  reset.mask = abi::QpAttrMask::STATE;
  reset.state = abi::QpState::RESET;
  ASSERT_EQ(Modify(a, reset), Status::SUCCESS);
  Init(a);
  ToRtr(a, b);
  ToRtr(b, a);
  ToRts(b);
  ToRts(a);
  ASSERT_EQ(PostRecv(b, Recv(b, 5, 0, 64)), Status::SUCCESS);
  ASSERT_EQ(PostSend(a, Send(a, 2, abi::WrType::SEND, 0, 8)), Status::SUCCESS);
  abi::WorkCompletion wc{};
  ASSERT_EQ(PollOne(a, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 2u);  // 1 was discarded by the reset, without a completion
  ASSERT_EQ(PollOne(b, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 5u);
  uint32_t n = 0;
  EXPECT_EQ(b.cq_ring.PollCq(std::span<abi::WorkCompletion>(&wc, 1), &n), Status::NOT_FOUND);
}

TEST_F(RingFixture, ArmedCqRaisesOneCompletionEvent) {
  Connect();
  Side& a = sides_[0];
  Side& b = sides_[1];
  ASSERT_EQ(b.cq_ring.RearmCq(abi::CqNotify::NEXT), Status::SUCCESS);
  ASSERT_EQ(PostRecv(b, Recv(b, 1, 0, 64)), Status::SUCCESS);
  ASSERT_EQ(PostRecv(b, Recv(b, 2, 64, 64)), Status::SUCCESS);
  ASSERT_EQ(PostSend(a, Send(a, 3, abi::WrType::SEND, 0, 8)), Status::SUCCESS);
  EXPECT_TRUE(b.events.WaitFor(ci::CaEventKind::kCompletion, b.cq));
  abi::WorkCompletion wc{};
  ASSERT_EQ(PollOne(b, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 1u);
  // Not armed again: the next completion raises nothing.
  ASSERT_EQ(PostSend(a, Send(a, 4, abi::WrType::SEND, 0, 8)), Status::SUCCESS);
  ASSERT_EQ(PollOne(b, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 2u);
  ASSERT_EQ(PollOne(a, &wc), Status::SUCCESS);
  ASSERT_EQ(PollOne(a, &wc), Status::SUCCESS);
  EXPECT_EQ(b.events.Count(ci::CaEventKind::kCompletion, b.cq), 1u);
  // An unarmed CQ raised nothing at all.
  EXPECT_EQ(a.events.Count(ci::CaEventKind::kCompletion, a.cq), 0u);
}

TEST_F(RingFixture, SolicitedArmIgnoresUnsolicitedCompletions) {
  Connect();
  Side& a = sides_[0];
  Side& b = sides_[1];
  ASSERT_EQ(b.cq_ring.RearmCq(abi::CqNotify::SOLICITED), Status::SUCCESS);
  ASSERT_EQ(PostRecv(b, Recv(b, 1, 0, 64)), Status::SUCCESS);
  ASSERT_EQ(PostRecv(b, Recv(b, 2, 64, 64)), Status::SUCCESS);
  ASSERT_EQ(PostSend(a, Send(a, 3, abi::WrType::SEND, 0, 8)), Status::SUCCESS);
  abi::WorkCompletion wc{};
  ASSERT_EQ(PollOne(b, &wc), Status::SUCCESS);
  EXPECT_EQ(b.events.Count(ci::CaEventKind::kCompletion, b.cq), 0u);
  abi::SendWorkRequest solicited = Send(a, 4, abi::WrType::SEND, 0, 8);
  solicited.send_flags = solicited.send_flags | abi::SendFlags::SOLICITED;
  ASSERT_EQ(PostSend(a, solicited), Status::SUCCESS);
  EXPECT_TRUE(b.events.WaitFor(ci::CaEventKind::kCompletion, b.cq));
  ASSERT_EQ(PollOne(b, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 2u);
}

TEST_F(RingFixture, DestroyWhileTheServiceRuns) {
  Connect(/*cq_size=*/512, /*depth=*/64);
  Side& a = sides_[0];
  Side& b = sides_[1];
  std::atomic<bool> stop{false};
  std::atomic<int> posted{0}, refused{0};
  // The "process" keeps posting while its QP is destroyed under it.
  std::thread poster([&] {
    abi::WorkCompletion wcs[16];
    while (!stop.load()) {
      abi::SendWorkRequest write = Send(a, 1, abi::WrType::RDMA_WRITE, 0, 256);
      write.remote_addr = reinterpret_cast<uintptr_t>(b.buffer.data() + 4096);
      write.rkey = b.key;
      if (PostSend(a, write) == Status::SUCCESS) {
        posted.fetch_add(1);
      } else {
        refused.fetch_add(1);
      }
      uint32_t n = 0;
      a.cq_ring.PollCq(wcs, &n);
    }
  });
  ASSERT_TRUE(Eventually([&] { return posted.load() > 100; }));
  EXPECT_EQ(DestroyQp(a, a.qpn), Status::SUCCESS);
  abi::RingControl* control = rings::ControlAt(a.qp_memory.base(), a.send_mapping);
  EXPECT_EQ(std::atomic_ref<abi::RingError>(control->status.error).load(),
            abi::RingError::SHUTDOWN);
  // The process keeps at it until its posts are refused (the ring is shut down).
  EXPECT_TRUE(Eventually([&] { return refused.load() > 0; }));
  stop.store(true);
  poster.join();
  EXPECT_EQ(DestroyCq(a, a.cq), Status::SUCCESS);
  // The mapping survives in this process; the CA is done with it.
  EXPECT_EQ(PostSend(a, Send(a, 2, abi::WrType::SEND, 0, 8)), Status::INVALID_QP_STATE);
}

TEST_F(RingFixture, SecondMapAnswersTheSameRings) {
  MakeQp(sides_[0]);
  Side& a = sides_[0];
  abi::RingMapping first{}, second{}, recv{};
  uint32_t id1 = 0, id2 = 0;
  int fd1 = -1, fd2 = -1;
  ASSERT_EQ(a.ci->MapCqRing(a.cq, &first, &id1, &fd1), Status::SUCCESS);
  ASSERT_EQ(a.ci->MapCqRing(a.cq, &second, &id2, &fd2), Status::SUCCESS);
  EXPECT_EQ(id1, id2);
  EXPECT_EQ(std::memcmp(&first, &second, sizeof first), 0);
  EXPECT_NE(fd1, fd2);
  close(fd1);
  close(fd2);
  EXPECT_EQ(a.ci->MapCqRing(a.cq + 1000, &first, &id1, &fd1), Status::INVALID_CQ_HANDLE);
  EXPECT_EQ(a.ci->MapQpRings(a.qpn + 1000, &first, &recv, &id1, &fd1), Status::INVALID_QP_HANDLE);
  EXPECT_EQ(a.ci->MapSrqRing(12345, &first, &id1, &fd1), Status::INVALID_SRQ_HANDLE);
  // A mapped ring keeps its size.
  uint32_t size = 64;
  EXPECT_EQ(ResizeCq(a, a.cq, &size), Status::UNSUPPORTED);
}

TEST_F(RingFixture, SrqRingFeedsItsQps) {
  Side& a = sides_[0];
  Side& b = sides_[1];
  MakeQp(a);
  MapRings(a);
  // B receives from a mapped SRQ.
  ASSERT_EQ(AllocPd(b, &b.pd), Status::SUCCESS);
  ASSERT_EQ(RegisterMr(b, b.pd, reinterpret_cast<uintptr_t>(b.buffer.data()), b.buffer.size(),
                       abi::AccessFlags::LOCAL_WRITE, &b.key),
            Status::SUCCESS);
  uint32_t srq = 0;
  ASSERT_EQ(CreateCq(b, 32, &b.cq), Status::SUCCESS);
  abi::SrqAttributes srq_attributes{};
  srq_attributes.max_wr = 16;
  srq_attributes.max_sge = 1;
  ASSERT_EQ(CreateSrq(b, b.pd, srq_attributes, &srq), Status::SUCCESS);
  abi::QpCreateParams params{};
  params.qp_type = abi::QpType::RC;
  params.sq_signaled = 1;
  params.caps.sq_depth = 4;
  params.caps.sq_sge = 1;
  ASSERT_EQ(CreateQp(b, b.pd, params, b.cq, b.cq, srq, &b.qpn), Status::SUCCESS);
  MapRings(b);
  EXPECT_EQ(b.recv_mapping.num_entries, 0u);
  abi::RingMapping srq_mapping{};
  uint32_t id = 0;
  int fd = -1;
  ASSERT_EQ(b.ci->MapSrqRing(srq, &srq_mapping, &id, &fd), Status::SUCCESS);
  rings::SharedMemory srq_memory;
  std::string error;
  ASSERT_TRUE(rings::SharedMemory::Map(fd, &srq_memory, &error)) << error;
  uvp::SharedReceiveQueue srq_ring;
  ASSERT_EQ(srq_ring.Attach(srq_memory.base(), srq_memory.size(), srq_mapping), Status::SUCCESS);
  Init(a);
  Init(b);
  ToRtr(a, b);
  ToRtr(b, a);
  ToRts(a);
  ToRts(b);
  abi::RecvWorkRequest recv = Recv(b, 55, 128, 64);
  uint32_t posted = 0;
  ASSERT_EQ(srq_ring.PostSrqRecv(std::span<const abi::RecvWorkRequest>(&recv, 1), &posted),
            Status::SUCCESS);
  std::memcpy(a.buffer.data(), "via srq", 8);
  ASSERT_EQ(PostSend(a, Send(a, 56, abi::WrType::SEND, 0, 8)), Status::SUCCESS);
  abi::WorkCompletion wc{};
  ASSERT_EQ(PollOne(b, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 55u);
  EXPECT_EQ(wc.status, WcStatus::SUCCESS);
  EXPECT_STREQ(reinterpret_cast<const char*>(b.buffer.data() + 128), "via srq");
  ASSERT_EQ(PollOne(a, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 56u);
  EXPECT_EQ(DestroyQp(b, b.qpn), Status::SUCCESS);
  EXPECT_EQ(DestroySrq(b, srq), Status::SUCCESS);
  EXPECT_EQ(std::atomic_ref<abi::RingError>(
                rings::ControlAt(srq_memory.base(), srq_mapping)->status.error)
                .load(),
            abi::RingError::SHUTDOWN);
}

TEST_F(RingFixture, CaRemovalShutsTheRingsDown) {
  Connect();
  Side& a = sides_[0];
  ASSERT_EQ(HcaRemoveCa(driver_, a.guid), Status::SUCCESS);
  abi::RingControl* control = rings::ControlAt(a.qp_memory.base(), a.send_mapping);
  EXPECT_EQ(std::atomic_ref<abi::RingError>(control->status.error).load(),
            abi::RingError::SHUTDOWN);
  abi::WorkCompletion wc{};
  uint32_t n = 0;
  EXPECT_NE(a.cq_ring.PollCq(std::span<abi::WorkCompletion>(&wc, 1), &n), Status::SUCCESS);
  a.events.Join();
  a.ci->Dereference();
  a.ci = nullptr;
}

}  // namespace
}  // namespace softib::hca::testing
