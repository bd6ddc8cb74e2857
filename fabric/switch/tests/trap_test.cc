// The switch SMA's Trap 128 (bytes from IBA 13.4.8.2 Notice, 14.2.5.1 trap 128's details,
// 7.7 LRH, 9.2 BTH — not from the IDL), its repetition until TrapRepress, and partition
// enforcement on external ports (IBA 10.9.2).
#include <gtest/gtest.h>

#include "softib/wire/ib_crc.h"
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

// The Notice of trap `number` among what PollTraps sent (its checks: a switch's generic
// Notice of `type` from LID 7, to the SM at LID 3).
Mad TrapOf(const std::vector<Transmit>& out, uint16_t number, uint8_t type) {
  for (const Transmit& t : out) {
    const Mad mad = MadOf(t.bytes);
    if (Get16(std::span(mad).subspan(68)) != number) continue;
    EXPECT_TRUE(CrcsGood(t.bytes));
    EXPECT_EQ(Get16(std::span(t.bytes).subspan(2)), 3) << "DLID: MasterSMLID";
    EXPECT_EQ(mad[3], 0x05) << "Trap";
    EXPECT_EQ(mad[64], 0x80 | type) << "IsGeneric, Type";
    EXPECT_EQ(mad[65] << 16 | mad[66] << 8 | mad[67], 2) << "ProducerType: switch";
    EXPECT_EQ(Get16(std::span(mad).subspan(70)), 7) << "IssuerLID";
    return mad;
  }
  ADD_FAILURE() << "no trap " << number;
  return {};
}

TEST(SwitchTrap, Trap256OnAnMKeyViolationBytes) {
  Switch sw = Configured();
  // Port 0's M_Key 0x1122334455667788 with protect bits 2 (PortInfo bytes 0..7, 34[7:6]).
  Mad pi = LidSmp(kGet, kPortInfo, 0);
  Mad set = LidSmp(kSet, kPortInfo, 0);
  std::copy_n(Ask(sw, pi)->begin() + 64, 64, set.begin() + 64);
  Put64(Data(set), 0x1122334455667788ull);
  Data(set)[34] = static_cast<uint8_t>((Data(set)[34] & 0x3F) | 0x80);
  Data(set)[32] &= 0xF0;  // PortState: no change
  Data(set)[33] &= 0x0F;  // PortPhysicalState: no change
  ASSERT_EQ(Status(*Ask(sw, set)), 0);
  sw.PollTraps(0);  // whatever was outstanding before
  EXPECT_FALSE(Ask(sw, LidSmp(kGet, kSwitchInfo, 0, 0xBAD)).has_value()) << "not answered";
  const Mad m = TrapOf(sw.PollTraps(10 * kMs), 256, 2);
  EXPECT_EQ(Get16(std::span(m).subspan(24)), 0x1122) << "the switch's M_Key";
  // Details: reserved, LIDADDR, DRSLID, Method, reserved, AttributeID, AttributeModifier,
  // M_Key of the SMP, reserved, DRNotice 0 (LID-routed), return path.
  EXPECT_EQ(Get16(std::span(m).subspan(74)), 0);
  EXPECT_EQ(Get16(std::span(m).subspan(76)), 7);
  EXPECT_EQ(Get16(std::span(m).subspan(78)), 0);
  EXPECT_EQ(m[80], kGet);
  EXPECT_EQ(m[81], 0);
  EXPECT_EQ(Get16(std::span(m).subspan(82)), kSwitchInfo);
  EXPECT_EQ(Get16(std::span(m).subspan(84)) | Get16(std::span(m).subspan(86)), 0);
  EXPECT_EQ(Get16(std::span(m).subspan(88)) | Get16(std::span(m).subspan(90)) |
                Get16(std::span(m).subspan(92)),
            0);
  EXPECT_EQ(Get16(std::span(m).subspan(94)), 0x0BAD);
  for (std::size_t i = 96; i < 128; ++i) EXPECT_EQ(m[i], 0) << i;
  EXPECT_TRUE(sw.trap_outstanding(256));
  // Another violation while it is outstanding: counted, no second trap.
  EXPECT_FALSE(Ask(sw, LidSmp(kGet, kSwitchInfo, 0, 0xBAD)).has_value());
  EXPECT_EQ(sw.port_info(0).M_KeyViolations, 2);
  EXPECT_TRUE(sw.PollTraps(10 * kMs + 1).empty());
}

std::vector<uint8_t> WithPKey(std::vector<uint8_t> packet, uint16_t pkey) {
  packet.resize(packet.size() - 6);
  Put16(std::span(packet).subspan(10), pkey);
  ibcrc::AppendCrcs(packet);
  return packet;
}

TEST(SwitchTrap, Trap259OnAPartitionDropBytes) {
  Switch sw = Configured();
  ActivatePort(sw, 1);
  ActivatePort(sw, 2);
  SetLftBlock0(sw, {{3, 1}, {5, 2}});
  Mad keys = LidSmp(kSet, kPKeyTable, 2u << 16);  // port 2: {0xFFFF}, enforced both ways
  Put16(Data(keys).subspan(0), 0xFFFF);
  ASSERT_EQ(Status(*Ask(sw, keys)), 0);
  Mad enforce = LidSmp(kSet, kPortInfo, 2);
  Data(enforce)[36] = 0x50;
  Data(enforce)[43] = 0x0C;
  ASSERT_EQ(Status(*Ask(sw, enforce)), 0);
  const std::vector<uint8_t> payload(8, 1);
  sw.PollTraps(0);  // the link changes' trap 128
  EXPECT_EQ(sw.route(1, WithPKey(Packet(0, 5, 4, 0x10, payload, 0x42), 0x8003)).drop,
            SwitchDrop::kPartition);
  const Mad m = TrapOf(sw.PollTraps(10 * kMs), 259, 2);
  // Details: DataValid (LIDADDR1, LIDADDR2, PKEY, SL, QP1, QP2: bits 0..5), LIDADDR1 (from),
  // LIDADDR2 (to), PKEY, SL | reserved | QP1, reserved | QP2, GIDADDR1/2 (no GRH),
  // SWLIDADDR, PortNo.
  EXPECT_EQ(Get16(std::span(m).subspan(74)), 0x003F);
  EXPECT_EQ(Get16(std::span(m).subspan(76)), 4);
  EXPECT_EQ(Get16(std::span(m).subspan(78)), 5);
  EXPECT_EQ(Get16(std::span(m).subspan(80)), 0x8003);
  EXPECT_EQ(Get16(std::span(m).subspan(82)), 0x0000);
  EXPECT_EQ(Get16(std::span(m).subspan(84)), 0x0042);
  EXPECT_EQ(Get16(std::span(m).subspan(86)), 0x0000);
  EXPECT_EQ(Get16(std::span(m).subspan(88)), 0x0010);
  for (std::size_t i = 90; i < 122; ++i) EXPECT_EQ(m[i], 0) << i;
  EXPECT_EQ(Get16(std::span(m).subspan(122)), 7) << "SWLIDADDR";
  EXPECT_EQ(m[124], 2) << "PortNo";
  for (std::size_t i = 125; i < 128; ++i) EXPECT_EQ(m[i], 0) << i;
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
