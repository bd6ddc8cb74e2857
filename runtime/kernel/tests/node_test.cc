// Two nodes in one process share nothing: names, threads, devices, tables, lifetimes.
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "softib/kernel/dpc.h"
#include "softib/kernel/event.h"
#include "softib/kernel/handle_table.h"
#include "softib/kernel/node.h"
#include "test_driver.h"

namespace softib::kernel {
namespace {

using namespace std::chrono_literals;

struct Where {
  KEvent ran{EventType::kNotification};
  Node* node = nullptr;
  std::thread::id thread;
  static void Routine(Kdpc*, void* context, void*, void*) {
    auto* where = static_cast<Where*>(context);
    where->node = Node::Current();
    where->thread = std::this_thread::get_id();
    where->ran.Set();
  }
};

TEST(Node, TwoNodesAreIndependent) {
  Node a({.name = "a"});
  auto b = std::make_unique<Node>(NodeOptions{.name = "b"});
  EXPECT_EQ(a.name(), "a");
  EXPECT_EQ(b->name(), "b");
  EXPECT_EQ(Node::Current(), nullptr);  // the test thread belongs to no node

  // The same device name on both.
  testing::TestDriver driver_a(a, "hca");
  auto driver_b = std::make_unique<testing::TestDriver>(*b, "hca");
  DeviceObject* dev_a = driver_a.CreateDevice("hca0");
  DeviceObject* dev_b = driver_b->CreateDevice("hca0");
  ASSERT_NE(dev_a, nullptr);
  ASSERT_NE(dev_b, nullptr);
  DeviceObject* found = IoGetDeviceByName(&a, "hca0");
  EXPECT_EQ(found, dev_a);
  ObDereferenceObject(found);
  EXPECT_EQ(a.device_count(), 1u);
  EXPECT_EQ(b->device_count(), 1u);

  // Each node's DPCs run on its own thread.
  Where on_a, on_b;
  Kdpc dpc_a, dpc_b;
  KeInitializeDpc(&dpc_a, &a, &Where::Routine, &on_a);
  KeInitializeDpc(&dpc_b, b.get(), &Where::Routine, &on_b);
  KeInsertQueueDpc(&dpc_a, nullptr, nullptr);
  KeInsertQueueDpc(&dpc_b, nullptr, nullptr);
  ASSERT_EQ(KeWaitForSingleObject(&on_a.ran, 5s), Status::SUCCESS);
  ASSERT_EQ(KeWaitForSingleObject(&on_b.ran, 5s), Status::SUCCESS);
  EXPECT_EQ(on_a.node, &a);
  EXPECT_EQ(on_b.node, b.get());
  EXPECT_NE(on_a.thread, on_b.thread);

  // Tearing one node down leaves the other working.
  driver_b.reset();
  b.reset();
  Where again;
  KeInitializeDpc(&dpc_a, &a, &Where::Routine, &again);
  KeInsertQueueDpc(&dpc_a, nullptr, nullptr);
  ASSERT_EQ(KeWaitForSingleObject(&again.ran, 5s), Status::SUCCESS);
  EXPECT_EQ(a.device_count(), 1u);
}

TEST(Node, NodeScopeSetsTheCurrentNode) {
  Node node;
  {
    NodeScope scope(&node);
    EXPECT_EQ(Node::Current(), &node);
  }
  EXPECT_EQ(Node::Current(), nullptr);
}

TEST(Node, DestructionRunsWhatIsStillQueued) {
  std::atomic<int> ran{0};
  Kdpc dpc;
  {
    Node node;
    KeInitializeDpc(
        &dpc, &node,
        [](Kdpc*, void* context, void*, void*) {
          static_cast<std::atomic<int>*>(context)->fetch_add(1);
        },
        &ran);
    KeInsertQueueDpc(&dpc, nullptr, nullptr);
  }
  EXPECT_EQ(ran.load(), 1);
}

}  // namespace
}  // namespace softib::kernel
