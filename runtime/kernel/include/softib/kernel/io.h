// The I/O manager: IRP allocation, sending and completion. Declarations only; implemented
// by runtime/kernel.
#pragma once

#include <cstdint>

#include "softib/kernel/device.h"
#include "softib/kernel/irp.h"
#include "softib/kernel/status.h"

namespace softib::kernel {

// An IRP with `stack_size` stack locations and no current location.
Irp* IoAllocateIrp(int8_t stack_size);
void IoFreeIrp(Irp* irp);

// Moves to the next stack location and calls the target driver's dispatch routine for its
// MajorFunction. Returns what the dispatch routine returned (PENDING when it pended).
Status IoCallDriver(DeviceObject* device, Irp* irp);

// Runs the completion routines up the stack, copies METHOD_BUFFERED output to UserBuffer
// for IRPs built by IoBuildDeviceIoControlRequest, and frees such IRPs unless a routine
// returned kMoreProcessingRequired (the routine's owner then calls IoFreeIrp).
void IoCompleteRequest(Irp* irp, int8_t priority_boost = 0);

// A METHOD_BUFFERED (internal) device-control IRP for `device`: the system buffer holds
// max(input_length, output_length) bytes, zeroed, with `input` copied in when not null (a
// caller passing null fills AssociatedIrp.SystemBuffer itself). The next stack location
// is set up with the code and lengths; RequestorMode is kernel.
Irp* IoBuildDeviceIoControlRequest(uint32_t io_control_code, DeviceObject* device,
                                   const void* input, uint32_t input_length, void* output,
                                   uint32_t output_length, bool internal_device_control);

// IoCallDriver, then waits (PASSIVE level only) until the IRP completes; returns its final
// IoStatus.Status.
Status IoCallDriverAndWait(DeviceObject* device, Irp* irp);

}  // namespace softib::kernel
