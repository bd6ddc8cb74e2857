// IRPs down a two-device stack (FDO over PDO): dispatch, completion routines in order,
// claiming back, pending and completion from a DPC, METHOD_BUFFERED copy-out.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "softib/kernel/dpc.h"
#include "softib/kernel/event.h"
#include "softib/kernel/io.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/node.h"
#include "test_driver.h"

namespace softib::kernel {
namespace {

using namespace std::chrono_literals;
using testing::CompleteIrp;

class IrpStackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pdo_ = pdo_driver_.CreateDevice("stack");
    fdo_ = fdo_driver_.CreateDevice();
    lower_ = fdo_driver_.Attach(fdo_, pdo_);
    KeInitializeDpc(&complete_dpc_, &node_, &CompleteFromDpc, this);
    // The FDO forwards with a completion routine.
    fdo_driver_.OnIrp(fdo_, [this](DeviceObject*, Irp* irp) {
      Log("fdo dispatch");
      IoCopyCurrentIrpStackLocationToNext(irp);
      IoSetCompletionRoutine(irp, &FdoCompletion, this, true, true, true);
      return IoCallDriver(lower_, irp);
    });
  }

  void Log(std::string entry) {
    std::lock_guard lock(mutex_);
    log_.push_back(std::move(entry));
  }
  std::vector<std::string> log() {
    std::lock_guard lock(mutex_);
    return log_;
  }

  static CompletionAction FdoCompletion(DeviceObject* device, Irp* irp, void* context) {
    auto* self = static_cast<IrpStackTest*>(context);
    self->Log(device == self->fdo_ ? "fdo completion" : "fdo completion: wrong device");
    if (irp->PendingReturned) IoMarkIrpPending(irp);  // the WDM rule for routines
    if (self->fdo_claims_back_) {
      self->claimed_ = irp;
      self->claimed_event_.Set();
      return CompletionAction::kMoreProcessingRequired;
    }
    return CompletionAction::kContinueCompletion;
  }

  static CompletionAction OriginatorCompletion(DeviceObject* device, Irp* irp, void* context) {
    auto* self = static_cast<IrpStackTest*>(context);
    self->Log(device == nullptr ? "originator" : "originator: wrong device");
    self->originator_pending_ = irp->PendingReturned;
    self->originator_status_ = irp->IoStatus.Status;
    self->originator_irql_ = CurrentIrql();
    self->originator_done_.Set();
    return self->originator_action_;
  }

  // The PDO pends the IRP; a DPC completes it.
  Status PendAndCompleteFromDpc(Irp* irp) {
    Log("pdo dispatch (pending)");
    IoMarkIrpPending(irp);
    KeInsertQueueDpc(&complete_dpc_, irp, nullptr);
    return Status::PENDING;
  }
  static void CompleteFromDpc(Kdpc*, void* context, void* irp, void*) {
    static_cast<IrpStackTest*>(context)->Log("pdo completes from dpc");
    CompleteIrp(static_cast<Irp*>(irp), Status::SUCCESS, 0);
  }

  Irp* BuildIoctl(void* output = nullptr, uint32_t output_length = 0) {
    Irp* irp =
        IoBuildDeviceIoControlRequest(0x220004, fdo_, "abcd", 4, output, output_length, false);
    IoSetCompletionRoutine(irp, &OriginatorCompletion, this, true, true, true);
    return irp;
  }

  Node node_;
  testing::TestDriver pdo_driver_{node_, "pdo"};
  testing::TestDriver fdo_driver_{node_, "fdo"};
  DeviceObject* pdo_ = nullptr;
  DeviceObject* fdo_ = nullptr;
  DeviceObject* lower_ = nullptr;
  Kdpc complete_dpc_;
  std::mutex mutex_;
  std::vector<std::string> log_;
  bool fdo_claims_back_ = false;
  Irp* claimed_ = nullptr;
  KEvent claimed_event_{EventType::kNotification};
  CompletionAction originator_action_ = CompletionAction::kContinueCompletion;
  KEvent originator_done_{EventType::kNotification};
  bool originator_pending_ = false;
  Status originator_status_ = Status::ERROR;
  Irql originator_irql_ = Irql::kPassive;
};

TEST_F(IrpStackTest, AttachingGrowsTheStack) {
  EXPECT_EQ(lower_, pdo_);
  EXPECT_EQ(pdo_->AttachedDevice, fdo_);
  EXPECT_EQ(pdo_->StackSize, 1);
  EXPECT_EQ(fdo_->StackSize, 2);
  DeviceObject* top = IoGetAttachedDeviceReference(pdo_);
  EXPECT_EQ(top, fdo_);
  ObDereferenceObject(top);
}

