// Work items run at PASSIVE on the node's workers and keep their device alive; events.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "softib/kernel/event.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/node.h"
#include "softib/kernel/work_item.h"
#include "test_driver.h"

namespace softib::kernel {
namespace {

using namespace std::chrono_literals;

struct WorkProbe {
  KEvent ran{EventType::kNotification};
  Irql irql = Irql::kDispatch;
  Node* node = nullptr;
  DeviceObject* device = nullptr;
  std::thread::id thread;
};

TEST(WorkItem, RunsAtPassiveOnANodeWorker) {
  Node node;
  testing::TestDriver driver(node, "work");
  DeviceObject* device = driver.CreateDevice();
  WorkProbe probe;
  IoWorkItem* item = IoAllocateWorkItem(device);
  {
    // Queued from DISPATCH, as a DPC would.
    ScopedIrql dispatch(Irql::kDispatch);
    IoQueueWorkItem(
        item,
        [](DeviceObject* device, void* context) {
          auto* probe = static_cast<WorkProbe*>(context);
          probe->irql = CurrentIrql();
          probe->node = Node::Current();
          probe->device = device;
          probe->thread = std::this_thread::get_id();
          probe->ran.Set();
        },
        &probe);
  }
  ASSERT_EQ(KeWaitForSingleObject(&probe.ran, 5s), Status::SUCCESS);
  EXPECT_EQ(probe.irql, Irql::kPassive);
  EXPECT_EQ(probe.node, &node);
  EXPECT_EQ(probe.device, device);
  EXPECT_NE(probe.thread, std::this_thread::get_id());
  IoFreeWorkItem(item);  // no longer queued once its routine started
}

TEST(WorkItem, KeepsItsDeviceAliveUntilTheRoutineReturns) {
  Node node;
  testing::TestDriver driver(node, "work");
  DeviceObject* device = driver.CreateDevice("dev");
  struct Context {
    KEvent started{EventType::kNotification};
    KEvent proceed{EventType::kNotification};
    DeviceObject* device_seen = nullptr;
    IoWorkItem* item = nullptr;
  } context;
  context.item = IoAllocateWorkItem(device);
  IoQueueWorkItem(
      context.item,
      [](DeviceObject* device, void* raw) {
        auto* context = static_cast<Context*>(raw);
        context->started.Set();
        KeWaitForSingleObject(&context->proceed);
        context->device_seen = device;
        IoFreeWorkItem(context->item);  // a routine may free its own item
      },
      &context);
  ASSERT_EQ(KeWaitForSingleObject(&context.started, 5s), Status::SUCCESS);
  driver.Delete(device);
  EXPECT_EQ(node.device_count(), 1u);  // deleted, still referenced by the queued item
  context.proceed.Set();
  EXPECT_TRUE(testing::WaitUntil([&] { return node.device_count() == 0; }));
  EXPECT_EQ(context.device_seen, device);
}

TEST(Event, NotificationReleasesEveryWaiterAndStaysSet) {
  KEvent event(EventType::kNotification);
  std::atomic<int> released{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&] {
      if (KeWaitForSingleObject(&event, 5s) == Status::SUCCESS) released.fetch_add(1);
    });
  }
  EXPECT_FALSE(event.Set());
  for (auto& waiter : waiters) waiter.join();
  EXPECT_EQ(released.load(), 3);
  EXPECT_TRUE(event.IsSet());
  EXPECT_TRUE(event.Reset());
  EXPECT_FALSE(event.IsSet());
}

TEST(Event, SynchronizationEventReleasesOneWaiterAndResets) {
  KEvent event(EventType::kSynchronization, true);
  EXPECT_EQ(KeWaitForSingleObject(&event, 0ns), Status::SUCCESS);
  EXPECT_FALSE(event.IsSet());
  EXPECT_EQ(KeWaitForSingleObject(&event, 0ns), Status::TIMEOUT);
}

TEST(Event, WaitTimesOut) {
  KEvent event(EventType::kNotification);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(KeWaitForSingleObject(&event, 10ms), Status::TIMEOUT);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 10ms);
}

}  // namespace
}  // namespace softib::kernel
