// User half of the channel at the frame level: connect, send request frames, receive
// response frames. runtime/user builds DeviceIoControl and overlapped I/O on top of it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "softib/channel/protocol.h"

namespace softib::channel {

class ClientChannel {
 public:
  // Connects to the server socket at `path`. nullptr with *error = errno on failure
  // (ENAMETOOLONG when the path does not fit a sockaddr_un).
  static std::unique_ptr<ClientChannel> Connect(const std::string& path, int* error);
  ~ClientChannel();
  ClientChannel(const ClientChannel&) = delete;
  ClientChannel& operator=(const ClientChannel&) = delete;

  // Any thread, concurrently: each frame is one atomic datagram. Block while the socket is
  // full. Return 0 or the errno (EPIPE once the server is gone).
  int SendIoctl(uint64_t request_id, uint32_t ioctl_code, const void* input, uint32_t input_length,
                uint32_t output_length);
  int SendCancel(uint64_t request_id, bool all);
  int SendClose(uint64_t request_id);

  struct Response {
    ResponseHeader header{};
    std::span<const uint8_t> output;  // into the channel's buffer, valid until the next Receive
    std::vector<int> fds;             // received descriptors, owned by the caller
  };
  // Blocks for the next response frame; one receiving thread at a time. False when the
  // server hung up, or sent a frame that breaks the protocol (the channel is then unusable).
  bool Receive(Response* response);

  // Wakes a blocked Receive (it returns false) and fails later sends.
  void Shutdown();

  int fd() const { return fd_; }

 private:
  explicit ClientChannel(int fd);
  int SendRequest(const RequestHeader& header, const void* input);
  int fd_;
  std::vector<uint8_t> buffer_;
};

}  // namespace softib::channel
