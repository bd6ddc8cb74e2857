// DeviceIoControl and overlapped I/O for user processes, modelled on Win32. Declarations
// only; runtime/user implements them over the channel to the node's kernel.
#pragma once

#include <cstdint>

#include "softib/abi/abi_status.h"

namespace softib::user {

using Status = abi::Status;

// An open device file (the AL, or a CA's device after the open was redirected).
class DeviceFile;
using DeviceHandle = DeviceFile*;

// Signalled when an overlapped request completes (runtime/user).
class CompletionEvent;

// The state of one overlapped request. Zero it before use; it must stay valid (and
// unmoved) until the request completes.
struct Overlapped {
  Status Internal;                 // PENDING while in flight, then the final status
  uint32_t InternalHigh;           // bytes of output returned
  CompletionEvent* Event;          // optional: signalled on completion
  void* Runtime;                   // owned by the runtime while the request is in flight
};

// Sends IOCTL `code` to the device, METHOD_BUFFERED: the input is copied before the call
// returns (a caller's temporary input buffer is fine even for overlapped requests); up to
// `output_length` bytes of output are written to `output` (for an overlapped request, when
// it completes, so `output` must stay valid until then).
// Without `overlapped`: waits, sets *bytes_returned (when not null) and returns the
// request's status.
// With it: returns PENDING (the result comes through GetOverlappedResult or the event), or
// the final status when the request completed at once. A broken channel to the kernel is
// reported as a failure status chosen by the runtime.
Status DeviceIoControl(DeviceHandle device, uint32_t code, const void* input,
                       uint32_t input_length, void* output, uint32_t output_length,
                       uint32_t* bytes_returned, Overlapped* overlapped);

// The result of an overlapped request: its final status and output bytes. With `wait`
// false, returns PENDING while it is still in flight.
Status GetOverlappedResult(DeviceHandle device, Overlapped* overlapped, uint32_t* bytes_returned,
                           bool wait);

// Cancels `overlapped` (or, when null, every request this process has in flight on the
// device). The request still completes, with CANCELED or its normal result.
Status CancelIoEx(DeviceHandle device, Overlapped* overlapped);

}  // namespace softib::user
