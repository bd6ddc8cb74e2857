// IrpTask / SendIrp: a coroutine that sends IRPs continues inline when the driver below
// completes at once, and in the completion routine (at DISPATCH, from a DPC) when it pends;
// it can start at DISPATCH; a completion racing IoCallDriver on another thread resumes it
// exactly once.
#include "softib/kernel/irp_task.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "softib/kernel/dpc.h"
#include "softib/kernel/event.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/node.h"
#include "test_driver.h"

namespace softib::kernel {
namespace {

using namespace std::chrono_literals;

constexpr uint32_t kIoctlAddOne = 0x0022A004;  // in: u32, out: u32 + 1

// How the lower device answers.
// kHeld: pends, and the test completes it (CompleteNextHeld) once the task is suspended.
// kRelay: the dispatch relays through a second device with an IrpTask of its own, whose
// continuation completes the IRP (inline, on the sender's thread, after a nested send).
// kRelayDeep: the second device completes the IRP from its own dispatch, inside the relay's
// IoCallDriver (inline for the sender too, while a nested send is in progress).
enum class Lower { kInline, kDpc, kHeld, kOtherThread, kRelay, kRelayDeep };

class IrpTaskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    device_ = driver_.CreateDevice("lower");
    KeInitializeDpc(&dpc_, &node_, &CompleteFromDpc, this);
    driver_.OnIrp(device_, [this](DeviceObject*, Irp* irp) { return Dispatch(irp); });
    second_ = driver_.CreateDevice("second");
    driver_.OnIrp(second_, [this](DeviceObject*, Irp* irp) {
      if (mode_ == Lower::kRelayDeep) IoCompleteRequest(std::exchange(relayed_irp_, nullptr));
      irp->IoStatus.Status = Status::SUCCESS;
      IoCompleteRequest(irp);
      return Status::SUCCESS;
    });
  }
  void TearDown() override {
    for (std::thread& t : threads_) t.join();
    KeFlushQueuedDpcs(&node_);
  }

  Status Dispatch(Irp* irp) {
    ++dispatched_;
    auto* value = static_cast<uint32_t*>(irp->AssociatedIrp.SystemBuffer);
    *value += 1;
    irp->IoStatus.Information = sizeof(uint32_t);
    irp->IoStatus.Status = *value == kFailOn ? Status::INVALID_PARAMETER : Status::SUCCESS;
    switch (mode_) {
      case Lower::kInline: {
        const Status status = irp->IoStatus.Status;
        IoCompleteRequest(irp);
        return status;
      }
      case Lower::kDpc:
        IoMarkIrpPending(irp);
        KeInsertQueueDpc(&dpc_, irp, nullptr);
        return Status::PENDING;
      case Lower::kHeld: {
        IoMarkIrpPending(irp);
        std::lock_guard lock(held_mutex_);
        held_.push_back(irp);
        return Status::PENDING;
      }
      case Lower::kOtherThread:
        IoMarkIrpPending(irp);
        threads_.emplace_back([irp] { IoCompleteRequest(irp); });
        return Status::PENDING;
      case Lower::kRelay:
      case Lower::kRelayDeep: {
        const Status status = irp->IoStatus.Status;
        Relay(irp);
        return status;
      }
    }
    return Status::ERROR;
  }
  // Completes the held IRP from a DPC once the DPC that sent it (or the starter) is done,
  // so the task is suspended on it: its continuation runs in that DPC.
  void CompleteNextHeldFromDpc() {
    KeFlushQueuedDpcs(&node_);
    Irp* irp = TakeHeld();
    ASSERT_NE(irp, nullptr);
    KeInsertQueueDpc(&dpc_, irp, nullptr);
  }
  Irp* TakeHeld() {
    std::lock_guard lock(held_mutex_);
    if (held_.empty()) return nullptr;
    Irp* irp = held_.front();
    held_.erase(held_.begin());
    return irp;
  }

  static void CompleteFromDpc(Kdpc*, void*, void* irp, void*) {
    IoCompleteRequest(static_cast<Irp*>(irp));
  }

  // Sends an IRP of its own to the second device; kRelay completes `irp` afterwards,
  // kRelayDeep has the second device complete it first.
  IrpTask Relay(Irp* irp) {
    relayed_irp_ = irp;
    Irp* own = IoBuildDeviceIoControlRequest(kIoctlAddOne, second_, nullptr, 0, nullptr, 0, true);
    relayed_.push_back(co_await SendIrp(second_, own));
    IoFreeIrp(own);
    if (relayed_irp_ != nullptr) IoCompleteRequest(std::exchange(relayed_irp_, nullptr));
  }

  // Sends `count` AddOne IRPs in a row, each starting from the last answer; records the
  // answers, the IRQL after each co_await, and whether it finished.
  IrpTask AddOneTimes(int count, uint32_t start) {
    uint32_t value = start;
    for (int i = 0; i < count; ++i) {
      Irp* irp = IoBuildDeviceIoControlRequest(kIoctlAddOne, device_, &value, sizeof value, nullptr,
                                               sizeof value, true);
      const Status status = co_await SendIrp(device_, irp);
      std::memcpy(&value, irp->AssociatedIrp.SystemBuffer, sizeof value);
      IoFreeIrp(irp);
      irqls_.push_back(CurrentIrql());
      statuses_.push_back(status);
      answers_.push_back(value);
      if (status != Status::SUCCESS) break;
    }
    finished_ = true;
    done_.Set();
  }

