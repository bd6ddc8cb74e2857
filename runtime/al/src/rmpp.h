// RMPP (IBA 13.6): the header fields, and the sender's and receiver's state machines as
// plain classes over MAD bytes (no QP, no timer), so that tests can drive them with lost,
// duplicated and reordered segments. rmpp_flow.cc runs them on a special QP.
#pragma once

#include <cstdint>
#include <vector>

namespace softib::al {

namespace rmpp {
inline constexpr uint8_t kTypeData = 1;
inline constexpr uint8_t kTypeAck = 2;
inline constexpr uint8_t kTypeStop = 3;
inline constexpr uint8_t kTypeAbort = 4;
inline constexpr uint8_t kFlagActive = 1;
inline constexpr uint8_t kFlagFirst = 2;
inline constexpr uint8_t kFlagLast = 4;
inline constexpr uint32_t kHeaderEnd = 36;  // common header 24 + RMPP header 12

inline bool IsActive(const uint8_t* m) { return m[24] == 1 && (m[26] & kFlagActive) != 0; }
inline constexpr uint32_t kDefaultWindow = 16;
}  // namespace rmpp

class RmppSender {
 public:
  RmppSender(std::vector<uint8_t> transfer, uint32_t window)
      : transfer_(std::move(transfer)), window_(window) {}

 private:
  std::vector<uint8_t> transfer_;
  uint32_t window_;
};
class RmppReceiver {};

}  // namespace softib::al
