// The carry-less-multiply folding (ib_crc_fold.cc) against the slicing tables and a bitwise
// reference: every length 0..1024 from several alignments, large buffers, random starting
// registers and chained calls. From 512 bytes on, a CPU with VPCLMULQDQ and AVX-512 takes
// the 512-bit path, so these lengths test both paths there.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "softib/wire/ib_crc.h"
#include "softib/wire/ib_crc_internal.h"

namespace softib::ibcrc {
namespace {

using detail::Crc32RegisterFolded;
using detail::Crc32RegisterSlicing;
using detail::VcrcRegisterFolded;
using detail::VcrcRegisterSlicing;

// One bit at a time from the reflected polynomials: the definition, no tables.
uint32_t BitwiseCrc32Register(uint32_t reg, std::span<const uint8_t> data) {
  for (uint8_t b : data) {
    reg ^= b;
    for (int k = 0; k < 8; ++k) reg = (reg & 1) ? (reg >> 1) ^ 0xEDB88320u : reg >> 1;
  }
  return reg;
}

uint16_t BitwiseVcrcRegister(uint16_t reg, std::span<const uint8_t> data) {
  for (uint8_t b : data) {
    reg = static_cast<uint16_t>(reg ^ b);
    for (int k = 0; k < 8; ++k)
      reg = static_cast<uint16_t>((reg & 1) ? (reg >> 1) ^ 0xD008u : reg >> 1);
  }
  return reg;
}

std::vector<uint8_t> RandomBytes(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

class CrcFolding : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!detail::FoldingAvailable())
      GTEST_SKIP() << "this CPU has no PCLMULQDQ/SSE4.1: the folded CRC is not used here";
  }
};

TEST_F(CrcFolding, EveryLengthUpTo1024MatchesTablesAndBitwise) {
  const std::vector<uint8_t> buffer = RandomBytes(1024 + 64, 1);
  std::mt19937 rng(2);
  for (std::size_t length = 0; length <= 1024; ++length) {
    const std::size_t offset = rng() % 64;  // any alignment, not only 16-byte ones
    const std::span<const uint8_t> data(buffer.data() + offset, length);
    const uint32_t reg32 = static_cast<uint32_t>(rng());
    const uint16_t reg16 = static_cast<uint16_t>(rng());
    const uint32_t folded32 = Crc32RegisterFolded(reg32, data);
    ASSERT_EQ(folded32, Crc32RegisterSlicing(reg32, data)) << "length " << length;
    ASSERT_EQ(folded32, BitwiseCrc32Register(reg32, data)) << "length " << length;
    const uint16_t folded16 = VcrcRegisterFolded(reg16, data);
    ASSERT_EQ(folded16, VcrcRegisterSlicing(reg16, data)) << "length " << length;
    ASSERT_EQ(folded16, BitwiseVcrcRegister(reg16, data)) << "length " << length;
  }
}

TEST_F(CrcFolding, LargeBuffersMatchTables) {
  const std::vector<uint8_t> buffer = RandomBytes((1u << 20) + 4096, 3);
  std::mt19937 rng(4);
  for (std::size_t length : {4096u, 4096u + 13, 65536u + 7, 1u << 20, (1u << 20) + 4095}) {
    const std::size_t offset = rng() % 16;
    const std::span<const uint8_t> data(buffer.data() + offset, length);
    EXPECT_EQ(Crc32RegisterFolded(0xFFFFFFFFu, data), Crc32RegisterSlicing(0xFFFFFFFFu, data))
        << length;
    EXPECT_EQ(VcrcRegisterFolded(0xFFFF, data), VcrcRegisterSlicing(0xFFFF, data)) << length;
  }
}

TEST_F(CrcFolding, AllOnesAndZerosMatchTables) {
  // Degenerate data: a wrong constant for one half of a block cannot cancel out here.
  for (uint8_t fill : {uint8_t{0x00}, uint8_t{0xFF}}) {
    const std::vector<uint8_t> data(4099, fill);
    EXPECT_EQ(Crc32RegisterFolded(0, data), Crc32RegisterSlicing(0, data));
    EXPECT_EQ(VcrcRegisterFolded(0, data), VcrcRegisterSlicing(0, data));
  }
}

