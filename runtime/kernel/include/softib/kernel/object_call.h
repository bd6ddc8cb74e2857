// What the generated object API (kernel/<module>_ib.h: Ib<Verb>(IB_CQ*, ..., Irp*)) runs
// on: a handle-based direct call made on an IRP of the call's own, whose completion
// routine fills or frees the public object structure and then completes the caller's IRP
// with the verb's status (Information: the new object for a create, else the output
// length). Nothing waits, so it works at DISPATCH; the caller's IRP completes inline when
// the AL completes at once, else later from whatever thread completes the inner IRP.
#pragma once

#include <cstdint>
#include <new>

#include "softib/kernel/event.h"
#include "softib/kernel/io.h"
#include "softib/kernel/irp.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/status.h"
#include "softib/kernel/verb_support.h"

namespace softib::kernel {

// One call in flight. The generated code derives one per verb, holding the In/Out
// structures the handle-based call reads and writes.
class ObjectCall {
 public:
  virtual ~ObjectCall() = default;
  // At the inner IRP's completion: fills or frees the public structure and returns the
  // caller's IoStatus.Information. `status` may be changed (a create whose follow-up query
  // failed reports that failure).
  virtual uint64_t Finish(Status& status, uint64_t information) = 0;

 private:
  template <typename Start>
  friend Status StartObjectCall(Irp* caller, ObjectCall* call, Start&& start);
  static CompletionAction Done(DeviceObject*, Irp* inner, void* context) {
    auto* call = static_cast<ObjectCall*>(context);
    Irp* const caller = call->caller_;
    Status status = inner->IoStatus.Status;
    const bool pended = inner->PendingReturned;
    const uint64_t information = call->Finish(status, inner->IoStatus.Information);
    delete call;
    IoFreeIrp(inner);
    if (pended) IoMarkIrpPending(caller);
    CompleteVerbIrp(caller, status, information);
    return CompletionAction::kMoreProcessingRequired;
  }

  Irp* caller_ = nullptr;
};

// Runs `start(inner)` — the handle-based Ib<Verb>(al, in, out, inner) — for `call`, which
// it owns from here on. `caller` already has its current stack location
// (BeginDirectCall). Returns PENDING, or the final status when the caller's IRP is
// already complete.
template <typename Start>
Status StartObjectCall(Irp* caller, ObjectCall* call, Start&& start) {
  Irp* inner = IoAllocateIrp(1);
  if (inner == nullptr) {
    delete call;
    return CompleteVerbIrp(caller, Status::INSUFFICIENT_RESOURCES, 0);
  }
  call->caller_ = caller;
  IoSetCompletionRoutine(inner, &ObjectCall::Done, call, true, true, true);
  const Status status = start(inner);
  return status == Status::PENDING ? Status::PENDING : status;
}

// The PASSIVE-only convenience for set-up code and tests: allocates an IRP, makes the
// object call `call(irp)` (e.g. `[&](Irp* irp) { return IbCreateCq(ca, &create, irp); }`)
// with a completion routine that signals an event, waits for it, and returns the final
// status; *information (optional) gets IoStatus.Information (a create's new object).
template <typename Call>
Status IbCallAndWait(Call&& call, uint64_t* information = nullptr) {
  VerifyIrqlAtMost(Irql::kPassive, "IbCallAndWait");
  Irp* irp = IoAllocateIrp(1);
  if (irp == nullptr) return Status::INSUFFICIENT_RESOURCES;
  KEvent done(EventType::kNotification);
  IoSetCompletionRoutine(
      irp,
      [](DeviceObject*, Irp*, void* context) {
        KeSetEvent(static_cast<KEvent*>(context));
        return CompletionAction::kMoreProcessingRequired;
      },
      &done, true, true, true);
  call(irp);
  KeWaitForSingleObject(&done);
  const Status status = irp->IoStatus.Status;
  if (information != nullptr) *information = irp->IoStatus.Information;
  IoFreeIrp(irp);
  return status;
}

// IbCallAndWait for a create: *object gets the new object (null after a failure).
template <typename Object, typename Call>
Status IbCreateAndWait(Call&& call, Object** object) {
  uint64_t information = 0;
  const Status status = IbCallAndWait(static_cast<Call&&>(call), &information);
  *object = status == Status::SUCCESS ? reinterpret_cast<Object*>(information) : nullptr;
  return status;
}

}  // namespace softib::kernel
