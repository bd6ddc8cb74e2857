#include "socket_util.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "softib/channel/protocol.h"

namespace softib::channel {

int SendFrame(int fd, const void* head, size_t head_size, const void* tail, size_t tail_size,
              std::span<const int> fds, bool blocking) {
  iovec iov[2] = {{const_cast<void*>(head), head_size}, {const_cast<void*>(tail), tail_size}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = tail_size ? 2 : 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerResponse)];
  if (!fds.empty()) {
    size_t bytes = sizeof(int) * fds.size();
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(bytes);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(bytes);
    std::memcpy(CMSG_DATA(c), fds.data(), bytes);
  }
  int flags = MSG_NOSIGNAL | (blocking ? 0 : MSG_DONTWAIT);
  for (;;) {
    if (sendmsg(fd, &msg, flags) >= 0) return 0;
    if (errno == EINTR) continue;
    return errno == EWOULDBLOCK ? EAGAIN : errno;
  }
}

bool TakeReceivedFds(const msghdr& msg, std::vector<int>* out) {
  bool any = false;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr;
       c = CMSG_NXTHDR(const_cast<msghdr*>(&msg), c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      any = true;
      if (out) {
        out->push_back(fd);
      } else {
        close(fd);
      }
    }
  }
  return any;
}

}  // namespace softib::channel
