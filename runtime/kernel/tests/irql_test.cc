// IRQL rules and the verifier: every blocking primitive refuses DISPATCH, with a report.
#include <gtest/gtest.h>

#include "softib/kernel/dpc.h"
#include "softib/kernel/event.h"
#include "softib/kernel/io.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/mutex.h"
#include "softib/kernel/pool.h"
#include "softib/kernel/spin_lock.h"
#include "softib/kernel/verifier.h"
#include "softib/kernel/work_item.h"
#include "test_driver.h"

namespace softib::kernel {
namespace {

TEST(Irql, ThreadsStartAtPassive) {
  EXPECT_EQ(CurrentIrql(), Irql::kPassive);
  Irql seen = Irql::kDispatch;
  std::thread([&] { seen = CurrentIrql(); }).join();
  EXPECT_EQ(seen, Irql::kPassive);
}

TEST(Irql, RaiseAndLowerArePerThread) {
  const Irql previous = RaiseIrql(Irql::kDispatch);
  EXPECT_EQ(previous, Irql::kPassive);
  EXPECT_EQ(CurrentIrql(), Irql::kDispatch);
  Irql other = Irql::kDispatch;
  std::thread([&] { other = CurrentIrql(); }).join();
  EXPECT_EQ(other, Irql::kPassive);
  LowerIrql(previous);
  EXPECT_EQ(CurrentIrql(), Irql::kPassive);
}

TEST(Irql, SpinLockRaisesToDispatchAndRestores) {
  KSpinLock lock;
  {
    ScopedIrql apc(Irql::kApc);
    const Irql previous = lock.Acquire();
    EXPECT_EQ(previous, Irql::kApc);
    EXPECT_EQ(CurrentIrql(), Irql::kDispatch);
    EXPECT_TRUE(lock.HeldByCurrentThread());
    lock.Release(previous);
    EXPECT_EQ(CurrentIrql(), Irql::kApc);
  }
  EXPECT_EQ(CurrentIrql(), Irql::kPassive);
}

TEST(Irql, SpinLockExcludesOtherThreads) {
  KSpinLock lock;
  int counter = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        SpinLockGuard guard(lock);
        ++counter;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(counter, 4000);
}

TEST(Irql, FastMutexRaisesToApc) {
  FastMutex mutex;
  mutex.Acquire();
  EXPECT_EQ(CurrentIrql(), Irql::kApc);
  mutex.Release();
  EXPECT_EQ(CurrentIrql(), Irql::kPassive);
}

TEST(Irql, ZeroTimeoutWaitIsAllowedAtDispatch) {
  KEvent event(EventType::kNotification);
  ScopedIrql dispatch(Irql::kDispatch);
  EXPECT_EQ(KeWaitForSingleObject(&event, std::chrono::nanoseconds(0)), Status::TIMEOUT);
  event.Set();
  EXPECT_EQ(KeWaitForSingleObject(&event, std::chrono::nanoseconds(0)), Status::SUCCESS);
}

TEST(Irql, NonPagedAllocationIsAllowedAtDispatch) {
  ScopedIrql dispatch(Irql::kDispatch);
  void* block = ExAllocateNonPaged(64);
  ASSERT_NE(block, nullptr);
  ExFreePool(block);
}

class VerifierDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::UseThreadsafeDeathTests(); }
};

// Every report names the rule and carries a stack.
TEST_F(VerifierDeathTest, WaitUnderSpinLockDies) {
  EXPECT_DEATH(
      {
        KSpinLock lock;
        KEvent event(EventType::kNotification);
        lock.Acquire();
        KeWaitForSingleObject(&event, std::chrono::milliseconds(1));
      },
      "softib verifier: IRQL violation: KeWaitForSingleObject called at DISPATCH_LEVEL "
      "\\(highest allowed: APC_LEVEL\\)\nstack:");
}

