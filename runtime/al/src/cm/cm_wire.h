// CM MADs on the wire: the MAD header of a CM message, the message inside a MAD, and the
// local port facts the messages need (P_Key index, port GUID and LID).
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "runtime/al/src/al_internal.h"

namespace softib::al::cm {

inline constexpr std::size_t kCmMessageOffset = 24;
inline constexpr std::size_t kCmMessageSize = 232;
inline constexpr uint32_t kQp1Qkey = 0x80010000;

// A CM MAD: base version 1, ComMgt version 2, Send, TID low half `tid_low` (the agent puts
// its id in the high half), the attribute, then the 232-byte message.
std::array<uint8_t, 256> CmMad(uint16_t attribute, uint32_t tid_low,
                               std::span<const uint8_t> message);

inline std::span<const uint8_t> CmMessage(std::span<const uint8_t> mad) {
  return mad.subspan(kCmMessageOffset, kCmMessageSize);
}

// The index of `pkey` (its low 15 bits; a full member preferred) in the port's table.
bool FindPkeyIndex(AlCa* ca, uint8_t port, uint16_t pkey, uint16_t* index);
// The port's attributes (GUID host order, LID, state).
bool QueryPort(AlCa* ca, uint8_t port, abi::PortAttributes* attributes);

}  // namespace softib::al::cm
