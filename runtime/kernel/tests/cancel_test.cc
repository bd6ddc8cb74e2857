// Cancellation: before the driver sees the IRP, while queued, after completion, and racing
// with completion; the cancel routine's lock discipline.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "softib/kernel/io.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/node.h"
#include "test_driver.h"

namespace softib::kernel {
namespace {

using testing::CompleteIrp;

struct Outcome {
  std::atomic<int> completions{0};
  Status status = Status::ERROR;  // written before completions is incremented
  bool cancel_flag = false;
};

CompletionAction RecordOutcome(DeviceObject*, Irp* irp, void* context) {
  auto* outcome = static_cast<Outcome*>(context);
  outcome->status = irp->IoStatus.Status;
  outcome->cancel_flag = IoIsCancelled(irp);
  outcome->completions.fetch_add(1, std::memory_order_release);
  return CompletionAction::kMoreProcessingRequired;  // the test frees its IRPs
}

class CancelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    device_ = driver_.CreateDevice();
    driver_.OnIrp(device_, [this](DeviceObject*, Irp* irp) { return queue_.Insert(irp); });
  }

  Irp* NewIrp(Outcome* outcome) {
    Irp* irp = IoAllocateIrp(device_->StackSize);
    IoGetNextIrpStackLocation(irp)->MajorFunction = IrpMajor::kDeviceControl;
    IoSetCompletionRoutine(irp, &RecordOutcome, outcome, true, true, true);
    return irp;
  }

  // The driver's completion path: takes the oldest IRP no canceller owns.
  bool CompleteOne() {
    Irp* irp = queue_.Remove();
    if (irp == nullptr) return false;
    CompleteIrp(irp, Status::SUCCESS);
    return true;
  }

  Node node_;
  testing::TestDriver driver_{node_, "csq"};
  DeviceObject* device_ = nullptr;
  CancelSafeQueue queue_;
};

TEST_F(CancelTest, CancellingAQueuedIrpCompletesItCanceled) {
  Outcome outcome;
  Irp* irp = NewIrp(&outcome);
  EXPECT_EQ(IoCallDriver(device_, irp), Status::PENDING);
  EXPECT_EQ(IoGetIrpNode(irp), &node_);
  EXPECT_EQ(outcome.completions.load(), 0);
  EXPECT_TRUE(IoCancelIrp(irp));
  EXPECT_EQ(outcome.completions.load(), 1);
  EXPECT_EQ(outcome.status, Status::CANCELED);
  EXPECT_TRUE(outcome.cancel_flag);
  EXPECT_TRUE(queue_.empty());
  EXPECT_FALSE(CompleteOne());
  IoFreeIrp(irp);
}

TEST_F(CancelTest, CancelAfterCompletionDoesNothing) {
  Outcome outcome;
  Irp* irp = NewIrp(&outcome);
  IoCallDriver(device_, irp);
  EXPECT_TRUE(CompleteOne());
  EXPECT_EQ(outcome.status, Status::SUCCESS);
  EXPECT_FALSE(IoCancelIrp(irp));
  EXPECT_EQ(outcome.completions.load(), 1);
  IoFreeIrp(irp);
}

TEST_F(CancelTest, CancelBeforeTheDriverSeesIt) {
  Outcome outcome;
  Irp* irp = NewIrp(&outcome);
  EXPECT_FALSE(IoCancelIrp(irp));  // no cancel routine yet
  EXPECT_EQ(IoCallDriver(device_, irp), Status::CANCELED);
  EXPECT_EQ(outcome.completions.load(), 1);
  EXPECT_EQ(outcome.status, Status::CANCELED);
  EXPECT_TRUE(queue_.empty());
  IoFreeIrp(irp);
}

// A direct call hands its IRP to the driver without IoCallDriver (BeginDirectCall): a queue
// that knows its node still makes it cancellable.
TEST_F(CancelTest, ADirectCallsIrpIsCancellableOnceQueued) {
  CancelSafeQueue queue(&node_);
  Outcome outcome;
  Irp* irp = IoAllocateIrp(1);
  IoSetCompletionRoutine(irp, &RecordOutcome, &outcome, true, true, true);
  --irp->CurrentLocation;  // what BeginDirectCall does
  EXPECT_EQ(IoGetIrpNode(irp), nullptr);
  EXPECT_EQ(queue.Insert(irp), Status::PENDING);
  EXPECT_EQ(IoGetIrpNode(irp), &node_);
  EXPECT_TRUE(IoCancelIrp(irp));
  EXPECT_EQ(outcome.status, Status::CANCELED);
  EXPECT_TRUE(queue.empty());
  IoFreeIrp(irp);
}

