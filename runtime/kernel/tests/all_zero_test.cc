// abi::AllZero, the check behind every reserved and pad field the kernel's dispatch (and the
// HCA driver's CI dispatch) validates: a word at a time, so each size from 0 to past two
// words is checked with a non-zero byte at every position, and at an unaligned start.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>

#include "softib/abi/abi_base.h"

namespace softib::abi {
namespace {

TEST(AllZero, EveryByteOfEverySizeCounts) {
  std::array<uint8_t, 32> bytes{};
  for (std::size_t offset : {0u, 1u, 3u}) {
    for (std::size_t size = 0; size + offset <= bytes.size(); ++size) {
      EXPECT_TRUE(AllZero(bytes.data() + offset, size)) << "size " << size;
      for (std::size_t i = 0; i < size; ++i) {
        bytes[offset + i] = 0x80;
        EXPECT_FALSE(AllZero(bytes.data() + offset, size)) << "size " << size << " byte " << i;
        bytes[offset + i] = 0;
      }
      // Bytes outside the range are not looked at.
      if (offset > 0) bytes[offset - 1] = 1;
      if (offset + size < bytes.size()) bytes[offset + size] = 1;
      EXPECT_TRUE(AllZero(bytes.data() + offset, size)) << "size " << size;
      bytes.fill(0);
    }
  }
}

TEST(AllZero, ConstantSizesOfReservedFields) {
  struct Fields {
    uint8_t pad1;
    uint16_t pad2;
    uint32_t reserved4;
    uint8_t pad3[3];
    uint8_t reserved12[12];
  } f{};
  EXPECT_TRUE(AllZero(&f.pad1, sizeof f.pad1));
  EXPECT_TRUE(AllZero(&f.pad2, sizeof f.pad2));
  EXPECT_TRUE(AllZero(&f.reserved4, sizeof f.reserved4));
  EXPECT_TRUE(AllZero(&f.pad3, sizeof f.pad3));
  EXPECT_TRUE(AllZero(&f.reserved12, sizeof f.reserved12));
  f.pad3[2] = 4;
  f.reserved12[11] = 1;
  f.reserved4 = 0x01000000;
  EXPECT_FALSE(AllZero(&f.pad3, sizeof f.pad3));
  EXPECT_FALSE(AllZero(&f.reserved12, sizeof f.reserved12));
  EXPECT_FALSE(AllZero(&f.reserved4, sizeof f.reserved4));
}

}  // namespace
}  // namespace softib::abi