TEST_F(CrcFolding, BothRegistersInOneFoldMatchSeparateTables) {
  // Every length across the switch to the single fold (kBothFoldMinimum) and beyond, plus
  // packet-sized and large spans, with random registers (the shift of each register).
  const std::vector<uint8_t> buffer = RandomBytes((1u << 20) + 64, 7);
  std::mt19937 rng(8);
  std::vector<std::size_t> lengths;
  for (std::size_t length = 0; length <= 1100; ++length) lengths.push_back(length);
  for (std::size_t length : {2048u, 4096u, 4096u + 12, 65536u + 3, 1u << 20})
    lengths.push_back(length);
  for (std::size_t length : lengths) {
    const std::span<const uint8_t> data(buffer.data() + rng() % 64, length);
    const uint32_t reg32 = static_cast<uint32_t>(rng());
    const uint16_t reg16 = static_cast<uint16_t>(rng());
    uint32_t both32 = reg32;
    uint16_t both16 = reg16;
    detail::BothRegistersFolded(&both32, &both16, data);
    ASSERT_EQ(both32, Crc32RegisterSlicing(reg32, data)) << "length " << length;
    ASSERT_EQ(both16, VcrcRegisterSlicing(reg16, data)) << "length " << length;
  }
}

TEST(CrcDispatch, AppendAndCheckAgreeWithSeparateCrcsOnLargePackets) {
  // Packets long enough for the single fold: the ICRC and VCRC AppendCrcs writes equal
  // ComputeIcrc (masked headers) and ComputeVcrc (over the wire ICRC); CheckCrcs agrees and
  // notices one flipped payload bit in either CRC.
  for (bool global : {false, true}) {
    for (std::size_t payload : {252u, 256u, 1024u, 4096u, 4100u}) {
      std::vector<uint8_t> packet = RandomBytes((global ? 60 : 20) + payload, 9 + payload);
      packet[1] = global ? 0x03 : 0x02;  // LNH: IBA global / local
      std::vector<uint8_t> expected = packet;
      const uint32_t icrc = ComputeIcrc(expected);
      for (int i = 0; i < 4; ++i) expected.push_back(static_cast<uint8_t>(icrc >> (8 * i)));
      const uint16_t vcrc = ComputeVcrc(expected);
      expected.push_back(static_cast<uint8_t>(vcrc));
      expected.push_back(static_cast<uint8_t>(vcrc >> 8));
      AppendCrcs(packet);
      ASSERT_EQ(packet, expected) << "payload " << payload << (global ? " global" : " local");
      CrcCheck check = CheckCrcs(packet);
      EXPECT_TRUE(check.well_formed && check.icrc_ok() && check.vcrc_ok());
      EXPECT_EQ(check.icrc_computed, icrc);
      EXPECT_EQ(check.vcrc_computed, vcrc);
      packet[packet.size() / 2] ^= 0x10;
      check = CheckCrcs(packet);
      EXPECT_FALSE(check.icrc_ok());
      EXPECT_FALSE(check.vcrc_ok());
    }
  }
}

TEST(CrcDispatch, ChainedCallsEqualOneCall) {
  // The public Crc32 (folded where available) split at every point of a 300-byte buffer.
  const std::vector<uint8_t> buffer = RandomBytes(300, 5);
  const std::span<const uint8_t> all(buffer);
  const uint32_t whole = Crc32(all);
  EXPECT_EQ(whole, ~BitwiseCrc32Register(0xFFFFFFFFu, all));
  for (std::size_t split = 0; split <= all.size(); ++split)
    ASSERT_EQ(Crc32(all.subspan(split), Crc32(all.first(split))), whole) << "split " << split;
}

TEST(CrcDispatch, PublicVcrcMatchesBitwiseOnPacketSizes) {
  const std::vector<uint8_t> buffer = RandomBytes(4200, 6);
  for (std::size_t length : {26u, 282u, 1050u, 2074u, 4122u}) {
    const std::span<const uint8_t> data(buffer.data() + 1, length);
    EXPECT_EQ(Crc16Vcrc(data), static_cast<uint16_t>(~BitwiseVcrcRegister(0xFFFF, data))) << length;
  }
}

}  // namespace
}  // namespace softib::ibcrc
