// What the generated object API (kernel/<module>_ib.h: Ib<Verb>(IB_CQ*, ..., Irp*)) runs
// on: a handle-based direct call made on an IRP of the call's own, whose completion
// routine fills or frees the public object structure and then completes the caller's IRP
// with the verb's status (Information: the new object for a create, else the output
// length). Nothing waits, so it works at DISPATCH; the caller's IRP completes inline when
// the AL completes at once, else later from whatever thread completes the inner IRP.
#pragma once

#include <atomic>
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
  // At an inner IRP's completion, before Finish: a create whose public structure needs more
  // (IbOpenCa: the CA's QueryCa) sends the follow-up verb on `inner` (made sendable again,
  // its completion routine set) and returns true; its completion comes back here. False:
  // Finish now. `status`: the inner IRP's.
  virtual bool FollowUp(Status /*status*/, Irp* /*inner*/) { return false; }
  // At the last inner IRP's completion: fills or frees the public structure and returns the
  // caller's IoStatus.Information. `status` may be changed (a create whose follow-up query
  // failed reports that failure).
  virtual uint64_t Finish(Status& status, uint64_t information) = 0;

 private:
  template <typename Start>
  friend Status StartObjectCall(Irp* caller, ObjectCall* call, Start&& start);
  // kStarting: StartObjectCall has not looked yet. kDetaching/kDetached: it saw the call
  // unfinished and is marking / has marked the caller's IRP pending (it returns PENDING).
  // kFinished: the caller's IRP was completed before it looked (it returns the final status).
  enum Phase : int { kStarting, kDetaching, kDetached, kFinished };

  static CompletionAction Done(DeviceObject*, Irp* inner, void* context) {
    auto* call = static_cast<ObjectCall*>(context);
    Irp* const caller = call->caller_;
    Status status = inner->IoStatus.Status;
    const uint64_t inner_information = inner->IoStatus.Information;
    IoReuseIrp(inner, Status::SUCCESS);
    IoSetCompletionRoutine(inner, &ObjectCall::Done, call, true, true, true);
    if (call->FollowUp(status, inner)) return CompletionAction::kMoreProcessingRequired;
    const uint64_t information = call->Finish(status, inner_information);
    IoFreeIrp(inner);
    call->final_ = status;
    int expected = kStarting;
    if (call->phase_.compare_exchange_strong(expected, kFinished, std::memory_order_acq_rel)) {
      // Inline, before StartObjectCall looked: it reads final_ and frees the call.
      CompleteVerbIrp(caller, status, information);
      call->Release();
      return CompletionAction::kMoreProcessingRequired;
    }
    // StartObjectCall is between its look and the mark: a few instructions, spin (as
    // VerbTask does) rather than complete an unmarked IRP.
    while (call->phase_.load(std::memory_order_acquire) == kDetaching) {
    }
    call->Release();
    CompleteVerbIrp(caller, status, information);
    return CompletionAction::kMoreProcessingRequired;
  }
  void Release() {
    if (references_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  Irp* caller_ = nullptr;
  std::atomic<int> phase_{kStarting};
  std::atomic<int> references_{2};  // StartObjectCall's and the inner IRPs'
  Status final_ = Status::SUCCESS;
};

// Runs `start(inner)` — the handle-based Ib<Verb>(al, in, out, inner) — for `call`, which
// it owns from here on. `caller` already has its current stack location
// (BeginDirectCall). Returns PENDING (the caller's IRP marked pending and completed later,
// when the last inner IRP completed), or the final status when the caller's IRP is
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
  (void)start(inner);
  int expected = ObjectCall::kStarting;
  if (call->phase_.compare_exchange_strong(expected, ObjectCall::kDetaching,
                                           std::memory_order_acq_rel)) {
    IoMarkIrpPending(caller);
    call->phase_.store(ObjectCall::kDetached, std::memory_order_release);
    call->Release();
    return Status::PENDING;
  }
  const Status status = call->final_;
  call->Release();
  return status;
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
