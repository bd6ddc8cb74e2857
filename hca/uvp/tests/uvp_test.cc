// The provider's verbs over rings the test formats as the HCA does, with the HCA's side
// played by hca/rings' consumer and CQ producer.
#include "softib/uvp/uvp.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "softib/rings/shared_memory.h"

namespace softib::uvp {
namespace {

using abi::RecvWorkRequest;
using abi::SendWorkRequest;
using abi::WorkCompletion;
using rings::RingKind;

struct Hca {
  rings::SharedMemory shm;
  abi::RingMapping send{}, recv{}, cq{};
  rings::RingConsumer<SendWorkRequest> sq;
  rings::RingConsumer<RecvWorkRequest> rq;
  rings::CqProducer cqp;

  explicit Hca(uint32_t n, bool with_recv = true) {
    rings::RegionLayout layout;
    EXPECT_TRUE(layout.Add(RingKind::SEND, n, &send));
    if (with_recv) {
      EXPECT_TRUE(layout.Add(RingKind::RECV, n, &recv));
    }
    EXPECT_TRUE(layout.Add(RingKind::CQ, n, &cq));
    std::string error;
    EXPECT_TRUE(rings::SharedMemory::Create("uvp-test", layout.size(), &shm, &error)) << error;
    rings::FormatRing(shm.base(), send, RingKind::SEND);
    if (with_recv) rings::FormatRing(shm.base(), recv, RingKind::RECV);
    rings::FormatRing(shm.base(), cq, RingKind::CQ);
    sq = {rings::ControlAt(shm.base(), send), rings::EntriesAt<SendWorkRequest>(shm.base(), send),
          n, rings::Side::kHca};
    if (with_recv) {
      rq = {rings::ControlAt(shm.base(), recv), rings::EntriesAt<RecvWorkRequest>(shm.base(), recv),
            n, rings::Side::kHca};
    }
    cqp = {rings::ControlAt(shm.base(), cq), rings::EntriesAt<WorkCompletion>(shm.base(), cq), n};
  }
  bool Complete(uint64_t wr_id, bool solicited = false) {
    WorkCompletion wc{};
    wc.wr_id = wr_id;
    bool notify = false;
    EXPECT_EQ(cqp.Push(wc, solicited, &notify), rings::CqProducer::PushResult::kPushed);
    return notify;
  }
};

std::vector<SendWorkRequest> Sends(uint64_t first, size_t count) {
  std::vector<SendWorkRequest> wrs(count);
  for (size_t i = 0; i < count; ++i) {
    wrs[i].wr_id = first + i;
    wrs[i].num_sge = 1;
  }
  return wrs;
}

TEST(UvpTest, PostSendFillsTheRingThenRunsOutOfResources) {
  Hca hca(4);
  QueuePair qp;
  ASSERT_EQ(qp.Attach(hca.shm.base(), hca.shm.size(), hca.send, hca.recv), Status::SUCCESS);
  uint32_t posted = 0;
  auto wrs = Sends(0, 6);
  EXPECT_EQ(qp.PostSend(wrs, &posted), Status::INSUFFICIENT_RESOURCES);
  EXPECT_EQ(posted, 4u);
  SendWorkRequest out{};
  ASSERT_EQ(hca.sq.Pop(&out), rings::PopResult::kEntry);
  EXPECT_EQ(out.wr_id, 0u);
  EXPECT_EQ(qp.PostSend(std::span(wrs).subspan(4, 1), &posted), Status::SUCCESS);
  EXPECT_EQ(posted, 1u);
}

TEST(UvpTest, PostSendStopsAtTheFirstBadRequest) {
  Hca hca(8);
  QueuePair qp;
  ASSERT_EQ(qp.Attach(hca.shm.base(), hca.shm.size(), hca.send, hca.recv), Status::SUCCESS);
  auto wrs = Sends(0, 3);
  wrs[1].num_sge = abi::kMaxWrSge + 1;
  uint32_t posted = 0;
  EXPECT_EQ(qp.PostSend(wrs, &posted), Status::INVALID_MAX_SGE);
  EXPECT_EQ(posted, 1u);
  wrs[1].num_sge = 0;
  wrs[1].wr_type = static_cast<abi::WrType>(42);
  EXPECT_EQ(qp.PostSend(std::span(wrs).subspan(1), &posted), Status::INVALID_WR_TYPE);
  EXPECT_EQ(posted, 0u);
}

TEST(UvpTest, PostToARingTheHcaFailedIsRefused) {
  Hca hca(8);
  QueuePair qp;
  ASSERT_EQ(qp.Attach(hca.shm.base(), hca.shm.size(), hca.send, hca.recv), Status::SUCCESS);
  hca.sq.Fail(rings::RingError::BAD_ENTRY);
  uint32_t posted = 7;
  auto wrs = Sends(0, 1);
  EXPECT_EQ(qp.PostSend(wrs, &posted), Status::INVALID_QP_STATE);
  EXPECT_EQ(posted, 0u);
}

TEST(UvpTest, PostRecvAndSrq) {
  Hca hca(4);
  QueuePair qp;
  ASSERT_EQ(qp.Attach(hca.shm.base(), hca.shm.size(), hca.send, hca.recv), Status::SUCCESS);
  std::vector<RecvWorkRequest> wrs(2);
  wrs[0].wr_id = 5;
  wrs[1].wr_id = 6;
  uint32_t posted = 0;
  EXPECT_EQ(qp.PostRecv(wrs, &posted), Status::SUCCESS);
  EXPECT_EQ(posted, 2u);
  RecvWorkRequest out{};
  ASSERT_EQ(hca.rq.Pop(&out), rings::PopResult::kEntry);
  EXPECT_EQ(out.wr_id, 5u);

  Hca srq_hca(4, /*with_recv=*/false);
  QueuePair srq_qp;
  abi::RingMapping none{};
  ASSERT_EQ(srq_qp.Attach(srq_hca.shm.base(), srq_hca.shm.size(), srq_hca.send, none),
            Status::SUCCESS);
  EXPECT_EQ(srq_qp.PostRecv(wrs, &posted), Status::INVALID_SETTING);

  // An SRQ ring is its own kind: a receive-queue mapping does not attach as one.
  SharedReceiveQueue srq;
  EXPECT_EQ(srq.Attach(hca.shm.base(), hca.shm.size(), hca.recv), Status::INVALID_PARAMETER);
  EXPECT_EQ(srq.PostSrqRecv(wrs, &posted), Status::INVALID_SRQ_HANDLE);
}

TEST(UvpTest, AttachRejectsMappingsOutsideTheObject) {
  Hca hca(4);
  QueuePair qp;
  abi::RingMapping bad = hca.send;
  bad.doorbell_offset += hca.shm.size();
  bad.ring_offset += hca.shm.size();
  EXPECT_EQ(qp.Attach(hca.shm.base(), hca.shm.size(), bad, hca.recv), Status::INVALID_PARAMETER);
  CompletionQueue cq;
  EXPECT_EQ(cq.Attach(hca.shm.base(), hca.shm.size(), hca.send), Status::INVALID_PARAMETER);
  uint32_t n = 0;
  WorkCompletion wc[1];
  EXPECT_EQ(cq.PollCq(wc, &n), Status::INVALID_CQ_HANDLE);
}

TEST(UvpTest, PollCqDrainsThenReportsNotFoundOrOverflow) {
  Hca hca(4);
  CompletionQueue cq;
  ASSERT_EQ(cq.Attach(hca.shm.base(), hca.shm.size(), hca.cq), Status::SUCCESS);
  WorkCompletion wcs[8];
  uint32_t n = 9;
  EXPECT_EQ(cq.PollCq(wcs, &n), Status::NOT_FOUND);
  EXPECT_EQ(n, 0u);
  for (uint64_t i = 0; i < 3; ++i) hca.Complete(i);
  uint32_t peek = 0;
  EXPECT_EQ(cq.PeekCq(&peek), Status::SUCCESS);
  EXPECT_EQ(peek, 3u);
  EXPECT_EQ(cq.PollCq(std::span(wcs, 2), &n), Status::SUCCESS);
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(wcs[1].wr_id, 1u);
  for (uint64_t i = 3; i < 6; ++i) hca.Complete(i);
  bool notify = false;
  EXPECT_EQ(hca.cqp.Push(WorkCompletion{}, false, &notify),
            rings::CqProducer::PushResult::kOverflow);
  EXPECT_EQ(cq.PollCq(wcs, &n), Status::SUCCESS);
  EXPECT_EQ(n, 4u);
  EXPECT_EQ(wcs[3].wr_id, 5u);
  EXPECT_EQ(cq.PollCq(wcs, &n), Status::OVERFLOW);
}

TEST(UvpTest, RearmCqAndRearmNCq) {
  Hca hca(8);
  CompletionQueue cq;
  ASSERT_EQ(cq.Attach(hca.shm.base(), hca.shm.size(), hca.cq), Status::SUCCESS);
  EXPECT_FALSE(hca.Complete(0));
  ASSERT_EQ(cq.RearmCq(abi::CqNotify::NEXT), Status::SUCCESS);
  EXPECT_TRUE(hca.Complete(1));
  EXPECT_FALSE(hca.Complete(2));
  ASSERT_EQ(cq.RearmCq(abi::CqNotify::SOLICITED), Status::SUCCESS);
  EXPECT_FALSE(hca.Complete(3, false));
  EXPECT_TRUE(hca.Complete(4, true));
  EXPECT_EQ(cq.RearmCq(static_cast<abi::CqNotify>(9)), Status::INVALID_PARAMETER);
  // Five waiting; an event at seven.
  EXPECT_EQ(cq.RearmNCq(0), Status::INVALID_SETTING);
  EXPECT_EQ(cq.RearmNCq(9), Status::INVALID_SETTING);
  ASSERT_EQ(cq.RearmNCq(7), Status::SUCCESS);
  EXPECT_FALSE(hca.Complete(5));
  EXPECT_TRUE(hca.Complete(6));
  // A re-attached poller continues the arm sequence instead of repeating a fired one.
  CompletionQueue again;
  ASSERT_EQ(again.Attach(hca.shm.base(), hca.shm.size(), hca.cq), Status::SUCCESS);
  WorkCompletion wcs[8];
  uint32_t n = 0;
  ASSERT_EQ(again.PollCq(wcs, &n), Status::SUCCESS);
  ASSERT_EQ(again.RearmCq(abi::CqNotify::NEXT), Status::SUCCESS);
  EXPECT_TRUE(hca.Complete(7));
}

TEST(UvpTest, WaitReturnsWhenACompletionIsReady) {
  Hca hca(4);
  CompletionQueue cq;
  ASSERT_EQ(cq.Attach(hca.shm.base(), hca.shm.size(), hca.cq), Status::SUCCESS);
  WaitPolicy no_block{.spin_ns = 1000, .yield_while_spinning = true, .sleep_timeout_ns = 1000};
  EXPECT_FALSE(cq.Wait(no_block));
  hca.Complete(1);
  EXPECT_TRUE(cq.Wait(WaitPolicy{}));
}

}  // namespace
}  // namespace softib::uvp
