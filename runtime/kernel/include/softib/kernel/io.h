// The I/O manager: IRP allocation, sending and completion, cancellation, synchronous
// device control. Implemented by runtime/kernel.
//
// Who frees an IRP: one built by IoBuildDeviceIoControlRequest belongs to the I/O manager,
// which frees it after completion unless a completion routine returned
// kMoreProcessingRequired (the routine's owner then calls IoFreeIrp). One from
// IoAllocateIrp always belongs to its allocator, who frees it after completion (typically
// in its own completion routine, returning kMoreProcessingRequired).
#pragma once

#include <cstdint>

#include "softib/kernel/device.h"
#include "softib/kernel/irp.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/spin_lock.h"
#include "softib/kernel/status.h"

namespace softib::kernel {

// An IRP with `stack_size` stack locations and no current location.
Irp* IoAllocateIrp(int8_t stack_size);
void IoFreeIrp(Irp* irp);

// Makes a completed IRP from IoAllocateIrp sendable again (IoReuseIrp): no current location,
// IoStatus.Status = `status`, not cancelled, no pending flag.
void IoReuseIrp(Irp* irp, Status status);

// Moves to the next stack location and calls the target driver's dispatch routine for its
// MajorFunction. Returns what the dispatch routine returned (PENDING when it pended).
Status IoCallDriver(DeviceObject* device, Irp* irp);

// Runs the completion routines up the stack, copies METHOD_BUFFERED output to UserBuffer
// for IRPs built by IoBuildDeviceIoControlRequest, and frees such IRPs unless a routine
// returned kMoreProcessingRequired (the routine's owner then calls IoFreeIrp).
//
// WDM rules kept: a routine runs when its SL_INVOKE_ON_* bit matches (success, error, or
// Irp->Cancel); the device passed is the one of the routine's own stack location (null for
// the originator's); without a routine, PendingReturned propagates up by itself; a routine
// that lets completion continue must itself call IoMarkIrpPending when PendingReturned.
// Output is copied for every status (IoStatus.Information bytes, at most the output
// length): verbs return outputs with failure statuses too.
void IoCompleteRequest(Irp* irp, int8_t priority_boost = 0);

// A METHOD_BUFFERED (internal) device-control IRP for `device`: the system buffer holds
// max(input_length, output_length) bytes, zeroed, with `input` copied in when not null (a
// caller passing null fills AssociatedIrp.SystemBuffer itself). The next stack location
// is set up with the code and lengths; RequestorMode is kernel.
Irp* IoBuildDeviceIoControlRequest(uint32_t io_control_code, DeviceObject* device,
                                   const void* input, uint32_t input_length, void* output,
                                   uint32_t output_length, bool internal_device_control);

// IoCallDriver, then waits (PASSIVE level only) until the IRP completes; returns its final
// IoStatus.Status. A completion routine of the caller must not claim the IRP back.
Status IoCallDriverAndWait(DeviceObject* device, Irp* irp);

// Synchronous METHOD_BUFFERED device control on an open file, as a user process's
// DeviceIoControl arrives: the IRP carries `file` and `mode`; *information gets the output
// length. PASSIVE only.
Status IoDeviceIoControlFile(FileObject* file, uint32_t io_control_code, const void* input,
                             uint32_t input_length, void* output, uint32_t output_length,
                             ProcessorMode mode, uint64_t* information);

// ---- Cancellation ----
// IoCancelIrp takes the node's cancel spin lock, sets Irp->Cancel and, when a cancel
// routine is set, clears it and calls it at DISPATCH with the lock held; the routine must
// release it with IoReleaseCancelSpinLock(node, irp->CancelIrql) (verifier-checked).

// Sets (or clears, with null) the cancel routine; returns the previous one. A driver that
// gets null back when clearing lost the race: the cancel routine owns the IRP.
DriverCancel IoSetCancelRoutine(Irp* irp, DriverCancel routine);

// True once IoCancelIrp was called on the IRP.
bool IoIsCancelled(Irp* irp);

// Requests cancellation; true when a cancel routine was called.
bool IoCancelIrp(Irp* irp);

// The node's cancel spin lock (the IRP's node is its first target device's).
Irql IoAcquireCancelSpinLock(Node* node);
void IoReleaseCancelSpinLock(Node* node, Irql previous);

// The node an IRP was sent on (null before the first IoCallDriver).
Node* IoGetIrpNode(Irp* irp);

// Binds an IRP that reached its driver without IoCallDriver (a direct call's IRP) to
// `node`, so that IoCancelIrp can take that node's cancel lock. No-op when already bound.
void IoSetIrpNode(Irp* irp, Node* node);

// A cancel-safe queue of pending IRPs (IoCsq-like): insert marks the IRP pending and makes
// it cancellable; whoever wins between Remove and IoCancelIrp completes it, exactly once.
class CancelSafeQueue {
 public:
  // With a node, IRPs that never went through IoCallDriver are bound to it on insertion.
  explicit CancelSafeQueue(Node* node = nullptr) : node_(node) {}
  ~CancelSafeQueue();  // the queue must be empty
  CancelSafeQueue(const CancelSafeQueue&) = delete;
  CancelSafeQueue& operator=(const CancelSafeQueue&) = delete;

  // Pends `irp` (IoMarkIrpPending + cancel routine) and returns PENDING; an IRP that is
  // already cancelled is completed CANCELED instead, returning CANCELED.
  Status Insert(Irp* irp);
  // The oldest IRP no canceller has claimed (its cancel routine cleared), or null.
  Irp* Remove();
  bool empty();

 private:
  static void CancelRoutine(DeviceObject* device, Irp* irp);
  void Unlink(Irp* irp);  // lock_ held

  // IRPs are linked through DriverContext[1] (previous) and [2] (next); DriverContext[0]
  // points back at the queue for the cancel routine.
  Node* const node_;
  KSpinLock lock_;
  Irp* head_ = nullptr;
  Irp* tail_ = nullptr;
};

}  // namespace softib::kernel
