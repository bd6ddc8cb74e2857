// Small helpers shared by the generated dispatch, direct-call and IRP-builder code.
#pragma once

#include <cstdint>
#include <cstring>
#include <new>

#include "softib/kernel/call_context.h"
#include "softib/kernel/io.h"
#include "softib/kernel/irp.h"
#include "softib/kernel/status.h"

namespace softib::kernel {

// Resolves one handle parameter. A zero handle is allowed only when `optional`; every
// failure is reported as `invalid_status` (the verb's status for that object type).
inline Status ResolveHandle(const CallContext& ctx, uint64_t handle, abi::ObjectType type,
                            HandleAccess access, bool optional, Status invalid_status,
                            ObjectRef* out) {
  if (handle == 0) return optional ? Status::SUCCESS : invalid_status;
  if (ctx.handles == nullptr) return invalid_status;
  return ctx.handles->Lookup(handle, type, access, out) == Status::SUCCESS ? Status::SUCCESS
                                                                           : invalid_status;
}

// Sets the IRP's final status and output length and completes it.
inline Status CompleteVerbIrp(Irp* irp, Status status, uint64_t information) {
  irp->IoStatus.Status = status;
  irp->IoStatus.Information = information;
  IoCompleteRequest(irp);
  return status;
}

// Whether an IRP's RequestorMode and its file object agree, for requests that reach a
// driver's command interface on behalf of a requestor (idl/ci.idl): a user-mode request
// needs a user process's open (whose memory it names), and a kernel-mode request may not
// carry a user process's open (a "forged" request: the memory would be taken for the
// kernel's). INVALID_PERMISSION otherwise.
inline Status CheckRequestorOfFile(ProcessorMode mode, const FileObject* file) {
  if (mode == ProcessorMode::kUserMode) {
    if (file == nullptr || file->RequestorMode != ProcessorMode::kUserMode ||
        file->ProcessId == 0) {
      return Status::INVALID_PERMISSION;
    }
    return Status::SUCCESS;
  }
  if (file != nullptr && file->RequestorMode == ProcessorMode::kUserMode) {
    return Status::INVALID_PERMISSION;
  }
  return Status::SUCCESS;
}

// The METHOD_BUFFERED output of a completed IOCTL IRP as a completion routine sees it (the
// copy to the builder's output buffer happens after the routines): null when the IRP
// returned fewer than sizeof(T) bytes (a failure returns none).
template <typename T>
const T* IrpOutput(const Irp* irp) {
  if (irp->IoStatus.Information < sizeof(T)) return nullptr;
  return static_cast<const T*>(irp->AssociatedIrp.SystemBuffer);
}

// The METHOD_BUFFERED view of a device-control IRP.
struct BufferedIoctl {
  explicit BufferedIoctl(Irp* irp)
      : irp(irp),
        buffer(static_cast<uint8_t*>(irp->AssociatedIrp.SystemBuffer)),
        in_length(IoGetCurrentIrpStackLocation(irp)->Parameters.DeviceIoControl.InputBufferLength),
        out_length(
            IoGetCurrentIrpStackLocation(irp)->Parameters.DeviceIoControl.OutputBufferLength) {}

  // A validation failure: no output.
  Status Fail(Status status) const { return CompleteVerbIrp(irp, status, 0); }

  // Copies the fixed input out of the system buffer, which the output will overwrite.
  template <typename T>
  void ReadInput(T* value) const {
    std::memcpy(value, buffer, sizeof(T));
  }

  // The output structure at the start of the system buffer, zeroed. The system buffer is
  // allocated with at least 8-byte alignment.
  template <typename T>
  T* Output() const {
    return new (buffer) T{};
  }

  Irp* irp;
  uint8_t* buffer;
  uint32_t in_length;
  uint32_t out_length;
};

// Starts a direct call that the caller gave an IRP: the IRP (allocated by the caller, with
// its completion routine set by IoSetCompletionRoutine) gets its current stack location.
inline void BeginDirectCall(Irp* irp) {
  if (irp != nullptr) --irp->CurrentLocation;
}

// Ends a direct call: without an IRP the status is the result; with one, a result that is
// not PENDING also completes the IRP (a handler that pends completes the IRP itself, with
// CompleteVerbIrp). `information` is the output length (0 after a validation failure).
inline Status FinishDirectCall(Irp* irp, Status status, uint64_t information) {
  if (irp == nullptr || status == Status::PENDING) return status;
  return CompleteVerbIrp(irp, status, information);
}

}  // namespace softib::kernel
