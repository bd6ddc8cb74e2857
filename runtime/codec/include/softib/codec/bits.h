// Big-endian bit-field access in the IBTA notation: bit offset 0 is the most
// significant bit of byte 0, and a field continues into the following bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace softib::codec {

// Reads `width` (1..64) bits starting at `bit_offset`. The caller guarantees
// (bit_offset + width) <= 8 * bytes.size().
constexpr uint64_t GetBits(std::span<const uint8_t> bytes, uint32_t bit_offset, uint32_t width) {
  uint64_t value = 0;
  uint32_t bit = bit_offset;
  uint32_t remaining = width;
  while (remaining > 0) {
    const uint32_t in_byte = bit % 8;  // 0 = MSB of the byte
    const uint32_t take = (8 - in_byte) < remaining ? (8 - in_byte) : remaining;
    const uint32_t shift = 8 - in_byte - take;
    const uint8_t chunk = static_cast<uint8_t>((bytes[bit / 8] >> shift) & ((1u << take) - 1u));
    value = (value << take) | chunk;
    bit += take;
    remaining -= take;
  }
  return value;
}

// Writes the low `width` bits of `value` at `bit_offset`; other bits are kept.
constexpr void SetBits(std::span<uint8_t> bytes, uint32_t bit_offset, uint32_t width,
                       uint64_t value) {
  uint32_t bit = bit_offset;
  uint32_t remaining = width;
  while (remaining > 0) {
    const uint32_t in_byte = bit % 8;
    const uint32_t take = (8 - in_byte) < remaining ? (8 - in_byte) : remaining;
    const uint32_t shift = 8 - in_byte - take;
    const uint8_t mask = static_cast<uint8_t>(((1u << take) - 1u) << shift);
    const uint8_t chunk =
        static_cast<uint8_t>(((value >> (remaining - take)) & ((1u << take) - 1u)) << shift);
    uint8_t& b = bytes[bit / 8];
    b = static_cast<uint8_t>((b & ~mask) | chunk);
    bit += take;
    remaining -= take;
  }
}

// Compile-time-placed variants used by the generated codecs: the field's
// position is known, so the covering bytes are loaded at once (the compiler
// turns the loop into one big-endian load) instead of walking byte by byte.
template <uint32_t kBitOffset, uint32_t kWidth>
constexpr uint64_t GetFieldBits(const uint8_t* bytes) {
  static_assert(kWidth >= 1 && kWidth <= 64);
  constexpr uint32_t kFirst = kBitOffset / 8;
  constexpr uint32_t kLead = kBitOffset % 8;
  constexpr uint32_t kCount = (kLead + kWidth + 7) / 8;
  if constexpr (kCount > 8) {
    // A 64-bit field that does not start on a byte boundary spans 9 bytes.
    return GetBits(std::span<const uint8_t>(bytes + kFirst, kCount), kLead, kWidth);
  } else {
    uint64_t acc = 0;
    for (uint32_t i = 0; i < kCount; ++i) acc = (acc << 8) | bytes[kFirst + i];
    acc >>= (kCount * 8 - kLead - kWidth);
    if constexpr (kWidth < 64) acc &= (uint64_t{1} << kWidth) - 1;
    return acc;
  }
}

template <uint32_t kBitOffset, uint32_t kWidth>
constexpr void SetFieldBits(uint8_t* bytes, uint64_t value) {
  static_assert(kWidth >= 1 && kWidth <= 64);
  constexpr uint32_t kFirst = kBitOffset / 8;
  constexpr uint32_t kLead = kBitOffset % 8;
  constexpr uint32_t kCount = (kLead + kWidth + 7) / 8;
  if constexpr (kCount > 8) {
    SetBits(std::span<uint8_t>(bytes + kFirst, kCount), kLead, kWidth, value);
  } else {
    constexpr uint32_t kShift = kCount * 8 - kLead - kWidth;
    constexpr uint64_t kMask = kWidth < 64 ? (uint64_t{1} << kWidth) - 1 : ~uint64_t{0};
    uint64_t acc = 0;
    if constexpr (kLead != 0 || kShift != 0) {
      for (uint32_t i = 0; i < kCount; ++i) acc = (acc << 8) | bytes[kFirst + i];
      acc &= ~(kMask << kShift);
    }
    acc |= (value & kMask) << kShift;
    for (uint32_t i = kCount; i-- > 0;) {
      bytes[kFirst + i] = static_cast<uint8_t>(acc);
      acc >>= 8;
    }
  }
}

// Copies a fixed-size byte field (the generated views' gid/bytes/string setters).
template <std::size_t N>
constexpr void CopyBytes(std::span<uint8_t, N> to, std::span<const uint8_t, N> from) {
  for (std::size_t i = 0; i < N; ++i) to[i] = from[i];
}

}  // namespace softib::codec
