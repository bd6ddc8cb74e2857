// ICRC/VCRC checked against values computed independently of ib_crc.cc.
#include "softib/wire/ib_crc.h"

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

namespace softib::ibcrc {
namespace {

std::span<const uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

uint8_t Reverse8(uint8_t b) {
  uint8_t r = 0;
  for (int i = 0; i < 8; ++i) r = static_cast<uint8_t>(r | ((b >> i) & 1) << (7 - i));
  return r;
}

// Textbook MSB-first CRC-16 with polynomial 0x100B on bit-reversed input, the
// result bit-reversed and complemented: the same CRC as the reflected table one,
// computed another way.
uint16_t ReferenceVcrc(std::span<const uint8_t> data) {
  uint16_t reg = 0xFFFF;
  for (uint8_t byte : data) {
    const uint8_t in = Reverse8(byte);
    for (int bit = 7; bit >= 0; --bit) {
      const bool feedback = ((reg >> 15) ^ (in >> bit)) & 1;
      reg = static_cast<uint16_t>(reg << 1);
      if (feedback) reg ^= 0x100B;
    }
  }
  uint16_t reflected = 0;
  for (int i = 0; i < 16; ++i)
    reflected = static_cast<uint16_t>(reflected | ((reg >> i) & 1) << (15 - i));
  return static_cast<uint16_t>(~reflected);
}

// Bitwise reflected CRC-32 continuing from a raw register value, finishing with
// the complement: how Linux rxe computes the RoCE ICRC from its seed 0xdebb20e3
// (the register after eight bytes of ones stand in for the LRH).
uint32_t Crc32FromRegister(uint32_t reg, std::span<const uint8_t> data) {
  for (uint8_t b : data) {
    reg ^= b;
    for (int k = 0; k < 8; ++k) reg = (reg & 1) ? (reg >> 1) ^ 0xEDB88320u : reg >> 1;
  }
  return ~reg;
}

TEST(Crc32, CheckValue) { EXPECT_EQ(Crc32(Bytes("123456789")), 0xCBF43926u); }

TEST(Crc32, Chains) { EXPECT_EQ(Crc32(Bytes("56789"), Crc32(Bytes("1234"))), 0xCBF43926u); }

TEST(Crc32, EightBytesOfOnesGiveRxeSeed) {
  const std::vector<uint8_t> ones(8, 0xFF);
  EXPECT_EQ(~Crc32(ones), 0xDEBB20E3u);
}

TEST(Vcrc, MatchesBitwiseReference) {
  EXPECT_EQ(Crc16Vcrc(Bytes("123456789")), ReferenceVcrc(Bytes("123456789")));
  std::vector<uint8_t> data;
  for (int i = 0; i < 300; ++i) {
    data.push_back(static_cast<uint8_t>(i * 37 + 11));
    ASSERT_EQ(Crc16Vcrc(data), ReferenceVcrc(data)) << "length " << data.size();
  }
}

TEST(Vcrc, EmptyInputIsZero) { EXPECT_EQ(Crc16Vcrc({}), 0x0000); }

// LRH (VL 3, SL 5, LNH 2, DLID 0x0012, PktLen 9, SLID 0x0034) + BTH (RC SEND
// ONLY, P_Key 0xFFFF, Resv8a 0, DestQP 0x000102, PSN 7) + 12 payload bytes.
std::vector<uint8_t> LocalPacket() {
  std::vector<uint8_t> p = {0x30, 0x52, 0x00, 0x12, 0x00, 0x09, 0x00, 0x34, 0x04, 0x00,
                            0xFF, 0xFF, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x07};
  for (int i = 0; i < 12; ++i) p.push_back(static_cast<uint8_t>(0xA0 + i));
  return p;
}

std::vector<uint8_t> GlobalPacket() {
  std::vector<uint8_t> p = {0x30, 0x53, 0x00, 0x12, 0x00, 0x13, 0x00, 0x34};
  // GRH: IPVer 6, TClass 0x12, FlowLabel 0x34567, PayLen 28, NxtHdr 0x1B, HopLmt 64.
  const uint8_t grh[8] = {0x61, 0x23, 0x45, 0x67, 0x00, 0x1C, 0x1B, 0x40};
  p.insert(p.end(), grh, grh + 8);
  for (int i = 0; i < 16; ++i) p.push_back(static_cast<uint8_t>(0x10 + i));  // SGID
  for (int i = 0; i < 16; ++i) p.push_back(static_cast<uint8_t>(0x80 + i));  // DGID
  const uint8_t bth[12] = {0x04, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x07};
  p.insert(p.end(), bth, bth + 12);
  for (int i = 0; i < 12; ++i) p.push_back(static_cast<uint8_t>(0xA0 + i));
  return p;
}

TEST(Icrc, LocalPacketMasksVlAndResv8aOnly) {
  const auto base = LocalPacket();
  // Independently: the CRC-32 of the packet with VL and Resv8a set to ones.
  auto masked = base;
  masked[0] |= 0xF0;
  masked[8 + 4] = 0xFF;
  EXPECT_EQ(ComputeIcrc(base), Crc32(masked));

  auto vl = base;
  vl[0] = static_cast<uint8_t>((vl[0] & 0x0F) | 0x70);
  EXPECT_EQ(ComputeIcrc(vl), ComputeIcrc(base)) << "VL is variant";
  auto resv = base;
  resv[8 + 4] = 0x5A;
  EXPECT_EQ(ComputeIcrc(resv), ComputeIcrc(base)) << "Resv8a is variant";
  for (std::size_t i : {1u, 3u, 7u, 9u, 15u, 25u}) {
    auto changed = base;
    changed[i] ^= 0x10;  // byte 1: SL (the LNH must stay local)
    EXPECT_NE(ComputeIcrc(changed), ComputeIcrc(base)) << "byte " << i << " is invariant";
  }
}

TEST(Icrc, GlobalPacketMatchesRoceStyleComputation) {
  const auto base = GlobalPacket();
  // rxe: seed 0xdebb20e3 for the LRH, then the GRH (as the IPv6 header) with
  // TClass, FlowLabel and HopLmt set to ones, then BTH with Resv8a ones, then the rest.
  auto rest = std::vector<uint8_t>(base.begin() + 8, base.end());
  rest[0] |= 0x0F;
  rest[1] = rest[2] = rest[3] = 0xFF;
  rest[7] = 0xFF;
  rest[40 + 4] = 0xFF;
  EXPECT_EQ(ComputeIcrc(base), Crc32FromRegister(0xDEBB20E3u, rest));

  for (std::size_t i : {0u, 1u, 2u, 5u, 7u, 8u + 0u, 8u + 1u, 8u + 3u, 8u + 7u, 48u + 4u}) {
    auto changed = base;
    changed[i] ^= (i == 8 ? 0x01 : 0x10);
    EXPECT_EQ(ComputeIcrc(changed), ComputeIcrc(base)) << "byte " << i << " is variant";
  }
  for (std::size_t i : {8u + 4u, 8u + 6u, 8u + 8u, 8u + 39u, 48u, 48u + 5u, 60u}) {
    auto changed = base;
    changed[i] ^= 0x01;
    EXPECT_NE(ComputeIcrc(changed), ComputeIcrc(base)) << "byte " << i << " is invariant";
  }
  auto ipver = base;
  ipver[8] ^= 0x10;
  EXPECT_NE(ComputeIcrc(ipver), ComputeIcrc(base)) << "IPVer is invariant";
}

TEST(Crcs, AppendThenCheck) {
  auto p = LocalPacket();
  const std::size_t body = p.size();
  AppendCrcs(p);
  ASSERT_EQ(p.size(), body + 6);
  const uint32_t icrc = ComputeIcrc(std::span<const uint8_t>(p).first(body));
  EXPECT_EQ(p[body], icrc & 0xFF) << "least significant byte first";
  EXPECT_EQ(p[body + 3], icrc >> 24);
  auto check = CheckCrcs(p);
  EXPECT_TRUE(check.well_formed);
  EXPECT_TRUE(check.has_icrc);
  EXPECT_TRUE(check.icrc_ok());
  EXPECT_TRUE(check.vcrc_ok());

  p[20] ^= 0x04;
  check = CheckCrcs(p);
  EXPECT_FALSE(check.icrc_ok());
  EXPECT_FALSE(check.vcrc_ok());

  auto vl_only = LocalPacket();
  AppendCrcs(vl_only);
  vl_only[0] ^= 0x80;  // a switch changing the VL breaks only the VCRC
  check = CheckCrcs(vl_only);
  EXPECT_TRUE(check.icrc_ok());
  EXPECT_FALSE(check.vcrc_ok());
}

TEST(Crcs, RawPacketHasOnlyVcrc) {
  std::vector<uint8_t> raw = {0x00, 0x00, 0x00, 0x01, 0x00, 0x04, 0x00, 0x02,
                              0x88, 0xB5, 0,    0,    0,    0,    0,    0};
  AppendCrcs(raw);
  EXPECT_EQ(raw.size(), 18u);
  const auto check = CheckCrcs(raw);
  EXPECT_FALSE(check.has_icrc);
  EXPECT_TRUE(check.vcrc_ok());
}

TEST(Crcs, TooShortIsNotWellFormed) {
  std::vector<uint8_t> p = {0x00, 0x02, 0x00, 0x01, 0x00};
  EXPECT_FALSE(CheckCrcs(p).well_formed);
  std::vector<uint8_t> no_bth = {0x00, 0x02, 0x00, 0x01, 0x00, 0x04, 0x00, 0x02, 1, 2, 3, 4, 5, 6};
  EXPECT_FALSE(CheckCrcs(no_bth).well_formed);
}

}  // namespace
}  // namespace softib::ibcrc
