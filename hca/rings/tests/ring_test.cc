// Ring semantics in one process: order, full/empty, wraparound of the free-running indices,
// corrupt indices from the other side, copy-out, CQ overflow and arming, doorbells.
#include <atomic>
#include <thread>
#include <vector>

#include "softib/rings/entry_checks.h"
#include "test_region.h"

namespace softib::rings {
namespace {

using abi::RecvWorkRequest;
using abi::SendWorkRequest;
using abi::WorkCompletion;
using testing::MakeRegion;
using testing::Ring;

struct SendPair {
  testing::TestRing ring;
  SharedMemory shm;
  RingProducer<SendWorkRequest> producer;  // the process
  RingConsumer<SendWorkRequest> consumer;  // the HCA

  explicit SendPair(uint32_t n, uint32_t start_index = 0) : ring(Ring(RingKind::SEND, n)) {
    shm = MakeRegion({&ring});
    RingControl* control = ControlAt(shm.base(), ring.mapping);
    control->producer.producer_index = start_index;
    control->consumer.consumer_index = start_index;
    auto* entries = EntriesAt<SendWorkRequest>(shm.base(), ring.mapping);
    producer = RingProducer<SendWorkRequest>(control, entries, n, Side::kClient);
    consumer = RingConsumer<SendWorkRequest>(control, entries, n, Side::kHca);
  }
  RingControl* control() { return ControlAt(shm.base(), ring.mapping); }
};

SendWorkRequest Wr(uint64_t id) {
  SendWorkRequest wr{};
  wr.wr_id = id;
  wr.num_sge = 1;
  return wr;
}

TEST(RingTest, EntriesComeOutInOrderUntilEmpty) {
  SendPair p(8);
  SendWorkRequest out{};
  EXPECT_EQ(p.consumer.Pop(&out), PopResult::kEmpty);
  for (uint64_t i = 0; i < 5; ++i) ASSERT_TRUE(p.producer.TryPush(Wr(i)));
  // Not published yet: invisible.
  EXPECT_EQ(p.consumer.Pop(&out), PopResult::kEmpty);
  p.producer.Publish();
  for (uint64_t i = 0; i < 5; ++i) {
    ASSERT_EQ(p.consumer.Pop(&out), PopResult::kEntry);
    EXPECT_EQ(out.wr_id, i);
  }
  EXPECT_EQ(p.consumer.Pop(&out), PopResult::kEmpty);
  EXPECT_EQ(p.control()->status.error, RingError::NONE);
}

TEST(RingTest, FullRingRefusesUntilTheConsumerReleases) {
  SendPair p(4);
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(p.producer.TryPush(Wr(i)));
  EXPECT_FALSE(p.producer.TryPush(Wr(99)));
  EXPECT_EQ(p.producer.Free(), 0u);
  p.producer.Publish();
  SendWorkRequest out{};
  ASSERT_EQ(p.consumer.Pop(&out, /*defer_release=*/true), PopResult::kEntry);
  EXPECT_FALSE(p.producer.TryPush(Wr(99))) << "slot not released yet";
  p.consumer.Release();
  EXPECT_TRUE(p.producer.TryPush(Wr(4)));
  EXPECT_EQ(p.producer.error(), RingError::NONE);
}

TEST(RingTest, IndicesWrapAround2To32) {
  SendPair p(4, /*start_index=*/0xFFFFFFF0u);
  SendWorkRequest out{};
  uint64_t next_in = 0, next_out = 0;
  for (int round = 0; round < 40; ++round) {
    for (int k = 0; k < 3; ++k) ASSERT_TRUE(p.producer.TryPush(Wr(next_in++)));
    p.producer.Publish();
    for (int k = 0; k < 3; ++k) {
      ASSERT_EQ(p.consumer.Pop(&out), PopResult::kEntry);
      ASSERT_EQ(out.wr_id, next_out++);
    }
  }
  EXPECT_LT(p.control()->producer.producer_index, 0x1000u) << "the index wrapped";
  EXPECT_EQ(p.consumer.error(), RingError::NONE);
}

TEST(RingTest, ProducerIndexMoreThanARingAheadFailsTheRing) {
  SendPair p(8);
  p.control()->producer.producer_index = 9;  // a malicious process
  SendWorkRequest out{};
  EXPECT_EQ(p.consumer.Pop(&out), PopResult::kError);
  EXPECT_EQ(p.control()->status.error, RingError::BAD_PRODUCER_INDEX);
  // Repairing the index does not revive the ring.
  p.control()->producer.producer_index = 1;
  EXPECT_EQ(p.consumer.Pop(&out), PopResult::kError);
  EXPECT_EQ(p.producer.error(), RingError::BAD_PRODUCER_INDEX) << "the process sees it";
  EXPECT_FALSE(p.producer.TryPush(Wr(1)));
}

TEST(RingTest, ProducerIndexBehindTheConsumerFailsTheRing) {
  SendPair p(8);
  ASSERT_TRUE(p.producer.TryPush(Wr(0)));
  p.producer.Publish();
  SendWorkRequest out{};
  ASSERT_EQ(p.consumer.Pop(&out), PopResult::kEntry);
  p.control()->producer.producer_index = 0;  // moved backwards
  EXPECT_EQ(p.consumer.Pop(&out), PopResult::kError);
  EXPECT_EQ(p.control()->status.error, RingError::BAD_PRODUCER_INDEX);
}

TEST(RingTest, EveryCorruptProducerIndexIsCaughtOrInBounds) {
  // Exhaustive over a window around the valid range: each value is either accepted (then
  // at most a ring's worth of entries comes out, all inside the ring) or fails the ring.
  for (uint32_t delta : {0u, 1u, 7u, 8u, 9u, 100u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu}) {
    SendPair p(8, 0xFFFFFFFCu);
    p.control()->producer.producer_index = 0xFFFFFFFCu + delta;
    SendWorkRequest out{};
    uint32_t popped = 0;
    PopResult r;
    while ((r = p.consumer.Pop(&out)) == PopResult::kEntry) ++popped;
    if (delta <= 8) {
      EXPECT_EQ(r, PopResult::kEmpty);
      EXPECT_EQ(popped, delta);
    } else {
      EXPECT_EQ(r, PopResult::kError) << delta;
      EXPECT_EQ(popped, 0u);
    }
  }
}

TEST(RingTest, ConsumerIndexAheadOfTheProducerFailsTheProducer) {
  testing::TestRing ring = Ring(RingKind::CQ, 4);
  SharedMemory shm = MakeRegion({&ring});
  RingControl* control = ControlAt(shm.base(), ring.mapping);
  CqProducer cq(control, EntriesAt<WorkCompletion>(shm.base(), ring.mapping), 4);
  control->consumer.consumer_index = 100;  // the process claims completions never written
  bool notify = false;
  for (int i = 0; i < 4; ++i) {
    // Up to the ring being "full" the stale cache is still in bounds; then the refresh fails.
    if (cq.Push(WorkCompletion{}, false, &notify) != CqProducer::PushResult::kPushed) break;
  }
  EXPECT_EQ(cq.Push(WorkCompletion{}, false, &notify), CqProducer::PushResult::kError);
  EXPECT_EQ(control->status.error, RingError::BAD_CONSUMER_INDEX);
}

TEST(RingTest, EntryIsCopiedOutBeforeItIsChecked) {
  SendPair p(4);
  SendWorkRequest wr = Wr(7);
  ASSERT_TRUE(p.producer.TryPush(wr));
  p.producer.Publish();
  SendWorkRequest out{};
  ASSERT_EQ(p.consumer.Pop(&out), PopResult::kEntry);
  // The process rewrites the slot after the HCA took it: the HCA's copy is what it checks.
  EntriesAt<SendWorkRequest>(p.shm.base(), p.ring.mapping)[0].num_sge = 1000;
  EXPECT_EQ(CheckSendWorkRequest(out), abi::Status::SUCCESS);
  EXPECT_EQ(out.num_sge, 1u);
}

TEST(RingTest, EntryChecks) {
  SendWorkRequest wr = Wr(1);
  EXPECT_EQ(CheckSendWorkRequest(wr), abi::Status::SUCCESS);
  wr.num_sge = abi::kMaxWrSge + 1;
  EXPECT_EQ(CheckSendWorkRequest(wr), abi::Status::INVALID_MAX_SGE);
  wr = Wr(1);
  wr.wr_type = static_cast<abi::WrType>(5);
  EXPECT_EQ(CheckSendWorkRequest(wr), abi::Status::INVALID_WR_TYPE);
  wr = Wr(1);
  wr.send_flags = abi::SendFlags::INLINE;
  wr.inline_length = abi::kMaxInlineData + 1;
  EXPECT_EQ(CheckSendWorkRequest(wr), abi::Status::INVALID_SETTING);
  wr = Wr(1);
  wr.reserved0 = 1;
  EXPECT_EQ(CheckSendWorkRequest(wr), abi::Status::INVALID_PARAMETER);
  wr = Wr(1);
  wr.send_flags = static_cast<abi::SendFlags>(0x100);
  EXPECT_EQ(CheckSendWorkRequest(wr), abi::Status::INVALID_PARAMETER);
  RecvWorkRequest rwr{};
  EXPECT_EQ(CheckRecvWorkRequest(rwr), abi::Status::SUCCESS);
  rwr.num_sge = abi::kMaxWrSge + 1;
  EXPECT_EQ(CheckRecvWorkRequest(rwr), abi::Status::INVALID_MAX_SGE);
}

struct CqPair {
  testing::TestRing ring = Ring(RingKind::CQ, 4);
  SharedMemory shm;
  CqProducer hca;
  RingConsumer<WorkCompletion> poller;
  CqPair() {
    shm = MakeRegion({&ring});
    hca = CqProducer(control(), EntriesAt<WorkCompletion>(shm.base(), ring.mapping), 4);
    poller = RingConsumer<WorkCompletion>(
        control(), EntriesAt<WorkCompletion>(shm.base(), ring.mapping), 4, Side::kClient);
  }
  RingControl* control() { return ControlAt(shm.base(), ring.mapping); }
  bool Push(bool solicited = false) {
    bool notify = false;
    EXPECT_EQ(hca.Push(WorkCompletion{}, solicited, &notify), CqProducer::PushResult::kPushed);
    return notify;
  }
};

TEST(CqProducerTest, OverflowIsTheCqErrorState) {
  CqPair cq;
  for (int i = 0; i < 4; ++i) cq.Push();
  bool notify = false;
  EXPECT_EQ(cq.hca.Push(WorkCompletion{}, false, &notify), CqProducer::PushResult::kOverflow);
  EXPECT_EQ(cq.control()->status.error, RingError::OVERFLOW);
  // The poller still sees the four completions, then the error.
  WorkCompletion wc{};
  int taken = 0;
  while (cq.poller.Pop(&wc) == PopResult::kEntry) ++taken;
  EXPECT_EQ(taken, 4);
  EXPECT_EQ(cq.poller.error(), RingError::OVERFLOW);
  EXPECT_EQ(cq.hca.Push(WorkCompletion{}, false, &notify), CqProducer::PushResult::kError)
      << "the CQ stays in error";
}

TEST(CqProducerTest, ArmNextFiresOnceAtTheNextCompletion) {
  CqPair cq;
  EXPECT_FALSE(cq.Push()) << "not armed";
  cq.control()->arm.arm_request = (1u << 2) | 1u;  // NEXT, sequence 1
  EXPECT_TRUE(cq.Push());
  EXPECT_FALSE(cq.Push()) << "an arm fires once";
  EXPECT_EQ(cq.control()->status.fired_request, (1u << 2) | 1u);
}

TEST(CqProducerTest, ArmSolicitedWaitsForASolicitedCompletion) {
  CqPair cq;
  cq.control()->arm.arm_request = (1u << 2) | 2u;
  EXPECT_FALSE(cq.Push(false));
  EXPECT_TRUE(cq.Push(true));
}

TEST(CqProducerTest, ArmCountFiresAtTheThreshold) {
  CqPair cq;
  cq.control()->arm.arm_count = 3;
  cq.control()->arm.arm_count_seq = 1;
  EXPECT_FALSE(cq.Push());
  EXPECT_FALSE(cq.Push());
  EXPECT_TRUE(cq.Push());
  EXPECT_FALSE(cq.Push());
}

TEST(DoorbellTest, SleepingConsumerIsWokenForEveryEntry) {
  // Each hand-off goes through a sleep; a lost wake-up would hang (the test's timeout).
  SendPair p(4);
  constexpr int kCount = 2000;
  std::thread hca([&] {
    SendWorkRequest out{};
    for (int i = 0; i < kCount;) {
      PopResult r = p.consumer.Pop(&out);
      ASSERT_NE(r, PopResult::kError);
      if (r == PopResult::kEntry) {
        ASSERT_EQ(out.wr_id, static_cast<uint64_t>(i));
        ++i;
      } else {
        p.consumer.Sleep(-1);
      }
    }
  });
  for (int i = 0; i < kCount; ++i) {
    while (!p.producer.TryPush(Wr(i))) std::this_thread::yield();
    p.producer.Publish();
  }
  hca.join();
}

TEST(DoorbellTest, HcaThreadWaitsOnManyRings) {
  SendPair a(4), b(4), c(4);
  RingControl* controls[] = {a.control(), b.control(), c.control()};
  RingConsumer<SendWorkRequest>* consumers[] = {&a.consumer, &b.consumer, &c.consumer};
  std::atomic<int> got{-1};
  std::thread hca([&] {
    for (;;) {
      for (int i = 0; i < 3; ++i) {
        SendWorkRequest out{};
        if (consumers[i]->Pop(&out) == PopResult::kEntry) {
          got = i;
          return;
        }
      }
      SleepUntilAnyRung(
          std::span<RingControl* const>(controls),
          [&](size_t i) { return consumers[i]->Available() != 0; }, -1);
    }
  });
  // Push once the thread announced its sleep on every ring (it then sleeps, or finds the
  // entry in its re-check): the hand-off goes through the doorbells.
  const auto announced = [&] {
    for (RingControl* control : controls) {
      if (std::atomic_ref<uint32_t>(control->doorbell.sleeping).load() == 0) return false;
    }
    return true;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!announced() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_TRUE(announced());
  ASSERT_TRUE(b.producer.TryPush(Wr(1)));
  b.producer.Publish();
  hca.join();
  EXPECT_EQ(got.load(), 1);
}

}  // namespace
}  // namespace softib::rings
