// SubnGet/SubnSet of every switch attribute, with the response bytes written by hand from
// the spec's attribute tables (IBA 14.2.5.x).
#include <gtest/gtest.h>

#include <vector>

#include "switch_test_util.h"

namespace softib::fabric::test {
namespace {

std::vector<uint8_t> Bytes(const Mad& mad, std::size_t from, std::size_t count) {
  return std::vector<uint8_t>(mad.begin() + from, mad.begin() + from + count);
}

Mad Expect(Switch& sw, const Mad& request, uint16_t status, uint8_t in_port = 1) {
  const std::optional<Mad> r = Ask(sw, request, in_port);
  EXPECT_TRUE(r.has_value());
  if (!r) return {};
  EXPECT_EQ((*r)[3], kGetResp);
  EXPECT_EQ(Status(*r), status);
  EXPECT_EQ(Bytes(*r, 8, 16), Bytes(request, 8, 16)) << "TID/attribute/modifier echoed";
  return *r;
}

TEST(SwitchSma, NodeInfoGet) {
  Switch sw(TestConfig());
  const Mad r = Expect(sw, LidSmp(kGet, kNodeInfo, 0), 0, /*in_port=*/3);
  const std::vector<uint8_t> expected = {
      0x01, 0x01, 0x02, 0x08,                          // versions, NodeType switch, 8 ports
      0x00, 0x02, 0xc9, 0x03, 0x00, 0xaa, 0x00, 0x00,  // SystemImageGUID
      0x00, 0x02, 0xc9, 0x03, 0x00, 0xaa, 0x00, 0x00,  // NodeGUID
      0x00, 0x02, 0xc9, 0x03, 0x00, 0xaa, 0x00, 0x00,  // PortGUID (port 0)
      0x00, 0x20,                                      // PartitionCap 32
      0xbd, 0x36,                                      // DeviceID
      0x00, 0x00, 0x00, 0xa0,                          // Revision
      0x03,                                            // LocalPortNum: arrived on port 3
      0x00, 0x02, 0xc9};                               // VendorID
  EXPECT_EQ(Bytes(r, kData, 40), expected);
  EXPECT_EQ(Bytes(r, kData + 40, 24), std::vector<uint8_t>(24, 0));
}

TEST(SwitchSma, NodeDescriptionGet) {
  Switch sw(TestConfig());
  const Mad r = Expect(sw, LidSmp(kGet, kNodeDescription, 0), 0);
  std::vector<uint8_t> expected(64, 0);
  const char text[] = "softib switch A";
  std::copy(text, text + sizeof(text) - 1, expected.begin());
  EXPECT_EQ(Bytes(r, kData, 64), expected);
}

TEST(SwitchSma, SwitchInfoGetAndSet) {
  Switch sw(TestConfig());
  Mad r = Expect(sw, LidSmp(kGet, kSwitchInfo, 0), 0);
  std::vector<uint8_t> expected = {
      0xc0, 0x00,         // LinearFDBCap 49152
      0x00, 0x00,         // RandomFDBCap
      0x04, 0x00,         // MulticastFDBCap 1024
      0x00, 0x00,         // LinearFDBTop
      0x00,               // DefaultPort
      0xff, 0xff,         // DefaultMulticast(Not)PrimaryPort
      0x90,               // LifeTimeValue 18 (bits 7..3), PortStateChange 0, OptimizedSLtoVL 0
      0x00, 0x00,         // LIDsPerPort
      0x00, 0x20,         // PartitionEnforcementCap 32
      0xc8,               // Inbound/OutboundEnforcementCap, EnhancedPort0
      0x00, 0xbf, 0xff};  // MulticastFDBTop
  EXPECT_EQ(Bytes(r, kData, 20), expected);

  // A link coming up sets PortStateChange; the SM clears it by writing 1, and sets
  // LinearFDBTop, DefaultPort and LifeTimeValue.
  sw.SetLinkUp(2, true);
  r = Expect(sw, LidSmp(kGet, kSwitchInfo, 0), 0);
  EXPECT_EQ(r[kData + 11], 0x94);
  Mad set = LidSmp(kSet, kSwitchInfo, 0);
  Put16(Data(set).subspan(6), 0x0010);  // LinearFDBTop
  Data(set)[8] = 2;                     // DefaultPort
  Data(set)[9] = 0xff;
  Data(set)[10] = 0xff;
  Data(set)[11] = (10 << 3) | 0x04;  // LifeTimeValue 10, PortStateChange 1 = clear
  Data(set)[0] = 0x12;               // LinearFDBCap is read-only
  r = Expect(sw, set, 0);
  expected[6] = 0x00;
  expected[7] = 0x10;
  expected[8] = 0x02;
  expected[11] = 0x50;
  EXPECT_EQ(Bytes(r, kData, 20), expected);
  EXPECT_EQ(sw.switch_info().LinearFDBTop, 0x10);

  // LinearFDBTop beyond the capability is refused and changes nothing.
  Put16(Data(set).subspan(6), 0xC000);
  r = Expect(sw, set, 0x001C);
  EXPECT_EQ(sw.switch_info().LinearFDBTop, 0x10);
  Data(set)[8] = 9;  // DefaultPort beyond 8 ports
  Put16(Data(set).subspan(6), 0x20);
  Expect(sw, set, 0x001C);
  Expect(sw, LidSmp(kGet, kSwitchInfo, 1), 0x001C);  // modifier must be 0
}

TEST(SwitchSma, PortInfoExternalPort) {
  Switch sw(TestConfig());
  sw.SetLinkUp(1, true);
  Mad r = Expect(sw, LidSmp(kGet, kPortInfo, 1), 0, /*in_port=*/1);
  std::vector<uint8_t> expected(64, 0);  // bytes 0..27 belong to port 0 only
  expected[28] = 0x01;                   // LocalPortNum: the port the SMP came in on
  expected[29] = 0x03;                   // LinkWidthEnabled 1X|4X
  expected[30] = 0x03;                   // LinkWidthSupported
  expected[31] = 0x02;                   // LinkWidthActive 4X
  expected[32] = 0x72;                   // LinkSpeedSupported 7, PortState Init
  expected[33] = 0x52;                   // PhysicalState LinkUp, LinkDownDefault Polling
  expected[35] = 0x47;                   // LinkSpeedActive QDR, LinkSpeedEnabled 7
  expected[36] = 0x50;                   // NeighborMTU 4096, MasterSMSL 0
  expected[37] = 0x40;                   // VLCap VL0-7
  expected[39] = 0x08;                   // VLArbitrationHighCap
  expected[40] = 0x08;                   // VLArbitrationLowCap
  expected[41] = 0x05;                   // MTUCap 4096
  expected[42] = 0xff;                   // VLStallCount 7, HOQLife 31
  expected[43] = 0x40;                   // OperationalVLs 4
  EXPECT_EQ(Bytes(r, kData, 64), expected);

  // A port with no link is Down/Polling; asked about from port 5.
  r = Expect(sw, LidSmp(kGet, kPortInfo, 2), 0, /*in_port=*/5);
  EXPECT_EQ(r[kData + 28], 5);
  EXPECT_EQ(r[kData + 32], 0x71);
  EXPECT_EQ(r[kData + 33], 0x22);

  Expect(sw, LidSmp(kGet, kPortInfo, 9), 0x001C);  // no port 9
  // Bit 31 (SMSupportsExtendedSpeeds) does not change which port is meant.
  r = Expect(sw, LidSmp(kGet, kPortInfo, 0x80000001u), 0, /*in_port=*/1);
  EXPECT_EQ(Bytes(r, kData, 64), expected);
}

// Set(PortInfo) on an external port: Init -> Armed -> Active, with the SM's NeighborMTU and
// OperationalVLs; illegal transitions are refused with 0x001C and change nothing.
TEST(SwitchSma, PortInfoStateMachine) {
  Switch sw(TestConfig());
  sw.SetLinkUp(1, true);
  auto set_state = [&](uint8_t state, uint16_t status) {
    Mad set = LidSmp(kSet, kPortInfo, 1);
    Data(set)[32] = state;  // LinkSpeedSupported nibble is read-only
    Data(set)[36] = 0x40;   // NeighborMTU 2048
    Data(set)[43] = 0x20;   // OperationalVLs VL0-1
    return Expect(sw, set, status);
  };
  Mad r = set_state(0x04, 0x001C);  // Init -> Active skips Armed
  EXPECT_EQ(r[kData + 32], 0x72);
  EXPECT_EQ(r[kData + 36], 0x50) << "a refused Set changes nothing";
  set_state(0x02, 0x001C);  // Init is not a state to set
  set_state(0x05, 0x001C);
  r = set_state(0x03, 0);  // Armed
  EXPECT_EQ(r[kData + 32], 0x73);
  EXPECT_EQ(r[kData + 36], 0x40);
  EXPECT_EQ(r[kData + 43], 0x20);
  r = set_state(0x04, 0);  // Active
  EXPECT_EQ(r[kData + 32], 0x74);
  r = set_state(0x03, 0x001C);  // Active -> Armed
  EXPECT_EQ(sw.port_info(1).PortState, 4);
  r = set_state(0x00, 0);  // no change
  EXPECT_EQ(r[kData + 32], 0x74);
  // The SM takes the link down: it retrains and is back in Init, without PortStateChange.
  Expect(
      sw,
      [] {
        Mad m = LidSmp(kSet, kSwitchInfo, 0);
        Data(m)[11] = 0x04;
        return m;
      }(),
      0);
  r = set_state(0x01, 0);
  EXPECT_EQ(r[kData + 32], 0x72);
  EXPECT_EQ(sw.switch_info().PortStateChange, 0);

  // A port without a link cannot be armed.
  Mad arm2 = LidSmp(kSet, kPortInfo, 2);
  Data(arm2)[32] = 0x03;
  Data(arm2)[36] = 0x50;
  Expect(sw, arm2, 0x001C);

  // Disabling a port takes it down until polling is set again.
  Mad disable = LidSmp(kSet, kPortInfo, 1);
  Data(disable)[33] = 0x30;
  Data(disable)[36] = 0x50;
  r = Expect(sw, disable, 0);
  EXPECT_EQ(r[kData + 32], 0x71);
  EXPECT_EQ(r[kData + 33], 0x32);
  EXPECT_EQ(sw.switch_info().PortStateChange, 1) << "the link went away: a link event";
  Data(disable)[33] = 0x20;
  r = Expect(sw, disable, 0);
  EXPECT_EQ(r[kData + 32], 0x72);
  EXPECT_EQ(r[kData + 33], 0x52);

  // Widths/speeds outside what the port supports, and an MTU above MTUCap.
  Mad bad = LidSmp(kSet, kPortInfo, 1);
  Data(bad)[36] = 0x50;
  Data(bad)[29] = 0x04;  // 8X
  Expect(sw, bad, 0x001C);
  Data(bad)[29] = 0xFF;  // all supported: fine
  Expect(sw, bad, 0);
  Data(bad)[35] = 0x08;  // LinkSpeedEnabled bit 3 not supported
  Expect(sw, bad, 0x001C);
  Data(bad)[35] = 0x00;
  Data(bad)[36] = 0x60;
  Expect(sw, bad, 0x001C);
}

TEST(SwitchSma, PortInfoPortZero) {
  Switch sw(TestConfig());
  Mad set = LidSmp(kSet, kPortInfo, 0);
  Put64(Data(set).subspan(8), 0xfe80000000000000ULL);  // GIDPrefix
  Put16(Data(set).subspan(16), 0x0005);                // LID
  Put16(Data(set).subspan(18), 0x0001);                // MasterSMLID
  Data(set)[34] = 0x02;                                // LMC 2
  Data(set)[36] = 0x53;                                // NeighborMTU 4096, MasterSMSL 3
  Data(set)[51] = 0x12;                                // SubnetTimeOut 18
  const Mad r = Expect(sw, set, 0, /*in_port=*/4);
  std::vector<uint8_t> expected(64, 0);
  expected[8] = 0xfe;
  expected[9] = 0x80;
  expected[17] = 0x05;
  expected[19] = 0x01;
  // CapabilityMask 0x1848: IsPKeySwitchExternalPortTrapSupported (12) |
  // IsSystemImageGUIDSupported (11) | IsSLMappingSupported (6) | IsTrapSupported (3).
  expected[22] = 0x18;
  expected[23] = 0x48;
  expected[28] = 0x04;
  expected[29] = 0x03;
  expected[30] = 0x03;
  expected[31] = 0x02;
  expected[32] = 0x74;  // port 0 is Active
  expected[33] = 0x52;
  expected[34] = 0x02;
  expected[35] = 0x47;
  expected[36] = 0x53;
  expected[37] = 0x40;
  expected[39] = 0x08;
  expected[40] = 0x08;
  expected[41] = 0x05;
  // VLStallCount/HOQLife as the Set wrote them (0); OperationalVLs 0 means no change.
  expected[43] = 0x40;
  expected[50] = 0x01;  // GUIDCap
  expected[51] = 0x12;
  expected[52] = 0x08;  // RespTimeValue
  for (std::size_t i = 0; i < 64; ++i) EXPECT_EQ(r[kData + i], expected[i]) << "byte " << i;
  EXPECT_EQ(sw.lid(), 5);

  Mad bad_lid = set;
  Put16(Data(bad_lid).subspan(16), 0xC001);  // a multicast LID
  Expect(sw, bad_lid, 0x001C);
  Mad down = set;
  Data(down)[32] = 0x01;  // port 0 stays Active
  Expect(sw, down, 0x001C);
  EXPECT_EQ(sw.lid(), 5);
}

TEST(SwitchSma, PKeyTable) {
  Switch sw(TestConfig());
  Mad r = Expect(sw, LidSmp(kGet, kPKeyTable, 0), 0);
  std::vector<uint8_t> expected(64, 0);
  expected[0] = 0xff;
  expected[1] = 0xff;
  EXPECT_EQ(Bytes(r, kData, 64), expected);

  Mad set = LidSmp(kSet, kPKeyTable, (3u << 16) | 0);  // port 3, block 0
  Put16(Data(set).subspan(0), 0xffff);
  Put16(Data(set).subspan(2), 0x8001);
  Put16(Data(set).subspan(62), 0x7fff);
  r = Expect(sw, set, 0);
  expected[2] = 0x80;
  expected[3] = 0x01;
  expected[62] = 0x7f;
  expected[63] = 0xff;
  EXPECT_EQ(Bytes(r, kData, 64), expected);
  r = Expect(sw, LidSmp(kGet, kPKeyTable, 3u << 16), 0);
  EXPECT_EQ(Bytes(r, kData, 64), expected);

  Expect(sw, LidSmp(kGet, kPKeyTable, 9u << 16), 0x001C);  // no port 9
  Expect(sw, LidSmp(kGet, kPKeyTable, 1), 0x001C);         // block 1 beyond 32 entries
}

TEST(SwitchSma, SlToVlMappingTable) {
  Switch sw(TestConfig());
  Mad set = LidSmp(kSet, kSlToVl, (1u << 8) | 2);  // input port 1, output port 2
  const std::vector<uint8_t> table = {0x01, 0x23, 0x45, 0x67, 0x01, 0x23, 0x45, 0x6f};
  std::copy(table.begin(), table.end(), Data(set).begin());
  Mad r = Expect(sw, set, 0);
  EXPECT_EQ(Bytes(r, kData, 8), table);
  r = Expect(sw, LidSmp(kGet, kSlToVl, (1u << 8) | 2), 0);
  EXPECT_EQ(Bytes(r, kData, 8), table);
  r = Expect(sw, LidSmp(kGet, kSlToVl, (2u << 8) | 1), 0);
  EXPECT_EQ(Bytes(r, kData, 8), std::vector<uint8_t>(8, 0));
  Expect(sw, LidSmp(kGet, kSlToVl, (9u << 8) | 1), 0x001C);
  Expect(sw, LidSmp(kGet, kSlToVl, 9), 0x001C);
}

TEST(SwitchSma, VlArbitrationTable) {
  Switch sw(TestConfig());
  Mad set = LidSmp(kSet, kVlArb, (1u << 16) | 2);  // low table 0-31, port 2
  for (int i = 0; i < 32; ++i) {
    Data(set)[2 * i] = static_cast<uint8_t>(i % 8);  // VL
    Data(set)[2 * i + 1] = static_cast<uint8_t>(0x10 + i);
  }
  Mad r = Expect(sw, set, 0);
  // VLArbitrationLowCap is 8: entries 8..31 do not exist and read as 0.
  std::vector<uint8_t> expected(64, 0);
  for (int i = 0; i < 8; ++i) {
    expected[2 * i] = static_cast<uint8_t>(i);
    expected[2 * i + 1] = static_cast<uint8_t>(0x10 + i);
  }
  EXPECT_EQ(Bytes(r, kData, 64), expected);
  r = Expect(sw, LidSmp(kGet, kVlArb, (3u << 16) | 2), 0);  // the high table is separate
  EXPECT_EQ(Bytes(r, kData, 64), std::vector<uint8_t>(64, 0));
  Expect(sw, LidSmp(kGet, kVlArb, (2u << 16) | 2), 0x001C);  // entries 32-63 beyond the cap
  Expect(sw, LidSmp(kGet, kVlArb, (5u << 16) | 2), 0x001C);
  Expect(sw, LidSmp(kGet, kVlArb, (1u << 16) | 9), 0x001C);
}

TEST(SwitchSma, LinearForwardingTable) {
  Switch sw(TestConfig());
  Mad r = Expect(sw, LidSmp(kGet, kLft, 0), 0);
  EXPECT_EQ(Bytes(r, kData, 64), std::vector<uint8_t>(64, 0xff));
  Mad set = LidSmp(kSet, kLft, 1);  // LIDs 64..127
  std::vector<uint8_t> ports(64, 0xff);
  ports[0] = 1;   // LID 64
  ports[1] = 2;   // LID 65
  ports[63] = 0;  // LID 127: the management port
  std::copy(ports.begin(), ports.end(), Data(set).begin());
  r = Expect(sw, set, 0);
  EXPECT_EQ(Bytes(r, kData, 64), ports);
  EXPECT_EQ(sw.lft_entry(65), 2);
  Expect(sw, LidSmp(kGet, kLft, 767), 0);       // the last block of 49152 LIDs
  Expect(sw, LidSmp(kGet, kLft, 768), 0x001C);  // beyond LinearFDBCap
}

TEST(SwitchSma, MulticastForwardingTable) {
  Switch sw(TestConfig(0x10, 20));               // 20 ports: mask positions 0 and 1
  Mad set = LidSmp(kSet, kMft, (1u << 28) | 2);  // ports 16..31, MLIDs 0xC040..0xC05F
  Put16(Data(set).subspan(0), 0x0013);           // MLID 0xC040: ports 16, 17, 20
  Put16(Data(set).subspan(2), 0x0020);           // MLID 0xC041: port 21 (no such port)
  Mad r = Expect(sw, set, 0);
  std::vector<uint8_t> expected(64, 0);
  expected[1] = 0x13;
  EXPECT_EQ(Bytes(r, kData, 64), expected);
  r = Expect(sw, LidSmp(kGet, kMft, 2), 0);  // position 0 of the same block is separate
  EXPECT_EQ(Bytes(r, kData, 64), std::vector<uint8_t>(64, 0));
  Expect(sw, LidSmp(kGet, kMft, 2u << 28), 0x001C);  // position 2: ports 32..47
  Expect(sw, LidSmp(kGet, kMft, 32), 0x001C);        // block 32: beyond 1024 MLIDs
  Expect(sw, LidSmp(kGet, kMft, 31), 0);
}

TEST(SwitchSma, GuidInfo) {
  Switch sw(TestConfig());
  const Mad r = Expect(sw, LidSmp(kGet, kGuidInfo, 0), 0);
  std::vector<uint8_t> expected(64, 0);
  const std::vector<uint8_t> guid = {0x00, 0x02, 0xc9, 0x03, 0x00, 0xaa, 0x00, 0x00};
  std::copy(guid.begin(), guid.end(), expected.begin());
  EXPECT_EQ(Bytes(r, kData, 64), expected);
  Expect(sw, LidSmp(kGet, kGuidInfo, 1), 0x001C);
  // GUIDCap 1: the only GUID is port 0's own, which a Set does not change.
  Mad set = LidSmp(kSet, kGuidInfo, 0);
  Put64(Data(set), 0x1111111111111111ULL);
  const Mad after = Expect(sw, set, 0);
  EXPECT_EQ(Bytes(after, kData, 64), expected);
}

TEST(SwitchSma, UnsupportedMethodsAttributesAndModifiers) {
  Switch sw(TestConfig());
  Expect(sw, LidSmp(kGet, kSmInfo, 0), 0x000C);  // no SM on a switch
  Expect(sw, LidSmp(kSet, kSmInfo, 1), 0x000C);
  Expect(sw, LidSmp(kSet, kNodeInfo, 0), 0x000C);
  Expect(sw, LidSmp(kSet, kNodeDescription, 0), 0x000C);
  Expect(sw, LidSmp(kGet, kRft, 0), 0x000C);  // RandomFDBCap 0
  Expect(sw, LidSmp(kGet, 0x1234, 0), 0x000C);
  Expect(sw, LidSmp(0x03, kNodeInfo, 0), 0x0008);  // Send is no SubnMgt method
  Expect(sw, LidSmp(0x12, kNodeInfo, 0), 0x0008);
  Expect(sw, LidSmp(kGet, kNodeInfo, 1), 0x001C);
  Expect(sw, LidSmp(kGet, kNodeDescription, 7), 0x001C);

  Mad v2 = LidSmp(kGet, kNodeInfo, 0);
  v2[2] = 2;  // ClassVersion 2
  Expect(sw, v2, 0x0004);

  Mad base2 = LidSmp(kGet, kNodeInfo, 0);
  base2[0] = 2;
  EXPECT_FALSE(Ask(sw, base2).has_value());
  Mad resp = LidSmp(kGetResp, kNodeInfo, 0);
  EXPECT_FALSE(Ask(sw, resp).has_value());
  EXPECT_EQ(sw.drops(SwitchDrop::kNoSm), 1u);
  Mad trap_repress = LidSmp(0x07, 0x0002, 0);
  EXPECT_FALSE(Ask(sw, trap_repress).has_value());
  Mad trap = LidSmp(0x05, 0x0002, 0);
  EXPECT_FALSE(Ask(sw, trap).has_value());
  Mad perf = LidSmp(kGet, kNodeInfo, 0);
  perf[1] = 0x04;
  EXPECT_FALSE(Ask(sw, perf).has_value());
  std::array<uint8_t, 100> short_mad{};
  EXPECT_FALSE(sw.HandleSmp(short_mad, 1).has_value());
}

// A directed-route SMP keeps its DR header in the response: only Method and Status change
// (Status is 15 bits there, D being set on the way back by runtime/smp).
TEST(SwitchSma, DirectedRouteResponseKeepsThePath) {
  Switch sw(TestConfig());
  Mad dr = DrSmp(kGet, kSmInfo, 0, {1, 4});
  dr[kHopPointer] = 3;
  const Mad r = Expect(sw, dr, 0x000C);
  EXPECT_EQ(Bytes(r, 6, 2), Bytes(dr, 6, 2));
  EXPECT_EQ(Bytes(r, 32, 4), Bytes(dr, 32, 4));
  EXPECT_EQ(Bytes(r, kInitialPath, 128), Bytes(dr, kInitialPath, 128));
}

}  // namespace
}  // namespace softib::fabric::test