TEST_F(IrpStackTest, CompletionRoutinesRunUpTheStackInOrder) {
  pdo_driver_.OnIrp(pdo_, [this](DeviceObject*, Irp* irp) {
    Log("pdo dispatch");
    return CompleteIrp(irp, Status::SUCCESS);
  });
  EXPECT_EQ(IoCallDriver(fdo_, BuildIoctl()), Status::SUCCESS);
  ASSERT_EQ(KeWaitForSingleObject(&originator_done_, 0ns), Status::SUCCESS);
  EXPECT_EQ(log(), (std::vector<std::string>{"fdo dispatch", "pdo dispatch", "fdo completion",
                                             "originator"}));
  EXPECT_FALSE(originator_pending_);
  EXPECT_EQ(originator_status_, Status::SUCCESS);
}

TEST_F(IrpStackTest, MethodBufferedInputAndCopyOut) {
  pdo_driver_.OnIrp(pdo_, [](DeviceObject*, Irp* irp) {
    const IoStackLocation* location = IoGetCurrentIrpStackLocation(irp);
    auto* buffer = static_cast<uint8_t*>(irp->AssociatedIrp.SystemBuffer);
    const bool input_ok = location->Parameters.DeviceIoControl.IoControlCode == 0x220004 &&
                          location->Parameters.DeviceIoControl.InputBufferLength == 4 &&
                          location->Parameters.DeviceIoControl.OutputBufferLength == 16 &&
                          std::memcmp(buffer, "abcd", 4) == 0 && buffer[15] == 0 &&
                          irp->RequestorMode == ProcessorMode::kKernelMode;
    if (!input_ok) return CompleteIrp(irp, Status::INVALID_PARAMETER);
    std::memcpy(buffer, "12345678", 8);
    return CompleteIrp(irp, Status::SUCCESS, 8);
  });
  uint8_t output[16];
  std::memset(output, 0xee, sizeof output);
  Irp* irp = IoBuildDeviceIoControlRequest(0x220004, fdo_, "abcd", 4, output, 16, false);
  EXPECT_EQ(IoCallDriverAndWait(fdo_, irp), Status::SUCCESS);
  EXPECT_EQ(std::memcmp(output, "12345678", 8), 0);
  EXPECT_EQ(output[8], 0xee);  // only IoStatus.Information bytes are copied
}

TEST_F(IrpStackTest, CopyOutStopsAtTheOutputLength) {
  pdo_driver_.OnIrp(pdo_, [](DeviceObject*, Irp* irp) {
    std::memset(irp->AssociatedIrp.SystemBuffer, 0x11, 4);
    return CompleteIrp(irp, Status::SUCCESS, 100);  // a driver overstating its output
  });
  uint8_t output[8];
  std::memset(output, 0xee, sizeof output);
  Irp* irp = IoBuildDeviceIoControlRequest(0x220004, fdo_, "abcd", 4, output, 4, false);
  EXPECT_EQ(IoCallDriverAndWait(fdo_, irp), Status::SUCCESS);
  EXPECT_EQ(output[3], 0x11);
  EXPECT_EQ(output[4], 0xee);
}

TEST_F(IrpStackTest, PendingThenCompletedFromADpc) {
  pdo_driver_.OnIrp(pdo_, [this](DeviceObject*, Irp* irp) { return PendAndCompleteFromDpc(irp); });
  EXPECT_EQ(IoCallDriver(fdo_, BuildIoctl()), Status::PENDING);
  ASSERT_EQ(KeWaitForSingleObject(&originator_done_, 5s), Status::SUCCESS);
  EXPECT_TRUE(originator_pending_);
  EXPECT_EQ(originator_irql_, Irql::kDispatch);  // completed by the DPC
  EXPECT_EQ(log(),
            (std::vector<std::string>{"fdo dispatch", "pdo dispatch (pending)",
                                      "pdo completes from dpc", "fdo completion", "originator"}));
}