  static constexpr uint32_t kFailOn = 1000;
  Node node_;
  testing::TestDriver driver_{node_, "lower"};
  DeviceObject* device_ = nullptr;
  DeviceObject* second_ = nullptr;
  Irp* relayed_irp_ = nullptr;
  std::vector<Status> relayed_;
  Kdpc dpc_;
  Lower mode_ = Lower::kInline;
  std::atomic<int> dispatched_{0};
  std::vector<std::thread> threads_;
  std::mutex held_mutex_;
  std::vector<Irp*> held_;
  std::vector<Irql> irqls_;
  std::vector<Status> statuses_;
  std::vector<uint32_t> answers_;
  std::atomic<bool> finished_{false};
  KEvent done_{EventType::kNotification};
};

TEST_F(IrpTaskTest, InlineCompletionsContinueBeforeTheStarterReturns) {
  mode_ = Lower::kInline;
  AddOneTimes(3, 10);
  EXPECT_TRUE(finished_);  // nothing pended: the whole task ran inside the call
  EXPECT_EQ(answers_, (std::vector<uint32_t>{11, 12, 13}));
  EXPECT_EQ(statuses_, std::vector<Status>(3, Status::SUCCESS));
  EXPECT_EQ(irqls_, std::vector<Irql>(3, Irql::kPassive));
}

// A send nested in the lower driver's dispatch: each completion, inline on the sender's
// thread with or without the nested send still in progress, continues its own task once.
TEST_F(IrpTaskTest, NestedSendsInTheLowerDispatchEachContinueTheirTaskOnce) {
  for (const Lower mode : {Lower::kRelay, Lower::kRelayDeep}) {
    mode_ = mode;
    answers_.clear();
    statuses_.clear();
    relayed_.clear();
    finished_ = false;
    AddOneTimes(3, 10);
    EXPECT_TRUE(finished_);
    EXPECT_EQ(answers_, (std::vector<uint32_t>{11, 12, 13}));
    EXPECT_EQ(statuses_, std::vector<Status>(3, Status::SUCCESS));
    EXPECT_EQ(relayed_, std::vector<Status>(3, Status::SUCCESS));
    EXPECT_EQ(relayed_irp_, nullptr);
  }
}

TEST_F(IrpTaskTest, PendedIrpsResumeTheTaskInTheirCompletionAtDispatch) {
  mode_ = Lower::kHeld;
  AddOneTimes(3, 20);
  EXPECT_FALSE(finished_);  // suspended on the first IRP
  for (int i = 0; i < 3; ++i) CompleteNextHeldFromDpc();
  ASSERT_EQ(KeWaitForSingleObject(&done_, 10s), Status::SUCCESS);
  EXPECT_EQ(answers_, (std::vector<uint32_t>{21, 22, 23}));
  EXPECT_EQ(statuses_, std::vector<Status>(3, Status::SUCCESS));
  // After the first co_await the task runs in the DPC that completed the IRP.
  EXPECT_EQ(irqls_, std::vector<Irql>(3, Irql::kDispatch));
}

TEST_F(IrpTaskTest, AFailedIrpResumesWithItsStatus) {
  mode_ = Lower::kDpc;
  AddOneTimes(5, kFailOn - 2);
  ASSERT_EQ(KeWaitForSingleObject(&done_, 10s), Status::SUCCESS);
  EXPECT_EQ(answers_, (std::vector<uint32_t>{kFailOn - 1, kFailOn}));
  EXPECT_EQ(statuses_, (std::vector<Status>{Status::SUCCESS, Status::INVALID_PARAMETER}));
}

TEST_F(IrpTaskTest, StartsAtDispatchWithoutWaiting) {
  mode_ = Lower::kHeld;
  const Irql previous = RaiseIrql(Irql::kDispatch);
  AddOneTimes(2, 0);  // the verifier fails any wait at DISPATCH
  EXPECT_FALSE(finished_);
  LowerIrql(previous);
  for (Irp* irp = TakeHeld(); irp != nullptr; irp = TakeHeld()) IoCompleteRequest(irp);
  ASSERT_EQ(KeWaitForSingleObject(&done_, 10s), Status::SUCCESS);
  EXPECT_EQ(answers_, (std::vector<uint32_t>{1, 2}));
}

TEST_F(IrpTaskTest, CompletionRacingIoCallDriverResumesExactlyOnce) {
  mode_ = Lower::kOtherThread;
  constexpr int kIrps = 200;
  AddOneTimes(kIrps, 0);
  ASSERT_EQ(KeWaitForSingleObject(&done_, 10s), Status::SUCCESS);
  ASSERT_EQ(answers_.size(), static_cast<size_t>(kIrps));
  for (int i = 0; i < kIrps; ++i) EXPECT_EQ(answers_[i], static_cast<uint32_t>(i + 1));
  EXPECT_EQ(dispatched_.load(), kIrps);
}

}  // namespace
}  // namespace softib::kernel
