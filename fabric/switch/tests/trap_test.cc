// The switch SMA's Trap 128 (bytes from IBA 13.4.8.2 Notice, 14.2.5.1 trap 128's details,
// 7.7 LRH, 9.2 BTH — not from the IDL), its repetition until TrapRepress, and partition
// enforcement on external ports (IBA 10.9.2).
#include <gtest/gtest.h>

#include "ib_crc.h"
#include "switch_test_util.h"

namespace softib::fabric::test {
namespace {

constexpr uint8_t kTrapRepress = 0x07;
constexpr uint64_t kMs = 1'000'000;

// Switch LID 7, the SM at LID 3 behind port 1; ports 1 and 2 cabled.
Switch Configured() {
  Switch sw(TestConfig(0x1100, 8));
  sw.SetLinkUp(1, true);
  Mad pi = LidSmp(kSet, kPortInfo, 0);
  Put16(Data(pi).subspan(16), 7);  // LID
  Put16(Data(pi).subspan(18), 3);  // MasterSMLID
  Data(pi)[36] = 0x50;             // NeighborMTU 4096
  EXPECT_EQ(Status(*Ask(sw, pi)), 0);
  SetLftBlock0(sw, {{3, 1}});
  Mad clear = LidSmp(kSet, kSwitchInfo, 0);
  Put16(Data(clear).subspan(6), 63);  // LinearFDBTop
  Data(clear)[11] = 0x04;             // PortStateChange: write 1 to clear
  EXPECT_EQ(Status(*Ask(sw, clear)), 0);
  return sw;
}

TEST(SwitchTrap, Trap128OnLinkChangeBytes) {
  Switch sw = Configured();
  EXPECT_FALSE(sw.trap_outstanding()) << "clearing PortStateChange settles the link-up";
  sw.SetLinkUp(2, true);  // Down -> Init: PortStateChange, Trap 128
  EXPECT_TRUE(sw.trap_outstanding());
  const std::vector<Transmit> out = sw.PollTraps(5 * kMs);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].port, 1) << "towards the SM by the LFT";
  const std::vector<uint8_t>& p = out[0].bytes;
  ASSERT_EQ(p.size(), 28u + 256 + 6);
  EXPECT_TRUE(CrcsGood(p));
  EXPECT_EQ(p[0] >> 4, 15) << "VL15";
  EXPECT_EQ(p[1] & 0x03, 0x02) << "LNH: IBA local";
  EXPECT_EQ(Get16(std::span(p).subspan(2)), 3) << "DLID: MasterSMLID";
  EXPECT_EQ(Get16(std::span(p).subspan(4)) & 0x7FF, (28 + 256 + 4) / 4);
  EXPECT_EQ(Get16(std::span(p).subspan(6)), 7) << "SLID: the switch";
  EXPECT_EQ(p[8], 0x64) << "UD SEND only";
  EXPECT_EQ(Get16(std::span(p).subspan(10)), 0xFFFF);
  EXPECT_EQ(p[13] | p[14] | p[15], 0) << "DestQP 0";
  const Mad mad = MadOf(p);
  EXPECT_EQ(mad[0], 1);     // BaseVersion
  EXPECT_EQ(mad[1], 0x01);  // SubnMgt, LID-routed
  EXPECT_EQ(mad[2], 1);     // ClassVersion
  EXPECT_EQ(mad[3], 0x05);  // Trap
  EXPECT_EQ(Get16(std::span(mad).subspan(16)), 0x0002) << "Notice";
  EXPECT_EQ(mad[20] | mad[21] | mad[22] | mad[23], 0);
  // Notice: IsGeneric 1 | Type 1 (urgent); ProducerType 2 (switch); TrapNumber 128;
  // IssuerLID; NoticeToggle 0 | NoticeCount 1; DataDetails: LIDADDR at offset 0.
  EXPECT_EQ(mad[64], 0x81);
  EXPECT_EQ(mad[65] << 16 | mad[66] << 8 | mad[67], 2);
  EXPECT_EQ(Get16(std::span(mad).subspan(68)), 128);
  EXPECT_EQ(Get16(std::span(mad).subspan(70)), 7);
  EXPECT_EQ(Get16(std::span(mad).subspan(72)), 1);
  EXPECT_EQ(Get16(std::span(mad).subspan(74)), 7);
  for (std::size_t i = 76; i < 128; ++i) EXPECT_EQ(mad[i], 0) << i;
}