TEST_F(IrpStackTest, PendingReturnedPropagatesWithoutACompletionRoutine) {
  // The FDO passes the IRP down on its own location, without a routine: the I/O manager
  // carries the PDO's pending mark up to the FDO's location.
  fdo_driver_.OnIrp(fdo_, [this](DeviceObject*, Irp* irp) {
    IoCopyCurrentIrpStackLocationToNext(irp);
    return IoCallDriver(lower_, irp);
  });
  pdo_driver_.OnIrp(pdo_, [this](DeviceObject*, Irp* irp) { return PendAndCompleteFromDpc(irp); });
  EXPECT_EQ(IoCallDriver(fdo_, BuildIoctl()), Status::PENDING);
  ASSERT_EQ(KeWaitForSingleObject(&originator_done_, 5s), Status::SUCCESS);
  EXPECT_TRUE(originator_pending_);
}

TEST_F(IrpStackTest, SkippingTheLocationSharesThePendingMark) {
  fdo_driver_.OnIrp(fdo_, [this](DeviceObject*, Irp* irp) {
    IoSkipCurrentIrpStackLocation(irp);
    return IoCallDriver(lower_, irp);
  });
  pdo_driver_.OnIrp(pdo_, [this](DeviceObject*, Irp* irp) { return PendAndCompleteFromDpc(irp); });
  EXPECT_EQ(IoCallDriver(fdo_, BuildIoctl()), Status::PENDING);
  ASSERT_EQ(KeWaitForSingleObject(&originator_done_, 5s), Status::SUCCESS);
  EXPECT_TRUE(originator_pending_);
}

TEST_F(IrpStackTest, SynchronousWaitOnAPendedIrp) {
  pdo_driver_.OnIrp(pdo_, [this](DeviceObject*, Irp* irp) { return PendAndCompleteFromDpc(irp); });
  Irp* irp = IoBuildDeviceIoControlRequest(0x220004, fdo_, nullptr, 0, nullptr, 0, true);
  EXPECT_EQ(IoGetNextIrpStackLocation(irp)->MajorFunction, IrpMajor::kInternalDeviceControl);
  EXPECT_EQ(IoCallDriverAndWait(fdo_, irp), Status::SUCCESS);
}

TEST_F(IrpStackTest, ARoutineClaimsTheIrpBackAndCompletesItAgain) {
  fdo_claims_back_ = true;
  pdo_driver_.OnIrp(
      pdo_, [](DeviceObject*, Irp* irp) { return CompleteIrp(irp, Status::INVALID_SETTING); });
  IoCallDriver(fdo_, BuildIoctl());
  ASSERT_EQ(KeWaitForSingleObject(&claimed_event_, 5s), Status::SUCCESS);
  EXPECT_FALSE(originator_done_.IsSet());  // completion stopped at the FDO
  // The FDO finishes its processing, then lets completion continue.
  claimed_->IoStatus.Status = Status::SUCCESS;
  fdo_claims_back_ = false;
  IoCompleteRequest(claimed_);
  ASSERT_TRUE(originator_done_.IsSet());
  EXPECT_EQ(originator_status_, Status::SUCCESS);
  EXPECT_EQ(log().back(), "originator");
}

TEST_F(IrpStackTest, TheAllocatorOwnsAndFreesItsIrp) {
  pdo_driver_.OnIrp(pdo_,
                    [](DeviceObject*, Irp* irp) { return CompleteIrp(irp, Status::SUCCESS, 3); });
  originator_action_ = CompletionAction::kMoreProcessingRequired;
  Irp* irp = IoAllocateIrp(fdo_->StackSize);
  EXPECT_EQ(irp->CurrentLocation, irp->StackCount + 1);
  IoGetNextIrpStackLocation(irp)->MajorFunction = IrpMajor::kDeviceControl;
  IoSetCompletionRoutine(irp, &OriginatorCompletion, this, true, true, true);
  EXPECT_EQ(IoCallDriver(fdo_, irp), Status::SUCCESS);
  EXPECT_TRUE(originator_done_.IsSet());
  EXPECT_EQ(irp->IoStatus.Information, 3u);  // still ours to read
  IoFreeIrp(irp);
}

TEST_F(IrpStackTest, AReusedIrpGoesDownAgain) {
  int calls = 0;
  pdo_driver_.OnIrp(pdo_, [&calls](DeviceObject*, Irp* irp) {
    return CompleteIrp(irp, Status::SUCCESS, ++calls);
  });
  originator_action_ = CompletionAction::kMoreProcessingRequired;
  Irp* irp = IoAllocateIrp(fdo_->StackSize);
  for (int round = 1; round <= 3; ++round) {
    IoGetNextIrpStackLocation(irp)->MajorFunction = IrpMajor::kDeviceControl;
    IoSetCompletionRoutine(irp, &OriginatorCompletion, this, true, true, true);
    EXPECT_EQ(IoCallDriver(fdo_, irp), Status::SUCCESS);
    EXPECT_EQ(irp->IoStatus.Information, static_cast<uint64_t>(round));
    IoReuseIrp(irp, Status::SUCCESS);
    EXPECT_EQ(irp->CurrentLocation, irp->StackCount + 1);
    EXPECT_EQ(irp->IoStatus.Information, 0u);
  }
  EXPECT_EQ(calls, 3);
  IoFreeIrp(irp);
}

