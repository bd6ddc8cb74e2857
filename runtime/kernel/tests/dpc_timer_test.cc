// DPCs run at DISPATCH on their node's thread; timers queue DPCs, fire, repeat and cancel.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "softib/kernel/dpc.h"
#include "softib/kernel/event.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/node.h"
#include "softib/kernel/timer.h"
#include "test_driver.h"

namespace softib::kernel {
namespace {

using namespace std::chrono_literals;

struct DpcProbe {
  KEvent ran{EventType::kNotification};
  Irql irql = Irql::kPassive;
  Node* node = nullptr;
  std::thread::id thread;
  void* arg1 = nullptr;
  std::atomic<int> count{0};

  static void Routine(Kdpc*, void* context, void* arg1, void*) {
    auto* probe = static_cast<DpcProbe*>(context);
    probe->irql = CurrentIrql();
    probe->node = Node::Current();
    probe->thread = std::this_thread::get_id();
    probe->arg1 = arg1;
    probe->count.fetch_add(1);
    probe->ran.Set();
  }
};

// Arms a one-shot timer due in `due` and waits until its DPC ran: every timer of `node` due
// earlier has fired by then (they fire in due order) and its DPC was queued before this one.
void FireSentinelTimer(Node* node, std::chrono::milliseconds due) {
  DpcProbe sentinel;
  Kdpc dpc;
  KeInitializeDpc(&dpc, node, &DpcProbe::Routine, &sentinel);
  Ktimer timer;
  KeInitializeTimer(&timer, node);
  KeSetTimer(&timer, due, &dpc);
  const Status ran = KeWaitForSingleObject(&sentinel.ran, 10s);
  KeCancelTimer(&timer);
  KeFlushQueuedDpcs(node);  // its DPC has returned: the sentinel may go
  ASSERT_EQ(ran, Status::SUCCESS);
}

TEST(Dpc, RunsAtDispatchOnTheNodesThread) {
  Node node({.name = "a"});
  DpcProbe probe;
  Kdpc dpc;
  KeInitializeDpc(&dpc, &node, &DpcProbe::Routine, &probe);
  int argument = 0;
  EXPECT_TRUE(KeInsertQueueDpc(&dpc, &argument, nullptr));
  ASSERT_EQ(KeWaitForSingleObject(&probe.ran, 5s), Status::SUCCESS);
  EXPECT_EQ(probe.irql, Irql::kDispatch);
  EXPECT_EQ(probe.node, &node);
  EXPECT_NE(probe.thread, std::this_thread::get_id());
  EXPECT_EQ(probe.arg1, &argument);
}

// Holds the DPC thread until released, so that the queue can be examined.
struct Gate {
  std::atomic<bool> entered{false};
  std::atomic<bool> open{false};
  static void Routine(Kdpc*, void* context, void*, void*) {
    auto* gate = static_cast<Gate*>(context);
    gate->entered = true;
    while (!gate->open) std::this_thread::yield();  // a DPC must not wait on events
  }
};

TEST(Dpc, QueuedOnceRemovableAndFifo) {
  Node node;
  Gate gate;
  Kdpc blocker;
  KeInitializeDpc(&blocker, &node, &Gate::Routine, &gate);
  KeInsertQueueDpc(&blocker, nullptr, nullptr);
  ASSERT_TRUE(testing::WaitUntil([&] { return gate.entered.load(); }));

  std::vector<int> order;  // written only by the DPC thread
  auto record = [](Kdpc*, void* context, void* arg1, void*) {
    static_cast<std::vector<int>*>(context)->push_back(
        static_cast<int>(reinterpret_cast<intptr_t>(arg1)));
  };
  Kdpc first, second, removed;
  KeInitializeDpc(&first, &node, record, &order);
  KeInitializeDpc(&second, &node, record, &order);
  KeInitializeDpc(&removed, &node, record, &order);
  EXPECT_TRUE(KeInsertQueueDpc(&first, reinterpret_cast<void*>(1), nullptr));
  EXPECT_FALSE(KeInsertQueueDpc(&first, reinterpret_cast<void*>(9), nullptr));  // already queued
  EXPECT_TRUE(KeInsertQueueDpc(&removed, reinterpret_cast<void*>(3), nullptr));
  EXPECT_TRUE(KeInsertQueueDpc(&second, reinterpret_cast<void*>(2), nullptr));
  EXPECT_TRUE(KeRemoveQueueDpc(&removed));
  EXPECT_FALSE(KeRemoveQueueDpc(&removed));
  gate.open = true;
  KeFlushQueuedDpcs(&node);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(Timer, FiresAfterItsDueTimeAndQueuesItsDpc) {
  Node node;
  DpcProbe probe;
  Kdpc dpc;
  KeInitializeDpc(&dpc, &node, &DpcProbe::Routine, &probe);
  Ktimer timer;
  KeInitializeTimer(&timer, &node);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(KeSetTimer(&timer, 20ms, &dpc));
  EXPECT_FALSE(KeReadStateTimer(&timer));
  ASSERT_EQ(KeWaitForSingleObject(&probe.ran, 5s), Status::SUCCESS);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
  EXPECT_EQ(probe.irql, Irql::kDispatch);
  EXPECT_TRUE(KeReadStateTimer(&timer));
  EXPECT_FALSE(KeCancelTimer(&timer));  // a one-shot timer disarms when it fires
}

TEST(Timer, CancelledTimerNeverFires) {
  Node node;
  DpcProbe probe;
  Kdpc dpc;
  KeInitializeDpc(&dpc, &node, &DpcProbe::Routine, &probe);
  Ktimer timer;
  KeInitializeTimer(&timer, &node);
  KeSetTimer(&timer, 30ms, &dpc);
  EXPECT_TRUE(KeSetTimer(&timer, 40ms, &dpc));  // re-arming reports it was armed
  EXPECT_TRUE(KeCancelTimer(&timer));
  EXPECT_FALSE(KeCancelTimer(&timer));
  // A sentinel due later than the cancelled timer would have been: timers fire in due
  // order, so once it ran, so would have the cancelled one, and its DPC before the flush.
  FireSentinelTimer(&node, 50ms);
  KeFlushQueuedDpcs(&node);
  EXPECT_EQ(probe.count.load(), 0);
  EXPECT_FALSE(KeReadStateTimer(&timer));
}

TEST(Timer, PeriodicTimerRepeatsUntilCancelled) {
  Node node;
  DpcProbe probe;
  Kdpc dpc;
  KeInitializeDpc(&dpc, &node, &DpcProbe::Routine, &probe);
  Ktimer timer;
  KeInitializeTimer(&timer, &node);
  KeSetTimer(&timer, 1ms, &dpc, 2ms);
  ASSERT_TRUE(testing::WaitUntil([&] { return probe.count.load() >= 5; }));
  EXPECT_TRUE(KeCancelTimer(&timer));
  KeFlushQueuedDpcs(&node);
  const int fired = probe.count.load();
  // Two and a half periods: a timer still armed would have fired before the sentinel.
  FireSentinelTimer(&node, 5ms);
  KeFlushQueuedDpcs(&node);
  EXPECT_EQ(probe.count.load(), fired);
}

TEST(Timer, EarlierDueTimeFiresFirst) {
  Node node;
  struct Tagged {
    std::vector<int>* order;
    int id;
  };
  std::vector<int> order;  // DPC thread only, read after the flush
  Tagged early_tag{&order, 1}, late_tag{&order, 2};
  auto record = [](Kdpc*, void* context, void*, void*) {
    auto* tag = static_cast<Tagged*>(context);
    tag->order->push_back(tag->id);
  };
  Kdpc early, late;
  KeInitializeDpc(&early, &node, record, &early_tag);
  KeInitializeDpc(&late, &node, record, &late_tag);
  Ktimer early_timer, late_timer;
  KeInitializeTimer(&early_timer, &node);
  KeInitializeTimer(&late_timer, &node);
  KeSetTimer(&late_timer, 30ms, &late);
  KeSetTimer(&early_timer, 5ms, &early);
  ASSERT_TRUE(testing::WaitUntil([&] { return KeReadStateTimer(&late_timer); }));
  KeFlushQueuedDpcs(&node);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

}  // namespace
}  // namespace softib::kernel