TEST_F(CancelTest, CancelRoutineRunsAtDispatchWithTheCancelLockHeld) {
  struct Seen {
    Irql irql = Irql::kPassive;
    bool lock_held = false;
  } seen;
  driver_.OnIrp(device_, [&seen](DeviceObject*, Irp* irp) {
    irp->DriverContext[0] = &seen;
    IoMarkIrpPending(irp);
    IoSetCancelRoutine(irp, [](DeviceObject*, Irp* irp) {
      auto* seen = static_cast<Seen*>(irp->DriverContext[0]);
      seen->irql = CurrentIrql();
      Node* node = IoGetIrpNode(irp);
      seen->lock_held = node != nullptr;
      IoReleaseCancelSpinLock(node, irp->CancelIrql);
      CompleteIrp(irp, Status::CANCELED);
    });
    return Status::PENDING;
  });
  Outcome outcome;
  Irp* irp = NewIrp(&outcome);
  IoCallDriver(device_, irp);
  EXPECT_TRUE(IoCancelIrp(irp));
  EXPECT_EQ(seen.irql, Irql::kDispatch);
  EXPECT_EQ(CurrentIrql(), Irql::kPassive);
  EXPECT_EQ(outcome.status, Status::CANCELED);
  IoFreeIrp(irp);
}

// Completion (at DISPATCH, as a DPC would) races cancellation over many IRPs: each IRP
// completes exactly once, and a successful IoCancelIrp means CANCELED.
TEST_F(CancelTest, CompletionRacingCancellationCompletesEachIrpOnce) {
  constexpr int kIrps = 300;
  std::vector<std::unique_ptr<Outcome>> outcomes;
  std::vector<Irp*> irps;
  for (int i = 0; i < kIrps; ++i) {
    outcomes.push_back(std::make_unique<Outcome>());
    irps.push_back(NewIrp(outcomes.back().get()));
    ASSERT_EQ(IoCallDriver(device_, irps.back()), Status::PENDING);
  }
  std::vector<bool> cancel_won(kIrps);
  std::thread canceller([&] {
    for (int i = kIrps - 1; i >= 0; --i) cancel_won[i] = IoCancelIrp(irps[i]);
  });
  std::thread completer([&] {
    ScopedIrql dispatch(Irql::kDispatch);
    for (int i = 0; i < kIrps; ++i) CompleteOne();
  });
  canceller.join();
  completer.join();
  while (CompleteOne()) {
  }
  int cancelled = 0;
  for (int i = 0; i < kIrps; ++i) {
    ASSERT_EQ(outcomes[i]->completions.load(std::memory_order_acquire), 1) << i;
    const Status status = outcomes[i]->status;
    EXPECT_TRUE(status == Status::SUCCESS || status == Status::CANCELED) << i;
    if (cancel_won[i]) {
      EXPECT_EQ(status, Status::CANCELED) << i;
    }
    cancelled += status == Status::CANCELED;
    IoFreeIrp(irps[i]);
  }
  EXPECT_TRUE(queue_.empty());
  ::testing::Test::RecordProperty("cancelled", cancelled);
}

class CancelDeathTest : public CancelTest {
 protected:
  void SetUp() override {
    testing::UseThreadsafeDeathTests();
    CancelTest::SetUp();
  }
};

TEST_F(CancelDeathTest, ACancelRoutineMustReleaseTheCancelLock) {
  driver_.OnIrp(device_, [](DeviceObject*, Irp* irp) {
    IoMarkIrpPending(irp);
    IoSetCancelRoutine(irp, [](DeviceObject*, Irp*) {});
    return Status::PENDING;
  });
  Outcome outcome;
  Irp* irp = NewIrp(&outcome);
  IoCallDriver(device_, irp);
  EXPECT_DEATH(IoCancelIrp(irp), "returned without releasing the cancel spin lock");
  IoSetCancelRoutine(irp, nullptr);
  CompleteIrp(irp, Status::SUCCESS);
  IoFreeIrp(irp);
}

TEST_F(CancelDeathTest, CompletingWithACancelRoutineSetDies) {
  driver_.OnIrp(device_, [](DeviceObject*, Irp* irp) {
    IoSetCancelRoutine(irp, [](DeviceObject*, Irp*) {});
    return CompleteIrp(irp, Status::SUCCESS);
  });
  Outcome outcome;
  Irp* irp = NewIrp(&outcome);
  EXPECT_DEATH(IoCallDriver(device_, irp), "completed with its cancel routine still set");
  IoSetCancelRoutine(irp, nullptr);
  IoFreeIrp(irp);
}

}  // namespace
}  // namespace softib::kernel
