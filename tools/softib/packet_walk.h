// Whole InfiniBand packets (LRH through VCRC) as text, and MADs wrapped into
// UD packets, through the generated wire-header descriptors.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <span>
#include <vector>

#include "mad_text.h"

namespace softib::madtool {

// Decodes LRH -> GRH (LNH 3) -> BTH -> the extension headers of the opcode ->
// payload (a MAD on QP0/QP1) -> ICRC/VCRC, each section titled.
void DecodePacket(std::ostream& os, std::span<const uint8_t> packet, Errors* errors);

struct MadPacketOptions {
  uint16_t dlid = 1;
  uint16_t slid = 2;
  uint8_t sl = 0;
  uint16_t p_key = 0xFFFF;
  uint32_t psn = 0;
};

// A UD SEND ONLY packet carrying `mad` to QP0 (SMPs, on VL15) or QP1 (GMPs),
// with its ICRC and VCRC. Directed-route SMPs use the permissive LID both ways.
std::vector<uint8_t> BuildMadPacket(std::span<const uint8_t> mad, const MadPacketOptions& options,
                                    Errors* errors);

}  // namespace softib::madtool
