// A queue of pending event IRPs (GetCompletionEvent, GetAsyncEvent, GetPnpEvent) with a
// cancel routine, counting what waits so that leak checks see pending requests. Whoever
// clears an IRP's cancel routine owns it: Remove skips IRPs a canceller already claimed.
// An IRP taken out (Remove) counts as completing in `completing` (its file's) until
// Complete has run its completion routines, so that a client's release can wait for
// completions already on their way into it (IbReleaseAl).
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>

#include "softib/kernel/io.h"
#include "softib/kernel/spin_lock.h"

namespace softib::al {

class PendingIrps {
 public:
  PendingIrps(kernel::Node* node, std::atomic<uint32_t>* node_pending,
              std::atomic<uint32_t>* completing)
      : node_(node), node_pending_(node_pending), completing_(completing) {}
  ~PendingIrps();  // waits for cancel routines still running; owners CancelAll first
  PendingIrps(const PendingIrps&) = delete;
  PendingIrps& operator=(const PendingIrps&) = delete;

  // Marks the IRP pending and queues it; returns PENDING (a cancelled IRP is completed
  // CANCELED at once, still returning PENDING as WDM allows after IoMarkIrpPending).
  kernel::Status Insert(kernel::Irp* irp);
  // The oldest IRP nobody is cancelling, its cancel routine cleared; null when none. The
  // caller owns it and must finish it with Complete.
  kernel::Irp* Remove();
  // Completes an IRP that Remove returned (its routines run here) and stops counting it.
  void Complete(kernel::Irp* irp, kernel::Status status, uint64_t information);
  // Completes every queued IRP with CANCELED; returns how many.
  std::size_t CancelAll();
  std::size_t size();

 private:
  static void CancelRoutine(kernel::DeviceObject* device, kernel::Irp* irp);
  void Erase(kernel::Irp* irp);  // lock_ held

  kernel::Node* const node_;
  std::atomic<uint32_t>* const node_pending_;
  std::atomic<uint32_t>* const completing_;
  std::atomic<uint32_t> cancelling_{0};  // cancel routines between Erase and their return
  kernel::KSpinLock lock_;
  std::deque<kernel::Irp*> irps_;
};

}  // namespace softib::al
