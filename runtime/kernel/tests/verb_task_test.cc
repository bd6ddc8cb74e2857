// VerbTask: a verb handler written as a coroutine returns its final status synchronously
// when every IRP it sent completed inline, returns PENDING (the verb IRP marked pending)
// and completes the verb IRP itself when one pended, and, called without a verb IRP (a
// direct call), waits for a pended task at PASSIVE and dies at DISPATCH.
#include "softib/kernel/verb_task.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "softib/kernel/dpc.h"
#include "softib/kernel/irp_task.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/node.h"
#include "test_driver.h"

namespace softib::kernel {
namespace {

using namespace std::chrono_literals;

constexpr uint32_t kVtIoctlAddOne = 0x0022A004;  // in: u32, out: u32 + 1
constexpr uint32_t kVtIoctlVerb = 0x0022A008;    // in: u32, out: u32 + 2 (two AddOnes below)
constexpr uint32_t kVtFailOn = 1000;             // the lower device fails this answer

// kHeld: pends, and the test completes each held IRP from a DPC once the starter returned.
enum class LowerMode { kInline, kDpc, kHeld, kOtherThread };

class VerbTaskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    lower_ = driver_.CreateDevice("vt-lower");
    upper_ = driver_.CreateDevice("vt-upper");
    KeInitializeDpc(&dpc_, &node_, &CompleteFromDpc, this);
    driver_.OnIrp(lower_, [this](DeviceObject*, Irp* irp) { return LowerDispatch(irp); });
    driver_.OnIrp(upper_, [this](DeviceObject*, Irp* irp) { return UpperDispatch(irp); });
  }
  void TearDown() override {
    for (std::thread& t : threads_) t.join();
    KeFlushQueuedDpcs(&node_);
  }

  Status LowerDispatch(Irp* irp) {
    auto* value = static_cast<uint32_t*>(irp->AssociatedIrp.SystemBuffer);
    *value += 1;
    irp->IoStatus.Information = sizeof(uint32_t);
    irp->IoStatus.Status = *value == kVtFailOn ? Status::INVALID_PARAMETER : Status::SUCCESS;
    switch (mode_) {
      case LowerMode::kInline: {
        const Status status = irp->IoStatus.Status;
        IoCompleteRequest(irp);
        return status;
      }
      case LowerMode::kDpc:
        IoMarkIrpPending(irp);
        KeInsertQueueDpc(&dpc_, irp, nullptr);
        return Status::PENDING;
      case LowerMode::kHeld: {
        IoMarkIrpPending(irp);
        std::lock_guard lock(threads_mutex_);
        held_.push_back(irp);
        return Status::PENDING;
      }
      case LowerMode::kOtherThread: {
        IoMarkIrpPending(irp);
        std::lock_guard lock(threads_mutex_);
        threads_.emplace_back([irp] { IoCompleteRequest(irp); });
        return Status::PENDING;
      }
    }
    return Status::ERROR;
  }
  static void CompleteFromDpc(Kdpc*, void*, void* irp, void*) {
    IoCompleteRequest(static_cast<Irp*>(irp));
  }

  // The "verb": its input is a u32, its output that value + 2, learned from the lower
  // device in two IRPs.
  VerbTask AddTwo(uint32_t value, uint32_t* out) {
    for (int i = 0; i < 2; ++i) {
      Irp* irp = IoBuildDeviceIoControlRequest(kVtIoctlAddOne, lower_, &value, sizeof value,
                                               nullptr, sizeof value, true);
      const Status status = co_await SendIrp(lower_, irp);
      std::memcpy(&value, irp->AssociatedIrp.SystemBuffer, sizeof value);
      IoFreeIrp(irp);
      if (status != Status::SUCCESS) co_return VerbOutcome{status, 0};
    }
    *out = value;
    last_irql_ = CurrentIrql();
    co_return VerbOutcome{Status::SUCCESS, sizeof(uint32_t)};
  }

  // As a generated dispatch: the handler's status completes the IRP unless PENDING.
  Status UpperDispatch(Irp* irp) {
    auto* buffer = static_cast<uint32_t*>(irp->AssociatedIrp.SystemBuffer);
    const uint32_t in = *buffer;
    const Status status = AddTwo(in, buffer).Start(irp);
    if (status == Status::PENDING) return status;
    return CompleteVerbIrp(irp, status, status == Status::SUCCESS ? sizeof(uint32_t) : 0);
  }

  struct Sent {
    Status returned;
    Status final;
    uint64_t information;
    uint32_t answer;
    bool pending_returned;
  };
  Irp* TakeHeld() {
    std::lock_guard lock(threads_mutex_);
    if (held_.empty()) return nullptr;
    Irp* irp = held_.front();
    held_.erase(held_.begin());
    return irp;
  }
  static CompletionAction OnVerbDone(DeviceObject*, Irp*, void* context) {
    static_cast<KEvent*>(context)->Set();
    return CompletionAction::kMoreProcessingRequired;
  }
  Sent SendVerb(uint32_t value) {
    Irp* irp = IoBuildDeviceIoControlRequest(kVtIoctlVerb, upper_, &value, sizeof value, nullptr,
                                             sizeof value, true);
    KEvent done(EventType::kNotification);
    IoSetCompletionRoutine(irp, &OnVerbDone, &done, true, true, true);
    Sent sent{};
    sent.returned = IoCallDriver(upper_, irp);
    // Each held IRP completes in a DPC, where the task sends (and holds) the next one.
    for (Irp* held = TakeHeld(); held != nullptr; held = TakeHeld()) {
      KeInsertQueueDpc(&dpc_, held, nullptr);
      KeFlushQueuedDpcs(&node_);
    }
    EXPECT_EQ(KeWaitForSingleObject(&done, 10s), Status::SUCCESS);
    sent.final = irp->IoStatus.Status;
    sent.information = irp->IoStatus.Information;
    sent.pending_returned = irp->PendingReturned;
    std::memcpy(&sent.answer, irp->AssociatedIrp.SystemBuffer, sizeof sent.answer);
    IoFreeIrp(irp);
    return sent;
  }

