// A queue of pending event IRPs (GetCompletionEvent, GetAsyncEvent, GetPnpEvent) with a
// cancel routine, counting what waits so that leak checks see pending requests. Whoever
// clears an IRP's cancel routine owns it: Remove skips IRPs a canceller already claimed.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>

#include "softib/kernel/io.h"
#include "softib/kernel/spin_lock.h"

namespace softib::al {

class PendingIrps {
 public:
  PendingIrps(kernel::Node* node, std::atomic<uint32_t>* node_pending)
      : node_(node), node_pending_(node_pending) {}
  ~PendingIrps();  // waits for cancel routines still running; owners CancelAll first
  PendingIrps(const PendingIrps&) = delete;
  PendingIrps& operator=(const PendingIrps&) = delete;

  // Marks the IRP pending and queues it; returns PENDING (a cancelled IRP is completed
  // CANCELED at once, still returning PENDING as WDM allows after IoMarkIrpPending).
  kernel::Status Insert(kernel::Irp* irp);
  // The oldest IRP nobody is cancelling, its cancel routine cleared; null when none.
  kernel::Irp* Remove();
  // Completes every queued IRP with CANCELED; returns how many.
  std::size_t CancelAll();
  std::size_t size();

 private:
  static void CancelRoutine(kernel::DeviceObject* device, kernel::Irp* irp);
  void Erase(kernel::Irp* irp);  // lock_ held

  kernel::Node* const node_;
  std::atomic<uint32_t>* const node_pending_;
  kernel::KSpinLock lock_;
  std::deque<kernel::Irp*> irps_;
};

}  // namespace softib::al