TEST_F(VerifierDeathTest, SleepAtDispatchDies) {
  EXPECT_DEATH(
      {
        RaiseIrql(Irql::kDispatch);
        KeDelayExecutionThread(std::chrono::milliseconds(1));
      },
      "IRQL violation: KeDelayExecutionThread called at DISPATCH_LEVEL");
}

TEST_F(VerifierDeathTest, PagedAllocationAtDispatchDies) {
  EXPECT_DEATH(
      {
        RaiseIrql(Irql::kDispatch);
        ExAllocatePaged(16);
      },
      "IRQL violation: ExAllocatePaged called at DISPATCH_LEVEL");
}

TEST_F(VerifierDeathTest, FastMutexAtDispatchDies) {
  EXPECT_DEATH(
      {
        FastMutex mutex;
        RaiseIrql(Irql::kDispatch);
        mutex.Acquire();
      },
      "IRQL violation: ExAcquireFastMutex called at DISPATCH_LEVEL");
}

TEST_F(VerifierDeathTest, SynchronousIoAtDispatchDies) {
  EXPECT_DEATH(
      {
        Node node;
        testing::TestDriver driver(node, "sync");
        DeviceObject* device = driver.CreateDevice();
        Irp* irp = IoBuildDeviceIoControlRequest(1, device, nullptr, 0, nullptr, 0, false);
        RaiseIrql(Irql::kDispatch);
        IoCallDriverAndWait(device, irp);
      },
      "IRQL violation: IoCallDriverAndWait called at DISPATCH_LEVEL");
}

TEST_F(VerifierDeathTest, RaisingToALowerIrqlDies) {
  EXPECT_DEATH(
      {
        RaiseIrql(Irql::kDispatch);
        RaiseIrql(Irql::kPassive);
      },
      "IRQL violation: RaiseIrql to PASSIVE_LEVEL from the higher DISPATCH_LEVEL");
}

TEST_F(VerifierDeathTest, RecursiveSpinLockDies) {
  EXPECT_DEATH(
      {
        KSpinLock lock;
        lock.Acquire();
        lock.Acquire();
      },
      "spin lock .* acquired recursively");
}

TEST_F(VerifierDeathTest, VerbAboveItsIrqlDies) {
  EXPECT_DEATH(
      {
        RaiseIrql(Irql::kDispatch);
        VerifyIrqlAtMost(Irql::kPassive, "IbOpenCa");
      },
      "IRQL violation: IbOpenCa called at DISPATCH_LEVEL \\(highest allowed: PASSIVE_LEVEL\\)");
}

TEST_F(VerifierDeathTest, BlockingInADpcDies) {
  EXPECT_DEATH(
      {
        Node node;
        Kdpc dpc;
        KeInitializeDpc(
            &dpc, &node,
            [](Kdpc*, void*, void*, void*) {
              KeDelayExecutionThread(std::chrono::milliseconds(1));
            },
            nullptr);
        KeInsertQueueDpc(&dpc, nullptr, nullptr);
        KeFlushQueuedDpcs(&node);  // the DPC runs (and dies) before the flush returns
      },
      "IRQL violation: KeDelayExecutionThread called at DISPATCH_LEVEL");
}

TEST_F(VerifierDeathTest, AWorkItemReturningAtDispatchDies) {
  EXPECT_DEATH(
      {
        Node node;
        testing::TestDriver driver(node, "leaky");
        IoWorkItem* item = IoAllocateWorkItem(driver.CreateDevice());
        IoQueueWorkItem(
            item, [](DeviceObject*, void*) { RaiseIrql(Irql::kDispatch); }, nullptr);
        IoFlushQueuedWorkItems(&node);  // the item returns (and the worker dies) first
      },
      "work item returned at DISPATCH_LEVEL");
}

TEST_F(VerifierDeathTest, StackTraceNamesTheCaller) {
  // backtrace_symbols_fd prints the binary's frames (symbols when exported).
  EXPECT_DEATH(VerifierFail("custom rule %d", 7),
               "softib verifier: custom rule 7\nstack:\n.*\\[0x");
}

}  // namespace
}  // namespace softib::kernel
