// The out-of-band exchange between server and client, as perftest does it over TCP: the
// client's test plan, then each side's QP number, LID, PSN, rkey and buffer address, then
// barriers around every measured run. Unix sockets or loopback TCP only.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "options.h"

namespace softib::perf {

// What the client asks for; the server runs what the client says (sizes, iterations,
// depths), after checking that both were started for the same test.
struct TestPlan {
  uint32_t magic = 0;
  uint32_t test = 0;
  uint32_t transport = 0;
  uint32_t atomic_type = 0;
  uint32_t iterations = 0;
  uint32_t tx_depth = 0;
  uint32_t rx_depth = 0;
  uint32_t inline_size = 0;
  uint32_t validate = 0;
  uint32_t num_sizes = 0;
  uint32_t sizes[32] = {};
};

// One side's QP and buffer, as the other side needs them.
struct PeerInfo {
  uint32_t magic = 0;
  uint16_t lid = 0;
  uint8_t port = 0;
  uint8_t pad = 0;
  uint32_t qpn = 0;
  uint32_t psn = 0;
  uint32_t rkey = 0;
  uint32_t qkey = 0;
  uint64_t vaddr = 0;         // the start of the peer's registered buffer
  uint64_t buffer_bytes = 0;  // its length
};

inline constexpr uint32_t kPlanMagic = 0x53504c31;  // "SPL1"
inline constexpr uint32_t kInfoMagic = 0x53494e31;  // "SIN1"

// A control message: a barrier token, an answer to the plan, the end of a run.
struct Token {
  uint32_t code = 0;
  uint32_t value = 0;
  uint64_t value64 = 0;
};
enum TokenCode : uint32_t { kAccept = 1, kReject = 2, kReady = 3, kDone = 4, kFailed = 5 };

class OobChannel {
 public:
  OobChannel() = default;
  explicit OobChannel(int fd) : fd_(fd) {}
  ~OobChannel();
  OobChannel(OobChannel&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  OobChannel& operator=(OobChannel&& other) noexcept;

  // Server: listens on `address` and accepts one client within `limit`. A Unix socket
  // path that exists is replaced only when no server answers on it; it is removed again
  // once the client is connected.
  static bool Accept(const OobAddress& address, std::chrono::milliseconds limit,
                     OobChannel* channel, std::string* error);
  // Client: connects to `address`, retrying until the server listens or `limit` passes.
  static bool Connect(const OobAddress& address, std::chrono::milliseconds limit,
                      OobChannel* channel, std::string* error);
  // Two connected ends in this process (socketpair), for the --kernel mode.
  static bool Pair(OobChannel* a, OobChannel* b, std::string* error);

  // Whole messages, each waiting at most `limit` for the peer.
  bool Send(const void* data, size_t size, std::string* error);
  bool Receive(void* data, size_t size, std::chrono::milliseconds limit, std::string* error);

  template <class T>
  bool SendValue(const T& value, std::string* error) {
    return Send(&value, sizeof value, error);
  }
  template <class T>
  bool ReceiveValue(T* value, std::chrono::milliseconds limit, std::string* error) {
    return Receive(value, sizeof *value, limit, error);
  }
  // Sends `mine`, receives the peer's: a barrier when both send kReady. False when the
  // peer answers another code (then `theirs` says which).
  bool Exchange(const Token& mine, Token* theirs, std::chrono::milliseconds limit,
                std::string* error);

  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

}  // namespace softib::perf