TEST_F(IrpStackTest, InvokeOnBitsSelectTheRoutine) {
  pdo_driver_.OnIrp(pdo_,
                    [](DeviceObject*, Irp* irp) { return CompleteIrp(irp, Status::SUCCESS); });
  fdo_driver_.OnIrp(fdo_, [this](DeviceObject*, Irp* irp) {
    IoCopyCurrentIrpStackLocationToNext(irp);
    IoSetCompletionRoutine(irp, &FdoCompletion, this, /*on_success=*/false, /*on_error=*/true,
                           /*on_cancel=*/false);
    return IoCallDriver(lower_, irp);
  });
  IoCallDriver(fdo_, BuildIoctl());
  EXPECT_EQ(log(), std::vector<std::string>{"originator"});  // the FDO's error-only routine slept

  pdo_driver_.OnIrp(pdo_, [](DeviceObject*, Irp* irp) { return CompleteIrp(irp, Status::ERROR); });
  IoCallDriver(fdo_, BuildIoctl());
  EXPECT_EQ(log(), (std::vector<std::string>{"originator", "fdo completion", "originator"}));
}

TEST(Irp, AMajorFunctionWithoutDispatchIsUnsupported) {
  Node node;
  DriverObject* driver = nullptr;
  ASSERT_EQ(
      IoCreateDriver(
          &node, "empty", [](DriverObject*, void*) { return Status::SUCCESS; }, nullptr, &driver),
      Status::SUCCESS);
  DeviceObject* device = nullptr;
  ASSERT_EQ(IoCreateDevice(driver, 0, nullptr, 0, &device), Status::SUCCESS);
  Irp* irp = IoBuildDeviceIoControlRequest(1, device, nullptr, 0, nullptr, 0, false);
  EXPECT_EQ(IoCallDriverAndWait(device, irp), Status::UNSUPPORTED);
  IoDeleteDevice(device);
  IoUnloadDriver(driver);
  EXPECT_EQ(node.driver_count(), 0u);
}

// A device that forwards what it does not own to a device outside its own stack (a bus
// PDO passing verb IRPs to the device that carries them) takes its target's StackSize plus
// one, before anything attaches over it: an FDO attached later gets one more, and an IRP
// sized at the top then has a location for every device it passes through, whether each
// forwards by copying its location to the next or by skipping its own.
TEST(IrpForwarding, AForwardingDeviceSizedForItsTargetCarriesTheIrpThroughCopyAndSkip) {
  Node node;
  testing::TestDriver target_driver(node, "target");
  testing::TestDriver bus_driver(node, "bus");
  testing::TestDriver fdo_driver(node, "fdo");
  DeviceObject* target = target_driver.CreateDevice();
  DeviceObject* target_top = target_driver.CreateDevice();
  target_driver.Attach(target_top, target);  // the target is a stack of two: StackSize 2
  DeviceObject* pdo = bus_driver.CreateDevice();
  pdo->StackSize = static_cast<int8_t>(target_top->StackSize + 1);
  DeviceObject* fdo = fdo_driver.CreateDevice();
  DeviceObject* below = fdo_driver.Attach(fdo, pdo);
  EXPECT_EQ(target_top->StackSize, 2);
  EXPECT_EQ(pdo->StackSize, 3);
  EXPECT_EQ(fdo->StackSize, 4);

  FileObject file{};
  std::vector<std::string> seen;
  fdo_driver.OnIrp(fdo, [&](DeviceObject*, Irp* irp) {
    seen.push_back("fdo");
    IoCopyCurrentIrpStackLocationToNext(irp);
    return IoCallDriver(below, irp);
  });
  bus_driver.OnIrp(pdo, [&](DeviceObject*, Irp* irp) {
    seen.push_back("pdo");
    IoSkipCurrentIrpStackLocation(irp);
    return IoCallDriver(target_top, irp);
  });
  target_driver.OnIrp(target_top, [&](DeviceObject*, Irp* irp) {
    seen.push_back("target top");
    IoCopyCurrentIrpStackLocationToNext(irp);
    return IoCallDriver(target, irp);
  });
  target_driver.OnIrp(target, [&](DeviceObject*, Irp* irp) {
    const IoStackLocation* location = IoGetCurrentIrpStackLocation(irp);
    seen.push_back(location->FileObject == &file &&
                           location->Parameters.DeviceIoControl.IoControlCode == 0x220008
                       ? "target"
                       : "target: wrong location");
    return CompleteIrp(irp, Status::SUCCESS, 0);
  });
  for (DeviceObject* first : {fdo, pdo}) {
    seen.clear();
    Irp* irp = IoBuildDeviceIoControlRequest(0x220008, first, nullptr, 0, nullptr, 0, true);
    ASSERT_EQ(irp->StackCount, first->StackSize);
    IoGetNextIrpStackLocation(irp)->FileObject = &file;
    EXPECT_EQ(IoCallDriverAndWait(first, irp), Status::SUCCESS);
    const std::vector<std::string> from_pdo = {"pdo", "target top", "target"};
    std::vector<std::string> expected = from_pdo;
    if (first == fdo) expected.insert(expected.begin(), "fdo");
    EXPECT_EQ(seen, expected);
  }
  fdo_driver.Delete(fdo);
}

