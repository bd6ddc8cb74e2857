// sendmsg/recvmsg helpers shared by both halves of the channel.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <span>
#include <vector>

namespace softib::channel {

// Sends one datagram (head + tail) with `fds` as SCM_RIGHTS, without blocking and without
// SIGPIPE. Returns 0, or the errno (EAGAIN when the peer's queue is full).
int SendFrame(int fd, const void* head, size_t head_size, const void* tail, size_t tail_size,
              std::span<const int> fds, bool blocking = false);

// The fds an SCM_RIGHTS message carried, appended to `out` (nullptr: closed at once).
// Returns true when there were any.
bool TakeReceivedFds(const msghdr& msg, std::vector<int>* out);
inline bool CloseReceivedFds(const msghdr& msg) { return TakeReceivedFds(msg, nullptr); }

}  // namespace softib::channel
