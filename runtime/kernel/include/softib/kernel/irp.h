// I/O request packets, modelled on the WDM IRP: stack locations, completion routines,
// METHOD_BUFFERED system buffer, RequestorMode, IoStatus. The field names follow WDM so
// that driver code reads like driver code. Allocation, IoCallDriver and completion are in
// io.h (implemented by runtime/kernel).
#pragma once

#include <cstdint>

#include "softib/kernel/irql.h"
#include "softib/kernel/status.h"
#include "softib/kernel/verifier.h"

namespace softib::kernel {

struct DeviceObject;
struct FileObject;
struct Irp;

// Major function codes (WDM IRP_MJ_* values).
enum class IrpMajor : uint8_t {
  kCreate = 0x00,
  kClose = 0x02,
  kDeviceControl = 0x0e,
  kInternalDeviceControl = 0x0f,
  kCleanup = 0x12,
  kPnp = 0x1b,
};
inline constexpr int kIrpMajorCount = 0x1c;

// Minor function codes of IrpMajor::kPnp (WDM IRP_MN_* values).
inline constexpr uint8_t kIrpMinorRemoveDevice = 0x02;  // IRP_MN_REMOVE_DEVICE

// Who issued the request: a user process (through the channel) or kernel code.
enum class ProcessorMode : uint8_t { kKernelMode = 0, kUserMode = 1 };

struct IoStatusBlock {
  ::softib::kernel::Status Status;
  uint64_t Information;  // bytes of output for IOCTLs
};

// What a completion routine tells the I/O manager (WDM: STATUS_CONTINUE_COMPLETION /
// STATUS_MORE_PROCESSING_REQUIRED, which here are not verb statuses).
enum class CompletionAction : uint8_t { kContinueCompletion, kMoreProcessingRequired };

using IoCompletionRoutine = CompletionAction (*)(DeviceObject* device, Irp* irp, void* context);
using DriverCancel = void (*)(DeviceObject* device, Irp* irp);

// IoStackLocation::Control bits.
inline constexpr uint8_t kSlPendingReturned = 0x01;
inline constexpr uint8_t kSlInvokeOnCancel = 0x20;
inline constexpr uint8_t kSlInvokeOnSuccess = 0x40;
inline constexpr uint8_t kSlInvokeOnError = 0x80;

struct IoStackLocation {
  IrpMajor MajorFunction;
  uint8_t MinorFunction;
  uint8_t Flags;
  uint8_t Control;
  struct {
    // IRP_MJ_DEVICE_CONTROL and IRP_MJ_INTERNAL_DEVICE_CONTROL.
    struct {
      uint32_t OutputBufferLength;
      uint32_t InputBufferLength;
      uint32_t IoControlCode;
    } DeviceIoControl;
  } Parameters;
  ::softib::kernel::DeviceObject* DeviceObject;
  ::softib::kernel::FileObject* FileObject;
  IoCompletionRoutine CompletionRoutine;
  void* Context;
};

struct Irp {
  IoStatusBlock IoStatus;
  ProcessorMode RequestorMode;
  bool PendingReturned;
  bool Cancel;  // set by IoCancelIrp; read it with IoIsCancelled (atomic)
  int8_t StackCount;
  // Stack[CurrentLocation - 1] is the current location. IoAllocateIrp sets it to
  // StackCount + 1 (no current location yet); IoCallDriver decrements it.
  int8_t CurrentLocation;
  struct {
    // METHOD_BUFFERED: max(input, output) bytes, input copied in on entry; the output is
    // written here and IoStatus.Information bytes are copied out on completion.
    void* SystemBuffer;
  } AssociatedIrp;
  void* UserBuffer;  // where a kernel-built IRP's output is copied on completion
  // Read and written atomically (IoSetCancelRoutine, IoCancelIrp, IoIsCancelled): a
  // canceller races with the driver that owns the IRP.
  DriverCancel CancelRoutine;
  Irql CancelIrql;         // the IRQL to restore when a cancel routine releases the cancel lock
  void* DriverContext[4];  // for the driver that currently owns the IRP (e.g. its queue)
  IoStackLocation* Stack;  // StackCount entries
  void* Runtime;           // owned by the I/O manager
};

inline IoStackLocation* IoGetCurrentIrpStackLocation(Irp* irp) {
  return &irp->Stack[irp->CurrentLocation - 1];
}

// The location of the driver the IRP goes to next. An IRP whose current location is its
// first has none: the sender sized it for fewer devices than it passes through (a device
// that forwards must have a StackSize of at least its target's plus one), and writing there
// would corrupt memory, so the verifier stops.
inline IoStackLocation* IoGetNextIrpStackLocation(Irp* irp) {
  if (irp->CurrentLocation < 2) {
    VerifierFail(
        "IoGetNextIrpStackLocation: IRP %p has no next stack location (StackCount %d): "
        "a forwarding device's StackSize is too small",
        static_cast<void*>(irp), irp->StackCount);
  }
  return &irp->Stack[irp->CurrentLocation - 2];
}

// Registers `routine` to run when the driver below completes the IRP.
inline void IoSetCompletionRoutine(Irp* irp, IoCompletionRoutine routine, void* context,
                                   bool on_success, bool on_error, bool on_cancel) {
  IoStackLocation* next = IoGetNextIrpStackLocation(irp);
  next->CompletionRoutine = routine;
  next->Context = context;
  next->Control = 0;
  if (on_success) next->Control |= kSlInvokeOnSuccess;
  if (on_error) next->Control |= kSlInvokeOnError;
  if (on_cancel) next->Control |= kSlInvokeOnCancel;
}

// A dispatch routine that will return PENDING marks the IRP first.
inline void IoMarkIrpPending(Irp* irp) {
  IoGetCurrentIrpStackLocation(irp)->Control |= kSlPendingReturned;
}

inline void IoCopyCurrentIrpStackLocationToNext(Irp* irp) {
  IoStackLocation* next = IoGetNextIrpStackLocation(irp);
  *next = *IoGetCurrentIrpStackLocation(irp);
  next->CompletionRoutine = nullptr;
  next->Context = nullptr;
  next->Control = 0;
}

inline void IoSkipCurrentIrpStackLocation(Irp* irp) { ++irp->CurrentLocation; }

}  // namespace softib::kernel
