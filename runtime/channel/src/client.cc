#include "softib/channel/client.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "socket_util.h"

namespace softib::channel {

std::unique_ptr<ClientChannel> ClientChannel::Connect(const std::string& path, int* error) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) {
    *error = ENAMETOOLONG;
    return nullptr;
  }
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = errno;
    return nullptr;
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int r;
  do {
    r = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  } while (r != 0 && errno == EINTR);
  if (r != 0) {
    *error = errno;
    close(fd);
    return nullptr;
  }
  return std::unique_ptr<ClientChannel>(new ClientChannel(fd));
}

// One byte over the maximum, so that an oversized frame shows as truncated.
ClientChannel::ClientChannel(int fd) : fd_(fd), buffer_(kMaxResponseFrameBytes + 1) {}

ClientChannel::~ClientChannel() { close(fd_); }

int ClientChannel::SendRequest(const RequestHeader& header, const void* input) {
  return SendFrame(fd_, &header, sizeof header, input, header.input_length, {}, true);
}

namespace {
RequestHeader MakeRequest(FrameKind kind, uint64_t request_id) {
  RequestHeader h{};
  h.magic = kFrameMagic;
  h.version = kProtocolVersion;
  h.kind = static_cast<uint16_t>(kind);
  h.request_id = request_id;
  return h;
}
}  // namespace

int ClientChannel::SendIoctl(uint64_t request_id, uint32_t ioctl_code, const void* input,
                             uint32_t input_length, uint32_t output_length) {
  RequestHeader h = MakeRequest(FrameKind::kIoctl, request_id);
  h.ioctl_code = ioctl_code;
  h.input_length = input_length;
  h.output_length = output_length;
  return SendRequest(h, input);
}

int ClientChannel::SendCancel(uint64_t request_id, bool all) {
  RequestHeader h = MakeRequest(FrameKind::kCancel, request_id);
  h.flags = all ? kCancelAll : 0;
  return SendRequest(h, nullptr);
}

int ClientChannel::SendClose(uint64_t request_id) {
  return SendRequest(MakeRequest(FrameKind::kClose, request_id), nullptr);
}

bool ClientChannel::Receive(Response* response) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerResponse)];
  for (;;) {
    iovec iov{buffer_.data(), buffer_.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t r = recvmsg(fd_, &msg, MSG_CMSG_CLOEXEC);
    if (r < 0 && errno == EINTR) continue;
    response->fds.clear();
    TakeReceivedFds(msg, &response->fds);
    auto fail = [&] {
      for (int fd : response->fds) close(fd);
      response->fds.clear();
      return false;
    };
    if (r <= 0) return fail();  // hang-up (the server never sends empty frames)
    size_t size = static_cast<size_t>(r);
    if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || size < sizeof(ResponseHeader)) {
      return fail();
    }
    ResponseHeader& h = response->header;
    std::memcpy(&h, buffer_.data(), sizeof h);
    if (h.magic != kFrameMagic || h.version != kProtocolVersion ||
        h.information > kMaxOutputBytes || size != sizeof h + h.information) {
      return fail();
    }
    response->output = {buffer_.data() + sizeof h, h.information};
    return true;
  }
}

void ClientChannel::Shutdown() { shutdown(fd_, SHUT_RDWR); }

}  // namespace softib::channel