class IrpDeathTest : public IrpStackTest {
 protected:
  void SetUp() override {
    testing::UseThreadsafeDeathTests();
    IrpStackTest::SetUp();
  }
};

TEST_F(IrpDeathTest, CompletingTwiceDies) {
  pdo_driver_.OnIrp(pdo_, [](DeviceObject*, Irp* irp) {
    CompleteIrp(irp, Status::SUCCESS);
    return CompleteIrp(irp, Status::SUCCESS);
  });
  Irp* irp = IoAllocateIrp(fdo_->StackSize);  // not freed by the I/O manager
  IoGetNextIrpStackLocation(irp)->MajorFunction = IrpMajor::kDeviceControl;
  EXPECT_DEATH(IoCallDriver(fdo_, irp), "IoCompleteRequest: IRP .* completed twice");
  IoFreeIrp(irp);
}

TEST_F(IrpDeathTest, CompletingWithPendingDies) {
  pdo_driver_.OnIrp(pdo_,
                    [](DeviceObject*, Irp* irp) { return CompleteIrp(irp, Status::PENDING); });
  EXPECT_DEATH(IoCallDriver(fdo_, BuildIoctl()), "completed with status PENDING");
}

TEST_F(IrpDeathTest, RunningOutOfStackLocationsDies) {
  // A driver that passes the IRP on without a stack location for the next one.
  pdo_driver_.OnIrp(pdo_, [this](DeviceObject*, Irp* irp) { return IoCallDriver(pdo_, irp); });
  Irp* irp = IoAllocateIrp(1);
  IoGetNextIrpStackLocation(irp)->MajorFunction = IrpMajor::kDeviceControl;
  EXPECT_DEATH(IoCallDriver(pdo_, irp), "has no stack location left");
  IoFreeIrp(irp);
}

TEST_F(IrpDeathTest, SendingAnIrpShorterThanTheDevicesStackDies) {
  // fdo_ sits over pdo_ (StackSize 2): an IRP of one location would run out in the PDO.
  Irp* irp = IoAllocateIrp(1);
  IoGetNextIrpStackLocation(irp)->MajorFunction = IrpMajor::kDeviceControl;
  EXPECT_DEATH(IoCallDriver(fdo_, irp), "has 1 stack locations left but device .* needs 2");
  IoFreeIrp(irp);
}

TEST_F(IrpDeathTest, CopyingToANextLocationThatDoesNotExistDies) {
  // A forwarding device whose StackSize does not count its target: its copy to the next
  // location would write before the IRP's first one.
  pdo_driver_.OnIrp(pdo_, [](DeviceObject*, Irp* irp) {
    IoCopyCurrentIrpStackLocationToNext(irp);
    return CompleteIrp(irp, Status::SUCCESS);
  });
  Irp* irp = IoAllocateIrp(1);
  IoGetNextIrpStackLocation(irp)->MajorFunction = IrpMajor::kDeviceControl;
  EXPECT_DEATH(IoCallDriver(pdo_, irp), "has no next stack location");
  IoFreeIrp(irp);
}

}  // namespace
}  // namespace softib::kernel
