// The ports' traps: 144 (CapabilityMask changed), 256 (bad M_Key), 257/258 (bad P_Key/Q_Key),
// their repetition until TrapRepress, and the one-outstanding rule. Expected bytes are written
// from the spec's tables (IBA 7.7 LRH, 9.2 BTH, 9.3.3 DETH, 13.4.8.2 Notice, 14.2.5.1 the
// traps' details), not from the IDL codecs.
#include <gtest/gtest.h>

#include <vector>

#include "hca/device/packet.h"
#include "hca/device/tests/mad_test_util.h"

namespace softib::hca {
namespace {

using testing::GetBe;
using testing::Mad;
using testing::MadBytes;
using testing::Process;
using testing::PutBe;

constexpr uint64_t kOneSecondNs = 1'000'000'000;
constexpr uint16_t kPortLid = 0x0005, kSmLid = 0x0001;
constexpr std::size_t kTrapHeaders = 8 + 12 + 8;  // LRH BTH DETH

// Port 1 at LID 5, its SM at LID 1 on SL 3, SubnetTimeOut 18 (about 1.07 s); what the port
// sends is kept.
struct PortWithSmLid {
  Hca hca;
  BackToBackCable cable;
  std::vector<std::vector<uint8_t>> sent;

  PortWithSmLid() {
    hca.port(1).link = &cable.end(0);
    cable.Attach(1, [this](std::span<const uint8_t> p) { sent.emplace_back(p.begin(), p.end()); });
    Port& p = hca.port(1);
    p.lid = kPortLid;
    p.sm_lid = kSmLid;
    p.sm_sl = 3;
    p.subnet_timeout = 18;
    hca.management_sink = [](const Hca::ManagementDatagram&) {};  // no QP0/QP1: the device's
  }
  std::vector<std::vector<uint8_t>> Sent() {
    cable.Pump();
    return std::exchange(sent, {});
  }
};

MadBytes TrapMadOf(const std::vector<uint8_t>& packet) {
  MadBytes m{};
  std::copy_n(packet.begin() + kTrapHeaders, 256, m.begin());
  return m;
}

// The parts every trap from port 1 shares: a QP0 datagram to the SM, a SubnTrap(Notice) of a
// CA with `trap` and `type`, IssuerLID 5. Returns the MAD.
MadBytes ExpectPortTrap(const std::vector<uint8_t>& p, uint16_t trap, uint8_t type) {
  EXPECT_EQ(p.size(), kTrapHeaders + 256 + 4 + 2);
  EXPECT_EQ(p[0] >> 4, 15) << "VL15";
  EXPECT_EQ(p[1] >> 4, 3) << "SL: MasterSMSL";
  EXPECT_EQ(p[1] & 0x03, 0x02) << "LNH: IBA local";
  EXPECT_EQ(p[2] << 8 | p[3], kSmLid) << "DLID: MasterSMLID";
  EXPECT_EQ(p[6] << 8 | p[7], kPortLid) << "SLID: the port";
  EXPECT_EQ(p[8], 0x64) << "UD SEND only";
  EXPECT_EQ(p[10] << 8 | p[11], 0xFFFF) << "default P_Key";
  EXPECT_EQ(p[13] | p[14] | p[15], 0) << "DestQP 0";
  EXPECT_EQ(p[25] | p[26] | p[27], 0) << "DETH SrcQP 0";
  const MadBytes m = TrapMadOf(p);
  EXPECT_EQ(m[0], 1);
  EXPECT_EQ(m[1], 0x01) << "SubnMgt, LID-routed";
  EXPECT_EQ(m[2], 1);
  EXPECT_EQ(m[3], 0x05) << "Trap";
  EXPECT_EQ(GetBe(m, 8, 2), 0x4341u) << "the SMA's own TIDs";
  EXPECT_EQ(GetBe(m, 16, 2), 0x0002u) << "Notice";
  EXPECT_EQ(m[64], 0x80 | type) << "IsGeneric, Type";
  EXPECT_EQ(GetBe(m, 65, 3), 1u) << "ProducerType: CA";
  EXPECT_EQ(GetBe(m, 68, 2), trap);
  EXPECT_EQ(GetBe(m, 70, 2), kPortLid) << "IssuerLID";
  return m;
}

MadBytes RepressOf(const MadBytes& trap) {
  MadBytes r = trap;
  r[3] = 0x07;  // TrapRepress
  r[8] = 0x99;  // a transport between may own the TID's high half
  return r;
}

TEST(SmaTrap, Trap144WhenIsSmIsSetThenRepeatedUntilRepressed) {
  PortWithSmLid s;
  s.hca.SetNow(10 * kOneSecondNs);
  const uint32_t before = static_cast<uint32_t>(s.hca.port(1).capabilities);
  ASSERT_EQ(s.hca.ModifyCa(1, abi::ModifyCaFlags::PORT_CAPABILITIES, abi::PortCapabilities::IS_SM,
                           {}, 0, 0),
            abi::Status::SUCCESS);
  auto sent = s.Sent();
  ASSERT_EQ(sent.size(), 1u);
  const MadBytes m = ExpectPortTrap(sent[0], 144, 4);  // informational
  EXPECT_EQ(GetBe(m, 72, 2), 1u) << "NoticeToggle 0, NoticeCount 1";
  // Trap 144's details (at Notice byte 10 = MAD byte 74): reserved 16 bits, LIDADDR,
  // 15 reserved bits and OtherLocalChanges, the new CapabilityMask, the change flags.
  EXPECT_EQ(GetBe(m, 74, 2), 0u);
  EXPECT_EQ(GetBe(m, 76, 2), kPortLid);
  EXPECT_EQ(GetBe(m, 78, 2), 0u);
  EXPECT_EQ(GetBe(m, 80, 4), before | 0x2u) << "CapabilityMask with IsSM (bit 1)";
  for (std::size_t i = 84; i < 128; ++i) EXPECT_EQ(m[i], 0) << i;
  EXPECT_TRUE(s.hca.traps_pending());

  // Nothing before the subnet timeout (4.096 us << 18), the same trap after it; the owner
  // is told to tick then.
  const uint64_t interval = 4096ull << 18;
  EXPECT_EQ(s.hca.next_trap_ns(), 10 * kOneSecondNs + interval);
  s.hca.Tick(10 * kOneSecondNs + interval - 1);
  EXPECT_TRUE(s.Sent().empty());
  // IsSM cleared meanwhile: the outstanding trap says so from its next repeat on.
  ASSERT_EQ(s.hca.ModifyCa(1, abi::ModifyCaFlags::PORT_CAPABILITIES, {},
                           abi::PortCapabilities::IS_SM, 0, 0),
            abi::Status::SUCCESS);
  EXPECT_TRUE(s.Sent().empty()) << "one 144 outstanding";
  s.hca.Tick(10 * kOneSecondNs + interval);
  sent = s.Sent();
  ASSERT_EQ(sent.size(), 1u);
  const MadBytes again = ExpectPortTrap(sent[0], 144, 4);
  EXPECT_EQ(GetBe(again, 8, 8), GetBe(m, 8, 8)) << "same TID";
  EXPECT_EQ(GetBe(again, 72, 2), 1u) << "same NoticeCount";
  EXPECT_EQ(GetBe(again, 80, 4), before) << "IsSM cleared";

  // A TrapRepress with another TID changes nothing; the trap's own TID stops it.
  MadBytes wrong = RepressOf(m);
  wrong[15] ^= 1;
  EXPECT_EQ(Process(s.hca, 1, wrong).result, LocalMadResult::kNoReply);
  EXPECT_TRUE(s.hca.traps_pending());
  EXPECT_EQ(s.hca.next_trap_ns(), 10 * kOneSecondNs + 2 * interval);
  EXPECT_EQ(Process(s.hca, 1, RepressOf(m)).result, LocalMadResult::kNoReply);
  EXPECT_FALSE(s.hca.traps_pending());
  EXPECT_EQ(s.hca.next_trap_ns(), UINT64_MAX);
  s.hca.Tick(100 * kOneSecondNs);
  EXPECT_TRUE(s.Sent().empty());

  // The next change is a new notice: new TID, NoticeCount 2.
  ASSERT_EQ(s.hca.ModifyCa(1, abi::ModifyCaFlags::PORT_CAPABILITIES, abi::PortCapabilities::IS_SM,
                           {}, 0, 0),
            abi::Status::SUCCESS);
  sent = s.Sent();
  ASSERT_EQ(sent.size(), 1u);
  const MadBytes next = ExpectPortTrap(sent[0], 144, 4);
  EXPECT_NE(GetBe(next, 8, 8), GetBe(m, 8, 8));
  EXPECT_EQ(GetBe(next, 72, 2), 2u);
}

TEST(SmaTrap, NoSmNoTrap) {
  PortWithSmLid s;
  s.hca.port(1).sm_lid = 0;
  ASSERT_EQ(s.hca.ModifyCa(1, abi::ModifyCaFlags::PORT_CAPABILITIES, abi::PortCapabilities::IS_SM,
                           {}, 0, 0),
            abi::Status::SUCCESS);
  EXPECT_TRUE(s.Sent().empty());
  EXPECT_FALSE(s.hca.traps_pending()) << "the SM reads IsSM when it sweeps";
  s.hca.ModifyCa(1, abi::ModifyCaFlags::PORT_CAPABILITIES, {}, {}, 0, 0);  // no change
  s.hca.port(1).sm_lid = kSmLid;
  s.hca.ModifyCa(1, abi::ModifyCaFlags::PORT_CAPABILITIES, abi::PortCapabilities::IS_SM, {}, 0, 0);
  EXPECT_TRUE(s.Sent().empty()) << "IsSM was set already: no change, no trap";
  // The SM on this very port: it knows its own IsSM.
  s.hca.port(1).sm_lid = kPortLid;
  s.hca.ModifyCa(1, abi::ModifyCaFlags::PORT_CAPABILITIES, {}, abi::PortCapabilities::IS_SM, 0, 0);
  EXPECT_TRUE(s.Sent().empty());
  EXPECT_FALSE(s.hca.traps_pending());
}

TEST(SmaTrap, Trap256ForADirectedRouteSmpWithTheWrongMKey) {
  PortWithSmLid s;
  Port& p = s.hca.port(1);
  p.mkey = 0x1122334455667788ull;
  p.mkey_protect_bits = 2;  // Get refused too
  MadBytes get = Mad(0x81, testing::kGet, testing::kPortInfo, 0, 0xBAD);
  get[6] = 2;                 // HopPointer
  get[7] = 2;                 // HopCount
  PutBe(get, 32, 0xFFFF, 2);  // DrSLID: permissive
  PutBe(get, 34, 0xFFFF, 2);  // DrDLID
  get[192 + 1] = 7;           // ReturnPath[1]
  get[192 + 2] = 3;           // ReturnPath[2]
  EXPECT_EQ(Process(s.hca, 1, get).result, LocalMadResult::kNoReply);
  EXPECT_EQ(p.mkey_violations, 1);
  auto sent = s.Sent();
  ASSERT_EQ(sent.size(), 1u);
  const MadBytes m = ExpectPortTrap(sent[0], 256, 2);  // security
  EXPECT_EQ(GetBe(m, 24, 8), 0x1122334455667788ull) << "the port's M_Key";
  // Details: reserved, LIDADDR, DRSLID, Method, reserved, AttributeID, AttributeModifier,
  // M_Key, reserved, DRNotice | DRPathTruncated | DRHopCount, DRNoticeReturnPath.
  EXPECT_EQ(GetBe(m, 74, 2), 0u);
  EXPECT_EQ(GetBe(m, 76, 2), kPortLid);
  EXPECT_EQ(GetBe(m, 78, 2), 0xFFFFu);
  EXPECT_EQ(m[80], 0x01) << "Get";
  EXPECT_EQ(m[81], 0);
  EXPECT_EQ(GetBe(m, 82, 2), 0x0015u) << "PortInfo";
  EXPECT_EQ(GetBe(m, 84, 4), 0u);
  EXPECT_EQ(GetBe(m, 88, 8), 0xBADu) << "the SMP's M_Key";
  EXPECT_EQ(m[96], 0);
  EXPECT_EQ(m[97], 0x80 | 2) << "DRNotice, 2 hops";
  EXPECT_EQ(m[98], 7);
  EXPECT_EQ(m[99], 3);
  for (std::size_t i = 100; i < 128; ++i) EXPECT_EQ(m[i], 0) << i;

  // More bad SMPs while it is outstanding: counted, not trapped again.
  for (int i = 0; i < 10; ++i) Process(s.hca, 1, get);
  EXPECT_EQ(p.mkey_violations, 11);
  EXPECT_TRUE(s.Sent().empty());
}

// A GSI datagram from LID 9, QP 0x123456 to port 1's QP1 with `pkey` and `qkey`.
std::vector<uint8_t> BadKeyGsiPacket(uint16_t pkey, uint32_t qkey) {
  PacketHeaders h;
  h.lrh.SL = 6;
  h.lrh.DLID = kPortLid;
  h.lrh.SLID = 9;
  h.bth.OpCode = 0x64;
  h.bth.P_Key = pkey;
  h.bth.DestQP = 1;
  h.deth.Q_Key = qkey;
  h.deth.SrcQP = 0x123456;
  const std::vector<uint8_t> mad(256, 0);
  return BuildPacket(h, mad);
}

TEST(SmaTrap, Trap257And258ForGsiKeyViolationsOnePerKind) {
  PortWithSmLid s;
  for (int i = 0; i < 50; ++i)
    s.hca.Receive(1, BadKeyGsiPacket(0x0007, kGsiQkey));                           // no such P_Key
  for (int i = 0; i < 50; ++i) s.hca.Receive(1, BadKeyGsiPacket(0xFFFF, 0x1234));  // bad Q_Key
  EXPECT_EQ(s.hca.port(1).counters.pkey_violations, 50u);
  EXPECT_EQ(s.hca.port(1).counters.qkey_violations, 50u);
  auto sent = s.Sent();
  ASSERT_EQ(sent.size(), 2u) << "a flood becomes one trap per kind";
  for (const auto& [packet, trap, key] :
       {std::tuple{sent[0], 257, 0x0007u}, std::tuple{sent[1], 258, 0x1234u}}) {
    const MadBytes m = ExpectPortTrap(packet, static_cast<uint16_t>(trap), 2);
    // Details: reserved, LIDADDR1 (from), LIDADDR2 (to), KEY, SL | reserved | QP1,
    // reserved | QP2, GIDADDR1, GIDADDR2 (no GRH: zero).
    EXPECT_EQ(GetBe(m, 74, 2), 0u);
    EXPECT_EQ(GetBe(m, 76, 2), 9u);
    EXPECT_EQ(GetBe(m, 78, 2), kPortLid);
    EXPECT_EQ(GetBe(m, 80, 4), key);
    EXPECT_EQ(GetBe(m, 84, 4), 0x60123456u) << "SL 6, QP1";
    EXPECT_EQ(GetBe(m, 88, 4), 0x00000001u) << "QP2: QP1 of the port";
    for (std::size_t i = 92; i < 128; ++i) EXPECT_EQ(m[i], 0) << i;
  }
}

}  // namespace
}  // namespace softib::hca
