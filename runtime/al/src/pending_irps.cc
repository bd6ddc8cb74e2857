#include "runtime/al/src/pending_irps.h"

#include <algorithm>
#include <thread>

#include "softib/kernel/verb_support.h"
#include "softib/kernel/verifier.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

PendingIrps::~PendingIrps() {
  // A cancel routine that already claimed an IRP still has to take it off this queue and
  // finish completing it.
  while (size() != 0 || cancelling_.load(std::memory_order_acquire) != 0) {
    std::this_thread::yield();
  }
}

void PendingIrps::Erase(Irp* irp) {
  auto it = std::find(irps_.begin(), irps_.end(), irp);
  if (it != irps_.end()) {
    irps_.erase(it);
    node_pending_->fetch_sub(1, std::memory_order_relaxed);
  }
}

Status PendingIrps::Insert(Irp* irp) {
  kernel::IoSetIrpNode(irp, node_);
  bool cancelled = false;
  {
    kernel::SpinLockGuard guard(lock_);
    irp->DriverContext[0] = this;
    kernel::IoMarkIrpPending(irp);
    irps_.push_back(irp);
    node_pending_->fetch_add(1, std::memory_order_relaxed);
    kernel::IoSetCancelRoutine(irp, &PendingIrps::CancelRoutine);
    // Cancelled before the routine was set: take it back unless the canceller has it.
    if (kernel::IoIsCancelled(irp) && kernel::IoSetCancelRoutine(irp, nullptr) != nullptr) {
      Erase(irp);
      cancelled = true;
    }
  }
  if (cancelled) kernel::CompleteVerbIrp(irp, Status::CANCELED, 0);
  return Status::PENDING;
}

Irp* PendingIrps::Remove() {
  kernel::SpinLockGuard guard(lock_);
  for (auto it = irps_.begin(); it != irps_.end(); ++it) {
    Irp* irp = *it;
    if (kernel::IoSetCancelRoutine(irp, nullptr) == nullptr) continue;  // being cancelled
    irps_.erase(it);
    node_pending_->fetch_sub(1, std::memory_order_relaxed);
    // Counted before the lock drops: a cleanup that finds the queue empty afterwards still
    // sees this IRP on its way.
    completing_->fetch_add(1, std::memory_order_acq_rel);
    return irp;
  }
  return nullptr;
}

void PendingIrps::Complete(Irp* irp, Status status, uint64_t information) {
  kernel::CompleteVerbIrp(irp, status, information);
  completing_->fetch_sub(1, std::memory_order_acq_rel);
}

std::size_t PendingIrps::CancelAll() {
  std::size_t n = 0;
  while (Irp* irp = Remove()) {
    Complete(irp, Status::CANCELED, 0);
    ++n;
  }
  return n;
}

std::size_t PendingIrps::size() {
  kernel::SpinLockGuard guard(lock_);
  return irps_.size();
}

void PendingIrps::CancelRoutine(kernel::DeviceObject*, Irp* irp) {
  auto* self = static_cast<PendingIrps*>(irp->DriverContext[0]);
  kernel::IoReleaseCancelSpinLock(kernel::IoGetIrpNode(irp), irp->CancelIrql);
  {
    kernel::SpinLockGuard guard(self->lock_);
    self->Erase(irp);
    self->completing_->fetch_add(1, std::memory_order_acq_rel);
    self->cancelling_.fetch_add(1, std::memory_order_acq_rel);  // holds the destructor
  }
  self->Complete(irp, Status::CANCELED, 0);
  self->cancelling_.fetch_sub(1, std::memory_order_acq_rel);  // the last touch of `self`
}

}  // namespace softib::al
