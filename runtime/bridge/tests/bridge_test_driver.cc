#include "bridge_test_driver.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <span>
#include <thread>

#include "softib/bridge/reply_fds.h"

namespace softib::bridge::test {

using kernel::DeviceObject;
using kernel::Irp;
using kernel::IrpMajor;
using kernel::Status;

namespace {

Status Finish(Irp* irp, Status status, uint64_t information = 0) {
  irp->IoStatus.Status = status;
  irp->IoStatus.Information = information;
  kernel::IoCompleteRequest(irp);
  return status;
}

}  // namespace

BridgeTestDriver::BridgeTestDriver(kernel::Node& node) : node_(node), queue_(&node) {
  kernel::KeInitializeDpc(&release_dpc_, &node, &ReleaseDpc, this);
  const Status status = kernel::IoCreateDriver(
      &node, "bridge_test_driver",
      [](kernel::DriverObject* driver, void* self) {
        driver->DriverExtension = self;
        for (auto& dispatch : driver->MajorFunction) dispatch = &Dispatch;
        driver->Unload = [](kernel::DriverObject* unloading) {
          auto* me = static_cast<BridgeTestDriver*>(unloading->DriverExtension);
          kernel::IoDeleteDevice(me->device_);
        };
        auto* me = static_cast<BridgeTestDriver*>(self);
        return kernel::IoCreateDevice(driver, 0, kDeviceName, 0x22, &me->device_);
      },
      this, &driver_);
  if (status != Status::SUCCESS) std::abort();
}

BridgeTestDriver::~BridgeTestDriver() {
  kernel::KeFlushQueuedDpcs(&node_);  // a release still running touches the queue
  kernel::IoUnloadDriver(driver_);
}

BridgeTestDriver::Counts BridgeTestDriver::counts() {
  std::lock_guard lock(mutex_);
  return counts_;
}

Status BridgeTestDriver::Dispatch(DeviceObject* device, Irp* irp) {
  auto* self = static_cast<BridgeTestDriver*>(device->DriverObject->DriverExtension);
  kernel::IoStackLocation* location = kernel::IoGetCurrentIrpStackLocation(irp);
  {
    std::lock_guard lock(self->mutex_);
    if (irp->RequestorMode != kernel::ProcessorMode::kUserMode) ++self->counts_.kernel_mode_irps;
    switch (location->MajorFunction) {
      case IrpMajor::kCreate:
        ++self->counts_.creates;
        self->counts_.last_opened = location->FileObject;
        self->counts_.file_irps.push_back(IrpMajor::kCreate);
        break;
      case IrpMajor::kCleanup:
        ++self->counts_.cleanups;
        if (!self->queue_.empty()) ++self->counts_.cleanup_with_queued;
        self->counts_.file_irps.push_back(IrpMajor::kCleanup);
        break;
      case IrpMajor::kClose:
        ++self->counts_.closes;
        self->counts_.file_irps.push_back(IrpMajor::kClose);
        break;
      default:
        break;
    }
  }
  if (location->MajorFunction != IrpMajor::kDeviceControl) return Finish(irp, Status::SUCCESS);
  return self->DeviceControl(irp);
}

Status BridgeTestDriver::DeviceControl(Irp* irp) {
  const auto& params = kernel::IoGetCurrentIrpStackLocation(irp)->Parameters.DeviceIoControl;
  auto* buffer = static_cast<uint8_t*>(irp->AssociatedIrp.SystemBuffer);
  switch (params.IoControlCode) {
    case kEcho:
      if (params.InputBufferLength > kMaxEcho ||
          params.OutputBufferLength < params.InputBufferLength) {
        return Finish(irp, Status::INVALID_PARAMETER);
      }
      // METHOD_BUFFERED: the input already sits where the output goes.
      return Finish(irp, Status::SUCCESS, params.InputBufferLength);
    case kPend: {
      {
        std::lock_guard lock(mutex_);
        ++counts_.pended;
      }
      return queue_.Insert(irp);
    }
    case kRelease:
      kernel::KeInsertQueueDpc(&release_dpc_, nullptr, nullptr);
      return Finish(irp, Status::SUCCESS);
    case kBlock: {
      std::unique_lock lock(mutex_);
      ++counts_.blocked;
      unblocked_cv_.wait(lock, [this] { return unblocked_; });
      lock.unlock();
      return Finish(irp, Status::SUCCESS);
    }
    case kMemfd: {
      if (params.OutputBufferLength < 1) return Finish(irp, Status::INVALID_PARAMETER);
      const int fd = memfd_create("bridge-test", MFD_CLOEXEC);
      if (fd < 0) return Finish(irp, Status::INSUFFICIENT_RESOURCES);
      const ssize_t written = write(fd, buffer, params.InputBufferLength);
      const bool attached = bridge::AttachReplyFds(irp, std::span<const int>(&fd, 1));
      close(fd);  // the bridge keeps its own copy
      buffer[0] = attached ? 1 : 0;
      if (params.InputBufferLength == 0) return Finish(irp, Status::ERROR, 1);
      return Finish(irp, written < 0 ? Status::ERROR : Status::SUCCESS, 1);
    }
    case kMode:
      if (params.OutputBufferLength < 1) return Finish(irp, Status::INVALID_PARAMETER);
      buffer[0] = static_cast<uint8_t>(irp->RequestorMode);
      return Finish(irp, Status::SUCCESS, 1);
    default:
      return Finish(irp, Status::UNSUPPORTED);
  }
}

void BridgeTestDriver::Unblock() {
  std::lock_guard lock(mutex_);
  unblocked_ = true;
  unblocked_cv_.notify_all();
}

void BridgeTestDriver::ReleaseDpc(kernel::Kdpc* /*dpc*/, void* context, void* /*arg1*/,
                                  void* /*arg2*/) {
  auto* self = static_cast<BridgeTestDriver*>(context);
  while (Irp* irp = self->queue_.Remove()) {
    const auto& params = kernel::IoGetCurrentIrpStackLocation(irp)->Parameters.DeviceIoControl;
    const uint32_t bytes = std::min<uint32_t>(params.OutputBufferLength, sizeof kReleased - 1);
    if (bytes > 0) std::memcpy(irp->AssociatedIrp.SystemBuffer, kReleased, bytes);
    {
      std::lock_guard lock(self->mutex_);
      ++self->counts_.released;
    }
    Finish(irp, Status::SUCCESS, bytes);
  }
}

bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace softib::bridge::test
