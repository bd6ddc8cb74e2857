// IRP cancellation: the node's cancel spin lock, IoCancelIrp, and a cancel-safe queue.
#include <atomic>

#include "irp_runtime.h"
#include "node_impl.h"
#include "softib/kernel/io.h"
#include "softib/kernel/verifier.h"

namespace softib::kernel {

DriverCancel IoSetCancelRoutine(Irp* irp, DriverCancel routine) {
  return std::atomic_ref<DriverCancel>(irp->CancelRoutine).exchange(routine);
}

bool IoIsCancelled(Irp* irp) { return std::atomic_ref<bool>(irp->Cancel).load(); }

Node* IoGetIrpNode(Irp* irp) { return RuntimeOf(irp)->node.load(); }

void IoSetIrpNode(Irp* irp, Node* node) {
  Node* unbound = nullptr;
  RuntimeOf(irp)->node.compare_exchange_strong(unbound, node);
}

Irql IoAcquireCancelSpinLock(Node* node) { return node->impl().cancel_lock.Acquire(); }

void IoReleaseCancelSpinLock(Node* node, Irql previous) {
  node->impl().cancel_lock.Release(previous);
}

bool IoCancelIrp(Irp* irp) {
  VerifyIrqlAtMost(Irql::kDispatch, "IoCancelIrp");
  Node* node = IoGetIrpNode(irp);
  if (node == nullptr) {
    // Not sent yet: the driver that receives it sees Cancel and completes it.
    std::atomic_ref<bool>(irp->Cancel).store(true);
    return false;
  }
  const Irql previous = IoAcquireCancelSpinLock(node);
  std::atomic_ref<bool>(irp->Cancel).store(true);
  const DriverCancel routine = IoSetCancelRoutine(irp, nullptr);
  if (routine == nullptr) {
    IoReleaseCancelSpinLock(node, previous);
    return false;
  }
  irp->CancelIrql = previous;
  // The owner of the current location is the driver whose routine this is.
  routine(IoGetCurrentIrpStackLocation(irp)->DeviceObject, irp);
  if (node->impl().cancel_lock.HeldByCurrentThread()) {
    VerifierFail("cancel routine %p returned without releasing the cancel spin lock",
                 reinterpret_cast<void*>(routine));
  }
  if (CurrentIrql() != previous) {
    VerifierFail("cancel routine %p returned at %s (IoCancelIrp was called at %s)",
                 reinterpret_cast<void*>(routine), IrqlName(CurrentIrql()), IrqlName(previous));
  }
  return true;
}

// ---- CancelSafeQueue ----

namespace {
Irp*& PrevOf(Irp* irp) { return reinterpret_cast<Irp*&>(irp->DriverContext[1]); }
Irp*& NextOf(Irp* irp) { return reinterpret_cast<Irp*&>(irp->DriverContext[2]); }
}  // namespace

CancelSafeQueue::~CancelSafeQueue() {
  if (head_ != nullptr) VerifierFail("CancelSafeQueue %p destroyed with IRPs queued", this);
}

void CancelSafeQueue::Unlink(Irp* irp) {
  (PrevOf(irp) != nullptr ? NextOf(PrevOf(irp)) : head_) = NextOf(irp);
  (NextOf(irp) != nullptr ? PrevOf(NextOf(irp)) : tail_) = PrevOf(irp);
  PrevOf(irp) = NextOf(irp) = nullptr;
  irp->DriverContext[0] = nullptr;
}

Status CancelSafeQueue::Insert(Irp* irp) {
  if (node_ != nullptr) IoSetIrpNode(irp, node_);
  {
    SpinLockGuard guard(lock_);
    irp->DriverContext[0] = this;
    PrevOf(irp) = tail_;
    NextOf(irp) = nullptr;
    (tail_ != nullptr ? NextOf(tail_) : head_) = irp;
    tail_ = irp;
    IoMarkIrpPending(irp);
    IoSetCancelRoutine(irp, &CancelRoutine);
    // Cancelled before the routine was set: nobody will call it; take it back if still ours.
    if (!IoIsCancelled(irp) || IoSetCancelRoutine(irp, nullptr) == nullptr) {
      return Status::PENDING;
    }
    Unlink(irp);
  }
  irp->IoStatus.Status = Status::CANCELED;
  irp->IoStatus.Information = 0;
  IoCompleteRequest(irp);
  return Status::CANCELED;
}

Irp* CancelSafeQueue::Remove() {
  SpinLockGuard guard(lock_);
  for (Irp* irp = head_; irp != nullptr; irp = NextOf(irp)) {
    // A null previous routine means IoCancelIrp took it: its cancel routine will unlink it.
    if (IoSetCancelRoutine(irp, nullptr) != nullptr) {
      Unlink(irp);
      return irp;
    }
  }
  return nullptr;
}

bool CancelSafeQueue::empty() {
  SpinLockGuard guard(lock_);
  return head_ == nullptr;
}

void CancelSafeQueue::CancelRoutine(DeviceObject* /*device*/, Irp* irp) {
  auto* queue = static_cast<CancelSafeQueue*>(irp->DriverContext[0]);
  IoReleaseCancelSpinLock(IoGetIrpNode(irp), irp->CancelIrql);
  {
    SpinLockGuard guard(queue->lock_);
    queue->Unlink(irp);
  }
  irp->IoStatus.Status = Status::CANCELED;
  irp->IoStatus.Information = 0;
  IoCompleteRequest(irp);
}

}  // namespace softib::kernel
