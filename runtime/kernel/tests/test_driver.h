// A driver for tests: each device's IRPs go to a handler the test installs; create, cleanup
// and close succeed by default. Unloading detaches and deletes what the test left.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "softib/kernel/device.h"
#include "softib/kernel/io.h"
#include "softib/kernel/node.h"

namespace softib::kernel::testing {

using Handler = std::function<Status(DeviceObject* device, Irp* irp)>;

inline Status CompleteIrp(Irp* irp, Status status, uint64_t information = 0) {
  irp->IoStatus.Status = status;
  irp->IoStatus.Information = information;
  IoCompleteRequest(irp);
  return status;
}

class TestDriver {
 public:
  TestDriver(Node& node, const char* name) {
    const Status status = IoCreateDriver(
        &node, name,
        [](DriverObject* driver, void* self) {
          driver->DriverExtension = self;
          for (auto& dispatch : driver->MajorFunction) dispatch = &Dispatch;
          driver->Unload = &Unload;
          return Status::SUCCESS;
        },
        this, &driver_);
    if (status != Status::SUCCESS) std::abort();
  }
  ~TestDriver() {
    if (!unloaded_) IoUnloadDriver(driver_);
  }
  TestDriver(const TestDriver&) = delete;
  TestDriver& operator=(const TestDriver&) = delete;

  DriverObject* driver() const { return driver_; }

  DeviceObject* CreateDevice(const char* name = nullptr) {
    DeviceObject* device = nullptr;
    if (IoCreateDevice(driver_, 0, name, 0x22, &device) != Status::SUCCESS) return nullptr;
    std::lock_guard lock(mutex_);
    devices_.push_back(device);
    return device;
  }

  // Puts `upper` over `lower`'s stack; returns the device below upper.
  DeviceObject* Attach(DeviceObject* upper, DeviceObject* lower) {
    DeviceObject* below = IoAttachDeviceToDeviceStack(upper, lower);
    std::lock_guard lock(mutex_);
    below_[upper] = below;
    return below;
  }

  void Delete(DeviceObject* device) {
    DeviceObject* below = nullptr;
    {
      std::lock_guard lock(mutex_);
      std::erase(devices_, device);
      if (auto it = below_.find(device); it != below_.end()) {
        below = it->second;
        below_.erase(it);
      }
    }
    if (below != nullptr) IoDetachDevice(below);
    IoDeleteDevice(device);
  }

  void Unload() {
    unloaded_ = true;
    IoUnloadDriver(driver_);
  }

  void OnIrp(DeviceObject* device, Handler handler) {
    std::lock_guard lock(mutex_);
    handlers_[device] = std::move(handler);
  }

  // Major functions seen, in order (all devices of this driver).
  std::vector<IrpMajor> seen() {
    std::lock_guard lock(mutex_);
    return seen_;
  }
  ProcessorMode last_mode() {
    std::lock_guard lock(mutex_);
    return last_mode_;
  }

 private:
  static Status Dispatch(DeviceObject* device, Irp* irp) {
    auto* self = static_cast<TestDriver*>(device->DriverObject->DriverExtension);
    Handler handler;
    {
      std::lock_guard lock(self->mutex_);
      self->seen_.push_back(IoGetCurrentIrpStackLocation(irp)->MajorFunction);
      self->last_mode_ = irp->RequestorMode;
      if (auto it = self->handlers_.find(device); it != self->handlers_.end()) {
        handler = it->second;
      }
    }
    if (handler) return handler(device, irp);
    return CompleteIrp(irp, Status::SUCCESS);
  }

  static void Unload(DriverObject* driver) {
    auto* self = static_cast<TestDriver*>(driver->DriverExtension);
    std::vector<DeviceObject*> devices;
    {
      std::lock_guard lock(self->mutex_);
      devices = self->devices_;
    }
    for (auto it = devices.rbegin(); it != devices.rend(); ++it) self->Delete(*it);
  }

  DriverObject* driver_ = nullptr;
  bool unloaded_ = false;
  std::mutex mutex_;
  std::vector<DeviceObject*> devices_;
  std::map<DeviceObject*, DeviceObject*> below_;
  std::map<DeviceObject*, Handler> handlers_;
  std::vector<IrpMajor> seen_;
  ProcessorMode last_mode_ = ProcessorMode::kKernelMode;
};

// Polls `done` until it holds or `limit` passes.
template <typename Predicate>
bool WaitUntil(Predicate done, std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Death tests fork a process that has node threads: re-execute instead.
inline void UseThreadsafeDeathTests() { GTEST_FLAG_SET(death_test_style, "threadsafe"); }

}  // namespace softib::kernel::testing
