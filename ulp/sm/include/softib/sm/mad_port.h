// MadPort: how the subnet manager sends and receives 256-byte MADs, whatever carries them.
// Deliberately small and transport-neutral: one backend sits over libibumad (and so works
// against ibsim under ibsim-run, or a kernel umad device), the other over the user-mode MAD
// services of softibd's Access Layer (al_mad_port.h), which also segments and reassembles
// RMPP transfers. Transactions (TIDs, windows, timeouts, retries) live above it in
// transactions.h, so every backend gets them for free.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace softib::sm {

inline constexpr std::size_t kMadBytes = 256;
using MadBytes = std::array<uint8_t, kMadBytes>;

// The permissive LID: as a destination it means "directed route, the SMP carries its path".
inline constexpr uint16_t kDirectedRouteLid = 0xFFFF;

struct MadAddress {
  uint16_t lid = kDirectedRouteLid;  // DLID when sending, SLID when receiving
  uint32_t qpn = 0;                  // 0: SMI (QP0), 1: GSI (QP1)
  uint8_t sl = 0;
  uint32_t qkey = 0;
  // Bytes of the MAD to send (0: all 256). An SA answer sends only its header and records:
  // requesters over umad2sim count GetTable records by the length they receive.
  uint16_t length = 0;
};

struct ReceivedMad {
  MadBytes mad{};
  MadAddress from;
  // The transport returns one of our own sends instead of an answer: ibsim's "dropped /
  // undeliverable" (status 110) or a kernel agent's send timeout. mad holds the request.
  bool send_failed = false;
  // A reassembled RMPP transfer (class headers, then the whole data; shorter or longer than
  // one MAD) when the transport does RMPP; `mad` then holds its first bytes.
  std::vector<uint8_t> transfer;
};

enum class PortStatus : uint8_t { kOk, kTimeout, kError };

class MadPort {
 public:
  virtual ~MadPort() = default;
  // Queues one MAD. `timeout_ms` is a hint for transports that track responses themselves
  // (the kernel's umad agents); retries are always the caller's business.
  virtual PortStatus Send(const MadBytes& mad, const MadAddress& to, int timeout_ms) = 0;
  // Waits up to `timeout_ms` (0: just poll) for one MAD.
  virtual PortStatus Receive(ReceivedMad& out, int timeout_ms) = 0;
  // The largest RMPP transfer (headers + data) the transport segments and reassembles for
  // class 0x03; 0: single MADs only (umad2sim does no RMPP).
  virtual std::size_t MaxRmppBytes() const { return 0; }
  // Sends an RMPP transfer: the first segment's headers, then the data (IBA 13.6.2).
  virtual PortStatus SendRmpp(std::span<const uint8_t> transfer, const MadAddress& to) {
    (void)transfer;
    (void)to;
    return PortStatus::kError;
  }
  // "umad ibsim0 port 0" and the like, for messages.
  virtual std::string Describe() const = 0;
  // The last error, for kError.
  virtual std::string LastError() const = 0;
};

}  // namespace softib::sm
