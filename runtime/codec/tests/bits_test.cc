// GetBits/SetBits and their fixed-position variants, against bytes worked out
// by hand from the IBTA bit numbering (bit 0 = MSB of byte 0).
#include "softib/codec/bits.h"

#include <gtest/gtest.h>

#include <array>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace softib::codec {
namespace {

using Bytes = std::vector<uint8_t>;

TEST(Bits, GetWithinOneByte) {
  const Bytes b = {0b1011'0110};
  EXPECT_EQ(GetBits(b, 0, 1), 1u);
  EXPECT_EQ(GetBits(b, 1, 3), 0b011u);
  EXPECT_EQ(GetBits(b, 4, 4), 0b0110u);
  EXPECT_EQ(GetBits(b, 7, 1), 0u);
  EXPECT_EQ(GetBits(b, 0, 8), 0xB6u);
}

TEST(Bits, GetAcrossBytes) {
  const Bytes b = {0x12, 0x34, 0x56};
  EXPECT_EQ(GetBits(b, 4, 12), 0x234u);
  EXPECT_EQ(GetBits(b, 4, 16), 0x2345u);
  // bits 3..9: 1,0,0,1,0 from 0x12 then 0,0 from 0x34
  EXPECT_EQ(GetBits(b, 3, 7), 0b1001000u);
  EXPECT_EQ(GetBits(b, 0, 24), 0x123456u);
  EXPECT_EQ(GetBits(b, 12, 12), 0x456u);
}

TEST(Bits, Get64) {
  const Bytes aligned = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(GetBits(aligned, 0, 64), 0x0102030405060708ull);
  // Starting at bit 4 the value spans nine bytes.
  const Bytes nine = {0xF1, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF, 0x1F};
  EXPECT_EQ(GetBits(nine, 4, 64), 0x123456789ABCDEF1ull);
  EXPECT_EQ(GetBits(nine, 4, 63), 0x123456789ABCDEF1ull >> 1);
}

TEST(Bits, GetEveryWidth) {
  const Bytes ones(10, 0xFF);
  for (uint32_t width = 1; width <= 64; ++width) {
    const uint64_t all = width == 64 ? ~0ull : (1ull << width) - 1;
    for (uint32_t offset = 0; offset < 8; ++offset)
      EXPECT_EQ(GetBits(ones, offset, width), all) << offset << "/" << width;
  }
  // A single one bit at position p reads back as the top bit of a field starting at p.
  for (uint32_t p = 0; p < 64; ++p) {
    Bytes b(10, 0);
    b[p / 8] = static_cast<uint8_t>(0x80 >> (p % 8));
    for (uint32_t width = 1; width <= 64 && p + width <= 80; ++width)
      EXPECT_EQ(GetBits(b, p, width), 1ull << (width - 1)) << p << "/" << width;
  }
}

TEST(Bits, SetAcrossBytes) {
  Bytes b(3, 0);
  SetBits(b, 5, 6, 0x3F);  // bits 5..10
  EXPECT_EQ(b, (Bytes{0x07, 0xE0, 0x00}));
  Bytes c(4, 0);
  SetBits(c, 8, 24, 0xABCDEF);
  EXPECT_EQ(c, (Bytes{0x00, 0xAB, 0xCD, 0xEF}));
  Bytes bth(12, 0);
  SetBits(bth, 10, 2, 3);  // BTH PadCnt: 2 bits at 1[5]
  EXPECT_EQ(bth[1], 0x30);
}

TEST(Bits, SetPreservesNeighbours) {
  Bytes b(3, 0xFF);
  SetBits(b, 5, 6, 0);
  EXPECT_EQ(b, (Bytes{0xF8, 0x1F, 0xFF}));
  Bytes c = {0xA5, 0x5A};
  SetBits(c, 4, 8, 0x00);
  EXPECT_EQ(c, (Bytes{0xA0, 0x0A}));
  SetBits(c, 4, 8, 0x3C);
  EXPECT_EQ(c, (Bytes{0xA3, 0xCA}));
}

TEST(Bits, SetTruncatesToWidth) {
  Bytes b(2, 0);
  SetBits(b, 4, 4, 0x1F);
  EXPECT_EQ(b, (Bytes{0x0F, 0x00}));
}

TEST(Bits, Set64) {
  Bytes nine(9, 0);
  SetBits(nine, 4, 64, 0x123456789ABCDEF1ull);
  EXPECT_EQ(nine, (Bytes{0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF, 0x10}));
  Bytes full(8, 0xFF);
  SetBits(full, 0, 64, 0x0102030405060708ull);
  EXPECT_EQ(full, (Bytes{1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(Bits, SetEveryWidthTouchesOnlyItsBits) {
  std::mt19937_64 rng(7);
  for (uint32_t width = 1; width <= 64; ++width) {
    for (uint32_t offset = 0; offset < 16; ++offset) {
      Bytes before(11);
      for (auto& x : before) x = static_cast<uint8_t>(rng());
      Bytes after = before;
      const uint64_t value = rng();
      SetBits(after, offset, width, value);
      const uint64_t mask = width == 64 ? ~0ull : (1ull << width) - 1;
      EXPECT_EQ(GetBits(after, offset, width), value & mask);
      for (uint32_t bit = 0; bit < 88; ++bit) {
        if (bit >= offset && bit < offset + width) continue;
        EXPECT_EQ(GetBits(after, bit, 1), GetBits(before, bit, 1))
            << "width " << width << " offset " << offset << " changed bit " << bit;
      }
    }
  }
}

// The fixed-position variants agree with GetBits/SetBits at every in-byte
// offset and every width (they take different paths for 9-byte spans). The 576
// instantiations only compare; gtest's macros stay out of them (they made this the
// slowest file of the tree to compile).
void RecordMismatch(bool get_ok, bool set_ok, uint32_t offset, uint32_t width,
                    std::string& failures) {
  if (!get_ok)
    failures += "GetFieldBits<" + std::to_string(offset) + "," + std::to_string(width) + "> ";
  if (!set_ok)
    failures += "SetFieldBits<" + std::to_string(offset) + "," + std::to_string(width) + "> ";
}

template <uint32_t kOffset, uint32_t kWidth>
void CheckFixed(std::mt19937_64& rng, std::string& failures) {
  std::array<uint8_t, 10> buf;
  for (auto& x : buf) x = static_cast<uint8_t>(rng());
  const bool get_ok = GetFieldBits<kOffset, kWidth>(buf.data()) == GetBits(buf, kOffset, kWidth);
  auto expected = buf;
  const uint64_t value = rng();
  SetBits(expected, kOffset, kWidth, value);
  SetFieldBits<kOffset, kWidth>(buf.data(), value);
  RecordMismatch(get_ok, buf == expected, kOffset, kWidth, failures);
}

template <uint32_t kOffset, uint32_t... kWidthsMinusOne>
void CheckFixedWidths(std::mt19937_64& rng, std::string& failures,
                      std::integer_sequence<uint32_t, kWidthsMinusOne...>) {
  (CheckFixed<kOffset, kWidthsMinusOne + 1>(rng, failures), ...);
}

template <uint32_t... kOffsets>
void CheckFixedOffsets(std::mt19937_64& rng, std::string& failures,
                       std::integer_sequence<uint32_t, kOffsets...>) {
  (CheckFixedWidths<kOffsets>(rng, failures, std::make_integer_sequence<uint32_t, 64>()), ...);
}

TEST(Bits, FixedPositionMatchesGeneric) {
  std::mt19937_64 rng(11);
  std::string failures;
  for (int i = 0; i < 4; ++i)
    CheckFixedOffsets(rng, failures, std::make_integer_sequence<uint32_t, 9>());
  EXPECT_EQ(failures, "");
}

TEST(Bits, FixedPositionByHand) {
  std::array<uint8_t, 3> b = {0x12, 0x34, 0x56};
  EXPECT_EQ((GetFieldBits<4, 12>(b.data())), 0x234u);
  EXPECT_EQ((GetFieldBits<3, 7>(b.data())), 0b1001000u);
  SetFieldBits<5, 6>(b.data(), 0);
  EXPECT_EQ(b, (std::array<uint8_t, 3>{0x10, 0x14, 0x56}));
  static_assert(GetFieldBits<8, 16>(std::array<uint8_t, 3>{1, 2, 3}.data()) == 0x0203);
}

TEST(Bits, CopyBytes) {
  std::array<uint8_t, 4> to{};
  const std::array<uint8_t, 4> from = {1, 2, 3, 4};
  CopyBytes(std::span<uint8_t, 4>(to), std::span<const uint8_t, 4>(from));
  EXPECT_EQ(to, from);
}

}  // namespace
}  // namespace softib::codec
