// The two ways ib_crc.cc computes a reflected CRC register, shared with the tests (which
// check one against the other) and the bench. Other callers use softib/wire/ib_crc.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace softib::ibcrc::detail {

// Slicing-by-8 table method: portable, every build. `reg` is the running register (the
// CRC before its final complement); the result is the register after `data`.
uint32_t Crc32RegisterSlicing(uint32_t reg, std::span<const uint8_t> data);
uint16_t VcrcRegisterSlicing(uint16_t reg, std::span<const uint8_t> data);

// True when this CPU (and build) can run the carry-less-multiply folding below.
bool FoldingAvailable();

// Carry-less-multiply folding (PCLMULQDQ); call only when FoldingAvailable().
uint32_t Crc32RegisterFolded(uint32_t reg, std::span<const uint8_t> data);
uint16_t VcrcRegisterFolded(uint16_t reg, std::span<const uint8_t> data);

// Both registers over the same bytes in one fold (modulo P32 * P16): what a packet's ICRC
// and VCRC need over its payload. Below kBothFoldMinimum bytes, two separate folds.
inline constexpr std::size_t kBothFoldMinimum = 256;
void BothRegistersFolded(uint32_t* crc32_reg, uint16_t* vcrc_reg, std::span<const uint8_t> data);

}  // namespace softib::ibcrc::detail
