// DeviceIoControl and overlapped I/O for user processes, modelled on Win32, over the
// channel to the node's kernel (runtime/channel/PROTOCOL.md). Implemented in
// runtime/user/src/device_io.cc.
#pragma once

#include <cstdint>

#include "softib/abi/abi_status.h"

namespace softib::user {

using Status = abi::Status;

// An open device file (the AL, or a CA's device after the open was redirected).
class DeviceFile;
using DeviceHandle = DeviceFile*;

// Signalled when an overlapped request completes (softib/user/completion_event.h).
class CompletionEvent;

// Opens the device whose channel socket is at `path`: NOT_FOUND when nothing listens
// there, INVALID_PARAMETER for a path too long for a socket address. A handle may be used
// by several threads at once; it is not inherited across fork.
Status OpenDevice(const char* path, DeviceHandle* device);

// Closes the file: requests still in flight are cancelled (their overlapped results
// arrive as usual, before this returns) and the kernel's cleanup of the file has run when
// it returns. The handle is invalid afterwards.
Status CloseDevice(DeviceHandle device);

// The status every request gets once the channel to the kernel is broken (the kernel
// went away, or broke the protocol).
inline constexpr Status kChannelBroken = Status::ERROR;

// The state of one overlapped request. Zero it before use; it must stay valid (and
// unmoved) until the request completes.
struct Overlapped {
  Status Internal;         // PENDING while in flight, then the final status
  uint32_t InternalHigh;   // bytes of output returned
  CompletionEvent* Event;  // optional: signalled on completion
  void* Runtime;           // owned by the runtime while the request is in flight
};

// Sends IOCTL `code` to the device, METHOD_BUFFERED: the input is copied before the call
// returns (a caller's temporary input buffer is fine even for overlapped requests); up to
// `output_length` bytes of output are written to `output` (for an overlapped request, when
// it completes, so `output` must stay valid until then).
// Without `overlapped`: waits, sets *bytes_returned (when not null) and returns the
// request's status.
// With it: returns PENDING (the result comes through GetOverlappedResult or the event), or
// a failure status when the request could not be sent (also stored in Internal; the event
// is then not signalled). A broken channel to the kernel is reported as kChannelBroken.
// File descriptors the kernel sends with an answer are closed (see DeviceIoControlWithFds).
Status DeviceIoControl(DeviceHandle device, uint32_t code, const void* input, uint32_t input_length,
                       void* output, uint32_t output_length, uint32_t* bytes_returned,
                       Overlapped* overlapped);

// The least output a verb's answer carries (the generated proxies state it from the IDL):
// its output structure and, when that ends in a variable array and the answer is SUCCESS,
// the elements its count field names, as many as the caller's output buffer holds (a
// failure's count may name what the caller would need instead). The count is read from
// the answer (host byte order, like the whole structure).
struct ReplyShape {
  uint32_t fixed_bytes = 0;   // the output structure
  uint32_t elem_bytes = 0;    // one array element; 0: no variable array
  uint32_t count_offset = 0;  // of the count field in the output structure
  uint32_t count_bytes = 0;   // its width: 1, 2, 4 or 8
};

// The status of an answer shorter than its ReplyShape: with any status, when it carries
// some output; with SUCCESS also when it carries none (a failure may carry none: a
// request the kernel refused before its handler ran).
inline constexpr Status kMalformedReply = Status::MALFORMED_REPLY;

// DeviceIoControl that checks the answer against `shape` as it completes: a short answer
// completes with kMalformedReply instead of its own status (the synchronous return, or
// Internal and GetOverlappedResult for an overlapped request), bytes returned as received.
Status DeviceIoControlChecked(DeviceHandle device, uint32_t code, const void* input,
                              uint32_t input_length, void* output, uint32_t output_length,
                              const ReplyShape& shape, uint32_t* bytes_returned,
                              Overlapped* overlapped);

// The result of an overlapped request: its final status and output bytes. With `wait`
// false, returns PENDING while it is still in flight.
Status GetOverlappedResult(DeviceHandle device, Overlapped* overlapped, uint32_t* bytes_returned,
                           bool wait);

// DeviceIoControl (synchronous) that also receives the file descriptors the kernel sent
// with its answer (shared memory of rings): up to `max_fds` go to `fds`, the caller owns
// them; *fd_count (when not null) gets how many; extra ones are closed.
Status DeviceIoControlWithFds(DeviceHandle device, uint32_t code, const void* input,
                              uint32_t input_length, void* output, uint32_t output_length,
                              uint32_t* bytes_returned, int* fds, uint32_t max_fds,
                              uint32_t* fd_count);

// Cancels `overlapped` (or, when null, every request this process has in flight on the
// device, synchronous ones included). The request still completes, with CANCELED or its
// normal result. NOT_FOUND when nothing matching is in flight.
Status CancelIoEx(DeviceHandle device, Overlapped* overlapped);

}  // namespace softib::user
