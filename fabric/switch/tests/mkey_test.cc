// M_Key protection of the switch's SMA (IBA 14.2.4): protect levels, M_KeyViolations, the
// lease period, and refused SMPs arriving as packets.
#include <gtest/gtest.h>

#include "switch_test_util.h"

namespace softib::fabric::test {
namespace {

constexpr uint64_t kKey = 0x1122334455667788ULL;
constexpr uint64_t kWrong = 0x0000000000000001ULL;

// Port 0 PortInfo with M_Key, protect bits and lease period.
void Protect(Switch& sw, uint8_t bits, uint16_t lease, uint64_t current_key = 0) {
  Mad set = LidSmp(0x02, kPortInfo, 0, current_key);
  Put64(Data(set).subspan(0), kKey);
  Put16(Data(set).subspan(26), lease);
  Data(set)[34] = static_cast<uint8_t>(bits << 6);
  Data(set)[36] = 0x50;
  const std::optional<Mad> r = Ask(sw, set);
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(Status(*r), 0);
}

uint16_t Violations(Switch& sw) {
  const std::optional<Mad> r = Ask(sw, LidSmp(0x01, kPortInfo, 0, kKey));
  EXPECT_TRUE(r.has_value());
  return r ? Get16(std::span(*r).subspan(kData + 44)) : 0xFFFF;
}

TEST(SwitchMKey, ZeroKeyMeansNoCheck) {
  Switch sw(TestConfig());
  EXPECT_TRUE(Ask(sw, LidSmp(0x01, kNodeInfo, 0, kWrong)).has_value());
  Protect(sw, 3, 0, kWrong);  // M_Key 0 until now: any key may set it
  EXPECT_EQ(sw.port_info(0).M_Key, kKey);
}

TEST(SwitchMKey, ProtectLevelZero) {
  Switch sw(TestConfig());
  Protect(sw, 0, 0);
  std::optional<Mad> r = Ask(sw, LidSmp(0x01, kPortInfo, 0, kWrong));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(Get16(std::span(*r).subspan(kData)), 0x1122) << "M_Key readable at level 0";
  Mad set = LidSmp(0x02, kPortInfo, 0, kWrong);
  Data(set)[36] = 0x50;
  EXPECT_FALSE(Ask(sw, set).has_value()) << "Set with a wrong key is not answered";
  EXPECT_EQ(Violations(sw), 1);
  EXPECT_EQ(sw.drops(SwitchDrop::kMKeyViolation), 1u);
}

TEST(SwitchMKey, ProtectLevelOneHidesTheKey) {
  Switch sw(TestConfig());
  Protect(sw, 1, 0);
  std::optional<Mad> r = Ask(sw, LidSmp(0x01, kPortInfo, 0, kWrong));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(Status(*r), 0);
  for (int i = 0; i < 8; ++i) EXPECT_EQ((*r)[kData + i], 0) << i;
  EXPECT_EQ((*r)[kData + 34] >> 6, 1);
  r = Ask(sw, LidSmp(0x01, kPortInfo, 0, kKey));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ((*r)[kData + 7], 0x88) << "the right key reads it";
  EXPECT_EQ(Violations(sw), 0);
}

TEST(SwitchMKey, ProtectLevelTwoRefusesGet) {
  Switch sw(TestConfig());
  Protect(sw, 2, 0);
  EXPECT_FALSE(Ask(sw, LidSmp(0x01, kNodeInfo, 0, kWrong)).has_value());
  EXPECT_FALSE(Ask(sw, LidSmp(0x01, kNodeInfo, 0, 0)).has_value());
  EXPECT_TRUE(Ask(sw, LidSmp(0x01, kNodeInfo, 0, kKey)).has_value());
  EXPECT_EQ(Violations(sw), 2);
}

// Lease period 10 s: after a violation, the protection falls back to level 0 once 10 s
// pass without an SMP carrying the right key.
TEST(SwitchMKey, LeasePeriodExpires) {
  Switch sw(TestConfig());
  sw.SetTimeSeconds(100);
  Protect(sw, 2, 10);
  EXPECT_FALSE(Ask(sw, LidSmp(0x01, kNodeInfo, 0, kWrong)).has_value());  // lease starts
  sw.SetTimeSeconds(105);
  EXPECT_FALSE(Ask(sw, LidSmp(0x01, kNodeInfo, 0, kWrong)).has_value());
  sw.SetTimeSeconds(110);
  const std::optional<Mad> r = Ask(sw, LidSmp(0x01, kPortInfo, 0, kWrong));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ((*r)[kData + 34] >> 6, 0) << "protect bits back to 0";
  EXPECT_EQ(Get16(std::span(*r).subspan(kData + 44)), 2);
}

TEST(SwitchMKey, RightKeyStopsTheLease) {
  Switch sw(TestConfig());
  sw.SetTimeSeconds(0);
  Protect(sw, 2, 10);
  EXPECT_FALSE(Ask(sw, LidSmp(0x01, kNodeInfo, 0, kWrong)).has_value());
  sw.SetTimeSeconds(5);
  EXPECT_TRUE(Ask(sw, LidSmp(0x01, kNodeInfo, 0, kKey)).has_value());
  sw.SetTimeSeconds(50);
  EXPECT_FALSE(Ask(sw, LidSmp(0x01, kNodeInfo, 0, kWrong)).has_value());
  EXPECT_EQ(sw.port_info(0).M_KeyProtectBits, 2);
}

TEST(SwitchMKey, DirectedRouteSmpWithWrongKeyGetsNoAnswer) {
  Switch sw(TestConfig());
  sw.SetLinkUp(1, true);
  Protect(sw, 2, 0);
  Mad get = DrSmp(0x01, kNodeInfo, 0, {1}, kWrong);
  get[kHopPointer] = 1;
  EXPECT_TRUE(sw.Receive(1, SmpPacket(get)).empty());
  EXPECT_EQ(sw.drops(SwitchDrop::kMKeyViolation), 1u);
  Mad right = DrSmp(0x01, kNodeInfo, 0, {1}, kKey);
  right[kHopPointer] = 1;
  EXPECT_EQ(sw.Receive(1, SmpPacket(right)).size(), 1u);
}

}  // namespace
}  // namespace softib::fabric::test