namespace softib::fabric::test {
namespace {

// What OpenSM's link manager sends a switch port (docs/notes/ibsim-and-sm-facts.md 5.1):
// a NOP Set with modifier bit 31, LinkSpeedEnabled 0xF, LinkWidthEnabled 4X, NeighborMTU and
// OperationalVLs; then Armed; then Active.
TEST(SwitchSma, OpenSmLinkManagerSequence) {
  Switch sw(TestConfig());
  sw.SetLinkUp(3, true);
  Mad nop = LidSmp(0x02, 0x0015, 0x80000003u);
  Data(nop)[29] = 0x02;  // LinkWidthEnabled 4X
  Data(nop)[35] = 0x0F;  // LinkSpeedEnabled: all supported
  Data(nop)[36] = 0x40;  // NeighborMTU 2048
  Data(nop)[43] = 0x30;  // OperationalVLs VL0-3
  std::optional<Mad> r = Ask(sw, nop);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(Status(*r), 0);
  EXPECT_EQ((*r)[kData + 29], 0x02);
  EXPECT_EQ((*r)[kData + 32], 0x72);
  EXPECT_EQ((*r)[kData + 35], 0x47);
  EXPECT_EQ((*r)[kData + 43], 0x30);
  for (uint8_t state : {0x03, 0x04}) {
    Mad m = nop;
    Data(m)[32] = state;
    r = Ask(sw, m);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(Status(*r), 0);
    EXPECT_EQ((*r)[kData + 32], 0x70 | state);
  }
  EXPECT_EQ(sw.port_info(3).PortState, 4);
}

}  // namespace
}  // namespace softib::fabric::test
