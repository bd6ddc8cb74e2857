// Control messages on the test's own QP, for runs connected by the CM (no out-of-band
// channel): a Token travels as a zero-byte SEND with immediate data, so it consumes
// whichever receive is at the head of the peer's queue (a data slot or a control receive)
// without touching its buffer; the receiver tells it from data by the IMMEDIATE flag.
#pragma once

#include <cstdint>

#include "oob.h"

namespace softib::perf {

// wr_id bits of control work requests (data wr_ids are message indices and slots).
inline constexpr uint64_t kControlWrId = 1ull << 63;
// Control receives a side keeps posted when it posts no data receives.
inline constexpr uint32_t kControlReceives = 4;
// Room a QP keeps for control messages on top of the plan's depths.
inline constexpr uint32_t kControlSendRoom = 2;

// code in bits 31..28, value in 27..0 (host order; the WR carries it in network order).
inline constexpr uint64_t kControlValueMask = (1u << 28) - 1;
inline uint32_t EncodeControl(const Token& token) {
  return (token.code & 0xF) << 28 | static_cast<uint32_t>(token.value64 & kControlValueMask);
}
inline Token DecodeControl(uint32_t immediate) {
  return Token{immediate >> 28, 0, immediate & kControlValueMask};
}

}  // namespace softib::perf
