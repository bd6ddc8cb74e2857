// File descriptors that ride with the answer to a user process's IOCTL (the memfds of
// speed-path rings, runtime/channel/PROTOCOL.md: SCM_RIGHTS, at most kMaxReplyFds).
//
// A driver completing a user-mode IOCTL that hands out shared memory (MapCqRing,
// MapQpRings, MapSrqRing) attaches the descriptors to the IRP before IoCompleteRequest;
// the bridge that built the IRP sends them with the answer. Kept apart from the bridge's
// sink so that drivers can link it without the channel.
#pragma once

#include <cstddef>
#include <span>

namespace softib::kernel {
struct Irp;
}

namespace softib::bridge {

inline constexpr std::size_t kMaxReplyFds = 8;

// Duplicates `fds` (the driver keeps its own) for the answer to `irp`. Callable at any
// IRQL (a short internal lock, no allocation beyond the IRP's list), until the IRP is
// completed. False, with nothing kept, when `irp` is not a pending IRP of a user process's
// file (a kernel client's IRP has nowhere to send descriptors), when the IRP would carry
// more than kMaxReplyFds, or when a descriptor cannot be duplicated.
bool AttachReplyFds(kernel::Irp* irp, std::span<const int> fds);

// Bridge side: an IRP whose answer may carry descriptors, from IoCallDriver until its
// completion routine, which takes them with TakeReplyFds (the caller then owns them).
void RegisterReplyIrp(const kernel::Irp* irp);
void TakeReplyFds(const kernel::Irp* irp, int* fds, std::size_t* count);  // fds: kMaxReplyFds

}  // namespace softib::bridge
