// IRP allocation, IoCallDriver, IoCompleteRequest, buffered device control.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "irp_runtime.h"
#include "softib/kernel/io.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/verifier.h"

namespace softib::kernel {
namespace {

constexpr int8_t kMaxStackSize = 126;  // CurrentLocation (StackCount + 1) fits int8_t

// A small IRP (few stack locations, a small system buffer: every CI verb's) is one block:
// the IRP, its runtime, its stack and its system buffer, taken from and given back to a
// per-thread lookaside list (a freed block joins the freeing thread's list, bounded), so the
// AL's IRPs to the HCA driver cost no heap traffic in the steady state.
constexpr std::size_t kBlockAlign = 16;
constexpr std::size_t Align(std::size_t n) { return (n + kBlockAlign - 1) & ~(kBlockAlign - 1); }
constexpr std::size_t kSmallBlock = 2048;
constexpr std::size_t kLookasideDepth = 32;
constexpr std::size_t kRuntimeOffset = Align(sizeof(Irp));
constexpr std::size_t kStackOffset = kRuntimeOffset + Align(sizeof(IrpRuntime));

struct Lookaside {
  void* blocks[kLookasideDepth];
  std::size_t count = 0;
  ~Lookaside() {
    while (count > 0) ::operator delete (blocks[--count], std::align_val_t{kBlockAlign});
  }
};
thread_local Lookaside t_lookaside;

void* TakeSmallBlock() {
  Lookaside& l = t_lookaside;
  if (l.count > 0) return l.blocks[--l.count];
  return ::operator new (kSmallBlock, std::align_val_t{kBlockAlign});
}

void GiveSmallBlock(void* block) {
  Lookaside& l = t_lookaside;
  if (l.count < kLookasideDepth) {
    l.blocks[l.count++] = block;
    return;
  }
  ::operator delete (block, std::align_val_t{kBlockAlign});
}

std::size_t BufferOffset(int8_t stack_size) {
  return kStackOffset + Align(sizeof(IoStackLocation) * static_cast<std::size_t>(stack_size));
}

// One block for the IRP and `buffer` bytes of system buffer, or null when it would not fit.
Irp* AllocateSmallIrp(int8_t stack_size, std::size_t buffer) {
  if (BufferOffset(stack_size) + buffer > kSmallBlock) return nullptr;
  auto* block = static_cast<uint8_t*>(TakeSmallBlock());
  // The header and the system buffer that follows it zeroed at once (one memset per CI IRP,
  // not two: this is on every AL verb's path to the HCA driver).
  std::memset(block, 0, BufferOffset(stack_size) + buffer);
  auto* irp = reinterpret_cast<Irp*>(block);
  irp->StackCount = stack_size;
  irp->CurrentLocation = static_cast<int8_t>(stack_size + 1);
  irp->Stack = reinterpret_cast<IoStackLocation*>(block + kStackOffset);  // zeroed above
  auto* runtime = new (block + kRuntimeOffset) IrpRuntime{};
  runtime->pooled = true;
  if (buffer > 0) runtime->system_buffer = block + BufferOffset(stack_size);  // zeroed above
  irp->Runtime = runtime;
  irp->IoStatus.Status = Status::SUCCESS;
  return irp;
}

void FreeIrpMemory(Irp* irp) {
  IrpRuntime* runtime = RuntimeOf(irp);
  if (runtime->pooled) {
    runtime->~IrpRuntime();
    GiveSmallBlock(irp);
    return;
  }
  std::free(runtime->system_buffer);
  delete runtime;
  delete[] irp->Stack;
  ::operator delete(irp);
}

bool ShouldInvoke(uint8_t control, Irp* irp) {
  if (IoIsCancelled(irp) && (control & kSlInvokeOnCancel) != 0) return true;
  return (control &
          (irp->IoStatus.Status == Status::SUCCESS ? kSlInvokeOnSuccess : kSlInvokeOnError)) != 0;
}

// After the last completion routine: copy-out, synchronous waiter, I/O-manager-owned free.
void FinishCompletion(Irp* irp) {
  IrpRuntime* runtime = RuntimeOf(irp);
  if (runtime->owned_by_io_manager && irp->UserBuffer != nullptr &&
      irp->AssociatedIrp.SystemBuffer != nullptr) {
    const uint64_t bytes = std::min<uint64_t>(irp->IoStatus.Information, runtime->output_length);
    std::memcpy(irp->UserBuffer, irp->AssociatedIrp.SystemBuffer, bytes);
  }
  runtime->state = IrpRuntime::State::kDone;
  if (runtime->status_out != nullptr) *runtime->status_out = irp->IoStatus;
  KEvent* done = runtime->done;
  if (runtime->owned_by_io_manager) FreeIrpMemory(irp);
  if (done != nullptr) done->Set();
}

}  // namespace

Irp* IoAllocateIrp(int8_t stack_size) {
  if (stack_size < 1 || stack_size > kMaxStackSize) {
    VerifierFail("IoAllocateIrp: stack size %d outside 1..%d", stack_size, kMaxStackSize);
  }
  auto* irp = static_cast<Irp*>(::operator new(sizeof(Irp)));
  std::memset(static_cast<void*>(irp), 0, sizeof(Irp));
  irp->StackCount = stack_size;
  irp->CurrentLocation = static_cast<int8_t>(stack_size + 1);
  irp->Stack = new IoStackLocation[stack_size]{};
  irp->Runtime = new IrpRuntime{};
  irp->IoStatus.Status = Status::SUCCESS;
  return irp;
}

void IoFreeIrp(Irp* irp) {
  if (irp == nullptr) return;
  if (std::atomic_ref<DriverCancel>(irp->CancelRoutine).load() != nullptr) {
    VerifierFail("IoFreeIrp: IRP %p still has a cancel routine (a driver still queues it)", irp);
  }
  FreeIrpMemory(irp);
}

void IoReuseIrp(Irp* irp, Status status) {
  IrpRuntime* runtime = RuntimeOf(irp);
  if (runtime->owned_by_io_manager) {
    VerifierFail("IoReuseIrp: IRP %p belongs to the I/O manager", irp);
  }
  if (runtime->state == IrpRuntime::State::kCompleting ||
      (runtime->state == IrpRuntime::State::kActive && irp->CurrentLocation <= irp->StackCount)) {
    VerifierFail("IoReuseIrp: IRP %p is still owned by a driver", irp);
  }
  if (std::atomic_ref<DriverCancel>(irp->CancelRoutine).load() != nullptr) {
    VerifierFail("IoReuseIrp: IRP %p still has a cancel routine", irp);
  }
  runtime->state = IrpRuntime::State::kActive;
  runtime->done = nullptr;
  runtime->status_out = nullptr;
  irp->IoStatus = {status, 0};
  irp->PendingReturned = false;
  std::atomic_ref<bool>(irp->Cancel).store(false);
  irp->CurrentLocation = static_cast<int8_t>(irp->StackCount + 1);
  for (int8_t i = 0; i < irp->StackCount; ++i) irp->Stack[i] = IoStackLocation{};
}

Status IoCallDriver(DeviceObject* device, Irp* irp) {
  VerifyIrqlAtMost(Irql::kDispatch, "IoCallDriver");
  IrpRuntime* runtime = RuntimeOf(irp);
  if (runtime->state == IrpRuntime::State::kDone) {
    VerifierFail("IoCallDriver: IRP %p was already completed", irp);
  }
  if (irp->CurrentLocation <= 1) {
    VerifierFail("IoCallDriver: IRP %p has no stack location left for device %p (StackCount %d)",
                 irp, device, irp->StackCount);
  }
  // The device and the devices it passes the IRP to need device->StackSize locations from
  // here on (the one IoCallDriver is about to make current included). An IRP sized for a
  // smaller stack would run out further down, in a driver that did nothing wrong: stop at
  // the send that is short instead.
  if (irp->CurrentLocation - 1 < device->StackSize) {
    VerifierFail("IoCallDriver: IRP %p has %d stack locations left but device %p of %s needs %d",
                 irp, irp->CurrentLocation - 1, device, device->DriverObject->DriverName,
                 device->StackSize);
  }
  // The first send records the node. Only the IRP's owner sends it (one thread at a time),
  // cancellers only read: a load and a store, not a locked compare-exchange per IRP.
  if (runtime->node.load(std::memory_order_relaxed) == nullptr) {
    runtime->node.store(IoGetDeviceNode(device), std::memory_order_release);
  }
  --irp->CurrentLocation;
  IoStackLocation* location = IoGetCurrentIrpStackLocation(irp);
  location->DeviceObject = device;
  const auto major = static_cast<uint8_t>(location->MajorFunction);
  DriverDispatch dispatch =
      major < kIrpMajorCount ? device->DriverObject->MajorFunction[major] : nullptr;
  if (dispatch == nullptr) {
    // IopInvalidDeviceRequest: the driver does not handle this major function.
    irp->IoStatus.Status = Status::UNSUPPORTED;
    irp->IoStatus.Information = 0;
    IoCompleteRequest(irp);
    return Status::UNSUPPORTED;
  }
  const Irql entry = CurrentIrql();
  const Status status = dispatch(device, irp);
  if (CurrentIrql() != entry) {
    VerifierFail("dispatch routine of %s for major 0x%x returned at %s (entered at %s)",
                 device->DriverObject->DriverName, major, IrqlName(CurrentIrql()), IrqlName(entry));
  }
  return status;
}

void IoCompleteRequest(Irp* irp, int8_t /*priority_boost*/) {
  VerifyIrqlAtMost(Irql::kDispatch, "IoCompleteRequest");
  IrpRuntime* runtime = RuntimeOf(irp);
  if (runtime->state != IrpRuntime::State::kActive) {
    VerifierFail("IoCompleteRequest: IRP %p completed twice", irp);
  }
  if (irp->IoStatus.Status == Status::PENDING) {
    VerifierFail("IoCompleteRequest: IRP %p completed with status PENDING", irp);
  }
  if (std::atomic_ref<DriverCancel>(irp->CancelRoutine).load() != nullptr) {
    VerifierFail("IoCompleteRequest: IRP %p completed with its cancel routine still set", irp);
  }
  if (irp->CurrentLocation > irp->StackCount) {
    VerifierFail("IoCompleteRequest: IRP %p has no current stack location (never sent)", irp);
  }
  runtime->state = IrpRuntime::State::kCompleting;
  while (irp->CurrentLocation <= irp->StackCount) {
    IoStackLocation* location = IoGetCurrentIrpStackLocation(irp);
    irp->PendingReturned = (location->Control & kSlPendingReturned) != 0;
    const IoCompletionRoutine routine = location->CompletionRoutine;
    void* const context = location->Context;
    const uint8_t control = location->Control;
    // Cleared so that a routine never runs twice when the IRP is sent again.
    location->CompletionRoutine = nullptr;
    location->Context = nullptr;
    location->Control = 0;
    ++irp->CurrentLocation;
    const bool has_upper = irp->CurrentLocation <= irp->StackCount;
    if (routine != nullptr && ShouldInvoke(control, irp)) {
      DeviceObject* device = has_upper ? IoGetCurrentIrpStackLocation(irp)->DeviceObject : nullptr;
      const Irql entry = CurrentIrql();
      // The routine may claim the IRP back and complete it again (or free it).
      runtime->state = IrpRuntime::State::kActive;
      const CompletionAction action = routine(device, irp, context);
      if (CurrentIrql() != entry) {
        VerifierFail("completion routine %p returned at %s (entered at %s)",
                     reinterpret_cast<void*>(routine), IrqlName(CurrentIrql()), IrqlName(entry));
      }
      if (action == CompletionAction::kMoreProcessingRequired) {
        // The routine's owner has the IRP again (it may have freed it: touch nothing).
        return;
      }
      runtime->state = IrpRuntime::State::kCompleting;
    } else if (irp->PendingReturned && has_upper) {
      IoMarkIrpPending(irp);
    }
  }
  FinishCompletion(irp);
}

Irp* IoBuildDeviceIoControlRequest(uint32_t io_control_code, DeviceObject* device,
                                   const void* input, uint32_t input_length, void* output,
                                   uint32_t output_length, bool internal_device_control) {
  const uint32_t size = std::max(input_length, output_length);
  Irp* irp = AllocateSmallIrp(device->StackSize, size);
  const bool small = irp != nullptr;
  if (!small) irp = IoAllocateIrp(device->StackSize);
  IrpRuntime* runtime = RuntimeOf(irp);
  runtime->owned_by_io_manager = true;
  runtime->output_length = output_length;
  if (small) {
    if (input != nullptr && input_length > 0) {
      std::memcpy(runtime->system_buffer, input, input_length);
    }
  } else if (size > 0) {
    runtime->system_buffer = std::calloc(1, size);  // malloc alignment: >= 16 bytes
    if (runtime->system_buffer == nullptr) {
      FreeIrpMemory(irp);
      return nullptr;
    }
    if (input != nullptr) std::memcpy(runtime->system_buffer, input, input_length);
  }
  irp->AssociatedIrp.SystemBuffer = runtime->system_buffer;
  irp->UserBuffer = output;
  irp->RequestorMode = ProcessorMode::kKernelMode;
  IoStackLocation* next = IoGetNextIrpStackLocation(irp);
  next->MajorFunction =
      internal_device_control ? IrpMajor::kInternalDeviceControl : IrpMajor::kDeviceControl;
  next->Parameters.DeviceIoControl.IoControlCode = io_control_code;
  next->Parameters.DeviceIoControl.InputBufferLength = input_length;
  next->Parameters.DeviceIoControl.OutputBufferLength = output_length;
  return irp;
}

Status IoCallDriverAndWait(DeviceObject* device, Irp* irp) {
  VerifyBlockingAllowed("IoCallDriverAndWait");
  KEvent done(EventType::kNotification);
  IoStatusBlock final_status{};
  RuntimeOf(irp)->done = &done;
  RuntimeOf(irp)->status_out = &final_status;
  IoCallDriver(device, irp);
  KeWaitForSingleObject(&done);
  return final_status.Status;
}

Status IoDeviceIoControlFile(FileObject* file, uint32_t io_control_code, const void* input,
                             uint32_t input_length, void* output, uint32_t output_length,
                             ProcessorMode mode, uint64_t* information) {
  VerifyBlockingAllowed("IoDeviceIoControlFile");
  Irp* irp = IoBuildDeviceIoControlRequest(io_control_code, file->DeviceObject, input, input_length,
                                           output, output_length, false);
  if (irp == nullptr) return Status::INSUFFICIENT_MEMORY;
  irp->RequestorMode = mode;
  IoGetNextIrpStackLocation(irp)->FileObject = file;
  KEvent done(EventType::kNotification);
  IoStatusBlock final_status{};
  RuntimeOf(irp)->done = &done;
  RuntimeOf(irp)->status_out = &final_status;
  IoCallDriver(file->DeviceObject, irp);
  KeWaitForSingleObject(&done);
  if (information != nullptr) *information = final_status.Information;
  return final_status.Status;
}

}  // namespace softib::kernel
