// A driver on a node for the bridge tests, with one named device, kDeviceName; its IOCTLs
// are in bridge_test_ioctls.h.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "bridge_test_ioctls.h"
#include "softib/kernel/device.h"
#include "softib/kernel/dpc.h"
#include "softib/kernel/io.h"
#include "softib/kernel/node.h"

namespace softib::bridge::test {

inline constexpr const char* kDeviceName = "bridge_test";

class BridgeTestDriver {
 public:
  explicit BridgeTestDriver(kernel::Node& node);
  ~BridgeTestDriver();  // unloads: the queue must be empty, every file closed
  BridgeTestDriver(const BridgeTestDriver&) = delete;
  BridgeTestDriver& operator=(const BridgeTestDriver&) = delete;

  // What the driver saw, for the tests.
  struct Counts {
    int creates = 0;
    int cleanups = 0;
    int closes = 0;
    int pended = 0;                           // IRPs inserted into the queue
    int released = 0;                         // IRPs the DPC completed
    int blocked = 0;                          // kBlock dispatches entered
    int kernel_mode_irps = 0;                 // any IRP that did not come from user mode
    int cleanup_with_queued = 0;              // cleanups that found IRPs still queued
    std::vector<kernel::IrpMajor> file_irps;  // create/cleanup/close in order
    const kernel::FileObject* last_opened = nullptr;
  };
  Counts counts();
  // Lets kBlock dispatches return (now and from now on).
  void Unblock();
  // No IRP waits in the queue now.
  bool queue_empty() { return queue_.empty(); }
  // Polls until `done(counts())` holds; false after `limit`.
  template <typename Predicate>
  bool WaitFor(Predicate done, std::chrono::milliseconds limit = std::chrono::seconds(10));

 private:
  static kernel::Status Dispatch(kernel::DeviceObject* device, kernel::Irp* irp);
  static void ReleaseDpc(kernel::Kdpc* dpc, void* context, void* arg1, void* arg2);
  kernel::Status DeviceControl(kernel::Irp* irp);

  kernel::Node& node_;
  kernel::DriverObject* driver_ = nullptr;
  kernel::DeviceObject* device_ = nullptr;
  kernel::CancelSafeQueue queue_;
  kernel::Kdpc release_dpc_;
  std::mutex mutex_;
  std::condition_variable unblocked_cv_;
  bool unblocked_ = false;
  Counts counts_;
};

bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds limit);

template <typename Predicate>
bool BridgeTestDriver::WaitFor(Predicate done, std::chrono::milliseconds limit) {
  return WaitUntil([&] { return done(counts()); }, limit);
}

}  // namespace softib::bridge::test