  Node node_;
  testing::TestDriver driver_{node_, "verb-task"};
  DeviceObject* lower_ = nullptr;
  DeviceObject* upper_ = nullptr;
  Kdpc dpc_;
  LowerMode mode_ = LowerMode::kInline;
  std::mutex threads_mutex_;
  std::vector<std::thread> threads_;
  std::vector<Irp*> held_;
  Irql last_irql_ = Irql::kApc;
};

TEST_F(VerbTaskTest, InlineCompletionsReturnTheFinalStatusSynchronously) {
  mode_ = LowerMode::kInline;
  const Sent sent = SendVerb(40);
  EXPECT_EQ(sent.returned, Status::SUCCESS);
  EXPECT_EQ(sent.final, Status::SUCCESS);
  EXPECT_EQ(sent.information, sizeof(uint32_t));
  EXPECT_EQ(sent.answer, 42u);
  EXPECT_FALSE(sent.pending_returned);
  EXPECT_EQ(last_irql_, Irql::kPassive);
}

TEST_F(VerbTaskTest, InlineFailureReturnsItsStatus) {
  mode_ = LowerMode::kInline;
  const Sent sent = SendVerb(kVtFailOn - 1);
  EXPECT_EQ(sent.returned, Status::INVALID_PARAMETER);
  EXPECT_EQ(sent.final, Status::INVALID_PARAMETER);
  EXPECT_EQ(sent.information, 0u);
}

TEST_F(VerbTaskTest, APendedIrpPendsTheVerbWhichTheTaskCompletesAtDispatch) {
  mode_ = LowerMode::kHeld;
  const Sent sent = SendVerb(7);
  EXPECT_EQ(sent.returned, Status::PENDING);
  EXPECT_TRUE(sent.pending_returned);
  EXPECT_EQ(sent.final, Status::SUCCESS);
  EXPECT_EQ(sent.information, sizeof(uint32_t));
  EXPECT_EQ(sent.answer, 9u);
  EXPECT_EQ(last_irql_, Irql::kDispatch);
}

TEST_F(VerbTaskTest, APendedFailureCompletesTheVerbWithItsStatus) {
  mode_ = LowerMode::kHeld;
  const Sent sent = SendVerb(kVtFailOn - 2);  // the second AddOne fails
  EXPECT_EQ(sent.returned, Status::PENDING);
  EXPECT_EQ(sent.final, Status::INVALID_PARAMETER);
  EXPECT_EQ(sent.information, 0u);
}

TEST_F(VerbTaskTest, CompletionsRacingTheStarterCompleteEachVerbOnce) {
  mode_ = LowerMode::kOtherThread;
  for (uint32_t i = 0; i < 200; ++i) {
    const Sent sent = SendVerb(i * 3);
    ASSERT_EQ(sent.final, Status::SUCCESS);
    ASSERT_EQ(sent.answer, i * 3 + 2);
    // Either the starter saw it finish (synchronous) or it pended: never anything else.
    ASSERT_TRUE(sent.returned == Status::SUCCESS || sent.returned == Status::PENDING);
    ASSERT_EQ(sent.pending_returned, sent.returned == Status::PENDING);
  }
}

TEST_F(VerbTaskTest, WithoutAnIrpAPendedTaskIsWaitedForAtPassive) {
  mode_ = LowerMode::kDpc;
  uint32_t out = 0;
  EXPECT_EQ(AddTwo(100, &out).Start(nullptr), Status::SUCCESS);
  EXPECT_EQ(out, 102u);
  EXPECT_EQ(AddTwo(kVtFailOn - 1, &out).Start(nullptr), Status::INVALID_PARAMETER);
}

TEST_F(VerbTaskTest, WithoutAnIrpAnInlineTaskNeedsNoWaitAtDispatch) {
  mode_ = LowerMode::kInline;
  uint32_t out = 0;
  const Irql previous = RaiseIrql(Irql::kDispatch);
  const Status status = AddTwo(5, &out).Start(nullptr);
  LowerIrql(previous);
  EXPECT_EQ(status, Status::SUCCESS);
  EXPECT_EQ(out, 7u);
}

using VerbTaskDeathTest = VerbTaskTest;

TEST_F(VerbTaskDeathTest, WithoutAnIrpAPendedTaskAtDispatchDies) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  mode_ = LowerMode::kHeld;  // never completes: Start must wait
  EXPECT_DEATH(
      {
        uint32_t out = 0;
        RaiseIrql(Irql::kDispatch);
        (void)AddTwo(1, &out).Start(nullptr);
      },
      "KeWaitForSingleObject called at DISPATCH_LEVEL");
}

}  // namespace
}  // namespace softib::kernel