TEST(SwitchTrap, RepeatedUntilRepressed) {
  Switch sw = Configured();
  sw.SetLinkUp(2, true);
  const auto first = sw.PollTraps(0);
  ASSERT_EQ(first.size(), 1u);
  // SubnetTimeOut 0 (4 us) is below the 1 ms floor: nothing before it, the same trap after.
  EXPECT_EQ(sw.next_trap_ns(), kMs);
  EXPECT_TRUE(sw.PollTraps(kMs - 1).empty());
  const auto again = sw.PollTraps(kMs);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].bytes, first[0].bytes) << "same TID, same NoticeCount";
  // Another link change while it is outstanding adds nothing.
  sw.SetLinkUp(1, false);
  sw.SetLinkUp(1, true);
  // TrapRepress with another TID is ignored; with the trap's TID (high half rewritten by a
  // transport) it stops the repeats. No answer either way.
  Mad repress = MadOf(first[0].bytes);
  repress[3] = kTrapRepress;
  Mad wrong = repress;
  wrong[15] ^= 1;
  EXPECT_FALSE(Ask(sw, wrong).has_value());
  EXPECT_TRUE(sw.trap_outstanding());
  repress[8] = 0x42;
  EXPECT_FALSE(Ask(sw, repress).has_value());
  EXPECT_FALSE(sw.trap_outstanding());
  EXPECT_EQ(sw.next_trap_ns(), UINT64_MAX);
  EXPECT_TRUE(sw.PollTraps(10 * kMs).empty());
  EXPECT_EQ(sw.traps_sent(), 2u);

  // PortStateChange is still set: a new change raises nothing until the SM clears it.
  sw.SetLinkUp(2, false);
  EXPECT_FALSE(sw.trap_outstanding());
  Mad clear = LidSmp(kSet, kSwitchInfo, 0);
  Put16(Data(clear).subspan(6), 63);
  Data(clear)[11] = 0x04;
  ASSERT_EQ(Status(*Ask(sw, clear)), 0);
  sw.SetLinkUp(2, true);
  const auto second = sw.PollTraps(20 * kMs);
  ASSERT_EQ(second.size(), 1u);
  const Mad notice = MadOf(second[0].bytes);
  EXPECT_EQ(Get16(std::span(notice).subspan(72)), 2) << "NoticeCount";
}

TEST(SwitchTrap, NoSmNoTrap) {
  Switch sw(TestConfig(0x1100, 8));
  sw.SetLinkUp(1, true);  // PortStateChange, but no LID and no MasterSMLID
  EXPECT_TRUE(sw.trap_outstanding());
  EXPECT_EQ(sw.next_trap_ns(), UINT64_MAX) << "nothing to wake the host for";
  EXPECT_TRUE(sw.PollTraps(0).empty());
}

std::vector<uint8_t> WithPKey(std::vector<uint8_t> packet, uint16_t pkey) {
  packet.resize(packet.size() - 6);
  Put16(std::span(packet).subspan(10), pkey);
  ibcrc::AppendCrcs(packet);
  return packet;
}

TEST(SwitchPartitions, EnforcedOnExternalPorts) {
  Switch sw(TestConfig(0x1100, 8));
  ActivatePort(sw, 1);
  ActivatePort(sw, 2);
  SetLftBlock0(sw, {{4, 1}, {5, 2}});
  const std::vector<uint8_t> payload(8, 1);
  const auto to5 = [&](uint16_t pkey) { return WithPKey(Packet(0, 5, 4, 0x10, payload), pkey); };
  EXPECT_FALSE(sw.route(1, to5(0x8002)).drop) << "no enforcement yet";

  // Port 2: P_Keys {0xFFFF, 0x8002} (modifier: port 2 in bits 23:16, block 0), and both
  // enforcement bits (PortInfo byte 43 bits 3 and 2).
  Mad keys = LidSmp(kSet, kPKeyTable, 2u << 16);
  Put16(Data(keys).subspan(0), 0xFFFF);
  Put16(Data(keys).subspan(2), 0x8002);
  ASSERT_EQ(Status(*Ask(sw, keys)), 0);
  Mad enforce = LidSmp(kSet, kPortInfo, 2);
  Data(enforce)[36] = 0x50;
  Data(enforce)[43] = 0x0C;
  const auto answer = Ask(sw, enforce);
  ASSERT_EQ(Status(*answer), 0);
  EXPECT_EQ((*answer)[64 + 43] & 0x0C, 0x0C);

  EXPECT_FALSE(sw.route(1, to5(0x8002)).drop);
  EXPECT_FALSE(sw.route(1, to5(0x0002)).drop) << "limited to full matches";
  EXPECT_FALSE(sw.route(1, to5(0x7FFF)).drop);
  EXPECT_EQ(sw.route(1, to5(0x8003)).drop, SwitchDrop::kPartition) << "outbound on port 2";
  EXPECT_EQ(sw.port_info(2).P_KeyViolations, 1);
  // Inbound on port 2: a packet to LID 4 (port 1) carrying a key port 2 lacks.
  EXPECT_EQ(sw.route(2, WithPKey(Packet(0, 4, 5, 0x10, payload), 0x8005)).drop,
            SwitchDrop::kPartition);
  EXPECT_EQ(sw.port_info(2).P_KeyViolations, 2);
  EXPECT_EQ(sw.drops(SwitchDrop::kPartition), 2u);
  // Limited to limited fails (IBA 10.9.3).
  Put16(Data(keys).subspan(2), 0x0002);
  ASSERT_EQ(Status(*Ask(sw, keys)), 0);
  EXPECT_EQ(sw.route(1, to5(0x0002)).drop, SwitchDrop::kPartition);
  // SMPs are exempt (VL15 never checks P_Keys).
  EXPECT_FALSE(sw.route(1, SmpPacket(LidSmp(0x01, 0x0011, 0), 5, 4)).drop);
}

}  // namespace
}  // namespace softib::fabric::test
