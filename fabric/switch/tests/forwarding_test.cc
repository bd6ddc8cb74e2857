// The relay: directed-route SMPs walked through a chain of three switches by calling
// Receive() on each, LID-routed SMPs to and from a switch, LFT/MFT programming by SubnSet
// followed by forwarding decisions, and malformed packets.
#include <gtest/gtest.h>

#include <vector>

#include "switch_test_util.h"

namespace softib::fabric::test {
namespace {

// The only transmit `out` holds, on `port`.
std::vector<uint8_t> Single(const std::vector<Transmit>& out, uint8_t port) {
  EXPECT_EQ(out.size(), 1u);
  if (out.size() != 1) return {};
  EXPECT_EQ(out[0].port, port);
  return out[0].bytes;
}

void Cable(Switch& sw, std::initializer_list<uint8_t> ports) {
  for (uint8_t p : ports) sw.SetLinkUp(p, true);
}

// A packet is the SM's; H is a CA on S1 port 1. S1 port 2 - S2 port 5, S2 port 3 - S3 port 4.
struct Chain {
  Switch s1{TestConfig(0x1100, 8)};
  Switch s2{TestConfig(0x2200, 8)};
  Switch s3{TestConfig(0x3300, 8)};
  Chain() {
    Cable(s1, {1, 2});
    Cable(s2, {5, 3});
    Cable(s3, {4});
  }
};

TEST(SwitchForwarding, DirectedRouteThroughThreeSwitches) {
  Chain c;
  Mad request = DrSmp(kGet, kNodeInfo, 0, {1, 2, 3});
  request[kHopPointer] = 1;  // H's send side (C14-9:1) already moved it
  std::vector<uint8_t> pkt = SmpPacket(request);

  pkt = Single(c.s1.Receive(1, pkt), 2);
  ASSERT_FALSE(pkt.empty());
  EXPECT_EQ(MadOf(pkt)[kHopPointer], 2);
  EXPECT_EQ(MadOf(pkt)[kReturnPath + 1], 1);
  EXPECT_TRUE(CrcsGood(pkt)) << "the rewritten SMP carries rebuilt CRCs";

  pkt = Single(c.s2.Receive(5, pkt), 3);
  ASSERT_FALSE(pkt.empty());
  EXPECT_EQ(MadOf(pkt)[kHopPointer], 3);
  EXPECT_EQ(MadOf(pkt)[kReturnPath + 2], 5);

  pkt = Single(c.s3.Receive(4, pkt), 4);  // S3's SMA answers out of the arrival port
  ASSERT_FALSE(pkt.empty());
  Mad resp = MadOf(pkt);
  EXPECT_EQ(resp[3], kGetResp);
  EXPECT_EQ(resp[kStatus], 0x80) << "D set, status 0";
  EXPECT_EQ(resp[kStatus + 1], 0x00);
  EXPECT_EQ(resp[kHopPointer], 3);
  EXPECT_EQ(Get16(std::span(pkt).subspan(2)), 0xFFFF) << "LRH DLID permissive";
  EXPECT_EQ(pkt[0] >> 4, 15) << "VL15";
  EXPECT_TRUE(CrcsGood(pkt));

  pkt = Single(c.s2.Receive(3, pkt), 5);
  ASSERT_FALSE(pkt.empty());
  EXPECT_EQ(MadOf(pkt)[kHopPointer], 2);
  pkt = Single(c.s1.Receive(2, pkt), 1);
  ASSERT_FALSE(pkt.empty());
  resp = MadOf(pkt);
  EXPECT_EQ(resp[kHopPointer], 1);  // H's receive side takes it to 0 (runtime/smp tests)
  EXPECT_EQ(resp[kReturnPath + 1], 1);
  EXPECT_EQ(resp[kReturnPath + 2], 5);
  EXPECT_EQ(resp[kReturnPath + 3], 4);
  for (std::size_t i = 0; i < 64; ++i) EXPECT_EQ(resp[kInitialPath + i], request[kInitialPath + i]);
  // S3's NodeInfo: NodeGUID at data bytes 12..19, LocalPortNum at 36.
  EXPECT_EQ(resp[kData + 2], 0x02);
  EXPECT_EQ(resp[kData + 18], 0x33);
  EXPECT_EQ(resp[kData + 19], 0x00);
  EXPECT_EQ(resp[kData + 36], 4);
  EXPECT_TRUE(CrcsGood(pkt));
  EXPECT_EQ(c.s1.total_drops() + c.s2.total_drops() + c.s3.total_drops(), 0u);
}

// What a switch rewrote carries CRCs it built, marked intact; the next switch checks a
// relayed SMP's CRCs unless it is told the bytes are those very ones (Switch::Receive).
TEST(SwitchForwarding, OnlyIntactRelayedSmpsSkipTheCrcCheck) {
  Chain c;
  Mad request = DrSmp(kGet, kNodeInfo, 0, {1, 2, 3});
  request[kHopPointer] = 1;
  const std::vector<Transmit> out = c.s1.Receive(1, SmpPacket(request));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].intact);
  EXPECT_TRUE(CrcsGood(out[0].bytes));

  std::vector<uint8_t> corrupted = out[0].bytes;
  corrupted[kMadInPacket + 40] ^= 1;  // as a cable's corruption fault would
  EXPECT_TRUE(c.s2.Receive(5, corrupted).empty());
  EXPECT_EQ(c.s2.drops(SwitchDrop::kBadCrc), 1u);

  const std::vector<uint8_t> checked = Single(c.s2.Receive(5, out[0].bytes), 3);
  const std::vector<Transmit> trusted = c.s2.Receive(5, out[0].bytes, true);
  ASSERT_EQ(trusted.size(), 1u);
  EXPECT_EQ(trusted[0].bytes, checked) << "the same relay, byte for byte";
  EXPECT_TRUE(CrcsGood(trusted[0].bytes));
  EXPECT_TRUE(trusted[0].intact);
}

// The SM programs S1 by directed route (LID, LFT), then talks to it LID-routed.
TEST(SwitchForwarding, LidRoutedSmpAfterProgramming) {
  Switch s1(TestConfig(0x1100, 8));
  Cable(s1, {1, 2});
  Mad set_lid = DrSmp(kSet, kPortInfo, 0, {1});
  set_lid[kHopPointer] = 1;
  Put16(Data(set_lid).subspan(16), 7);  // LID 7
  Put16(Data(set_lid).subspan(18), 3);  // SM LID 3
  Data(set_lid)[36] = 0x50;
  std::vector<uint8_t> pkt = Single(s1.Receive(1, SmpPacket(set_lid)), 1);
  ASSERT_FALSE(pkt.empty());
  EXPECT_EQ(Status(MadOf(pkt)) & 0x7FFF, 0);
  EXPECT_EQ(s1.lid(), 7);

  Mad set_top = DrSmp(kSet, kSwitchInfo, 0, {1});
  set_top[kHopPointer] = 1;
  Put16(Data(set_top).subspan(6), 63);
  Single(s1.Receive(1, SmpPacket(set_top)), 1);
  Mad set_lft = DrSmp(kSet, kLft, 0, {1});
  set_lft[kHopPointer] = 1;
  std::fill(Data(set_lft).begin(), Data(set_lft).end(), 0xFF);
  Data(set_lft)[3] = 1;  // LID 3 (the SM) behind port 1
  Data(set_lft)[7] = 0;  // LID 7: this switch
  Data(set_lft)[9] = 2;  // LID 9 behind port 2
  Single(s1.Receive(1, SmpPacket(set_lft)), 1);

  // LID-routed Get(NodeInfo) from LID 3 to LID 7: the response goes to LID 3 by the LFT.
  pkt = Single(s1.Receive(1, SmpPacket(LidSmp(kGet, kNodeInfo, 0), 7, 3)), 1);
  ASSERT_FALSE(pkt.empty());
  EXPECT_EQ(Get16(std::span(pkt).subspan(2)), 3) << "DLID = the requester";
  EXPECT_EQ(Get16(std::span(pkt).subspan(6)), 7) << "SLID = the switch";
  EXPECT_EQ(MadOf(pkt)[3], kGetResp);
  EXPECT_TRUE(CrcsGood(pkt));

  // A LID-routed SMP for LID 9 passes through untouched (same bytes, same CRCs).
  const std::vector<uint8_t> through = SmpPacket(LidSmp(kGet, kNodeInfo, 0), 9, 3);
  RouteResult r = s1.route(1, through);
  ASSERT_FALSE(r.drop.has_value());
  EXPECT_EQ(r.egress, std::vector<uint8_t>{2});
  EXPECT_TRUE(r.rewritten.empty());
  EXPECT_EQ(Single(s1.Receive(1, through), 2), through);
}

// The SM (LID 3) reaches S1 (LID 7) LID-routed, S1 relays by directed route to S2, and the
// response comes back through S1 out of the port the request came in on, with HopPointer 1:
// the next switch towards the SM (C14-13:3) sends it LID-routed to DrSLID.
TEST(SwitchForwarding, LidRoutedThenDirectedRoute) {
  Chain c;
  Mad set_lid = DrSmp(kSet, kPortInfo, 0, {1});
  set_lid[kHopPointer] = 1;
  Put16(Data(set_lid).subspan(16), 7);
  Data(set_lid)[36] = 0x50;
  Single(c.s1.Receive(1, SmpPacket(set_lid)), 1);

  Mad request = DrSmp(kGet, kNodeInfo, 0, {1, 2});
  Put16(std::span(request).subspan(32), 3);  // DrSLID: the SM's LID
  request[kHopPointer] = 1;
  std::vector<uint8_t> pkt = Single(c.s1.Receive(1, SmpPacket(request, 7, 3)), 2);
  ASSERT_FALSE(pkt.empty());
  EXPECT_EQ(MadOf(pkt)[kReturnPath + 1], 1);
  EXPECT_EQ(Get16(std::span(pkt).subspan(2)), 0xFFFF) << "permissive DLID on the DR part";
  pkt = Single(c.s2.Receive(5, pkt), 5);
  ASSERT_FALSE(pkt.empty());
  pkt = Single(c.s1.Receive(2, pkt), 1);
  ASSERT_FALSE(pkt.empty());
  EXPECT_EQ(MadOf(pkt)[kHopPointer], 1);
  EXPECT_EQ(MadOf(pkt)[kData + 19], 0x00);
  EXPECT_EQ(MadOf(pkt)[kData + 18], 0x22);  // S2's NodeGUID

  // S0 (LID 1), between the SM and S1: its port 2 faces S1, the SM (LID 3) is behind port 6.
  Switch s0(TestConfig(0x0100, 8));
  Cable(s0, {2, 6});
  Mad lid = LidSmp(kSet, kPortInfo, 0);
  Put16(Data(lid).subspan(16), 1);
  Data(lid)[36] = 0x50;
  ASSERT_EQ(Status(*Ask(s0, lid)), 0);
  Mad top = LidSmp(kSet, kSwitchInfo, 0);
  Put16(Data(top).subspan(6), 63);
  ASSERT_EQ(Status(*Ask(s0, top)), 0);
  Mad lft = LidSmp(kSet, kLft, 0);
  std::fill(Data(lft).begin(), Data(lft).end(), 0xFF);
  Data(lft)[3] = 6;
  ASSERT_EQ(Status(*Ask(s0, lft)), 0);
  pkt = Single(s0.Receive(2, pkt), 6);
  ASSERT_FALSE(pkt.empty());
  EXPECT_EQ(MadOf(pkt)[kHopPointer], 0);
  EXPECT_EQ(Get16(std::span(pkt).subspan(2)), 3) << "LID-routed to DrSLID";
  EXPECT_EQ(Get16(std::span(pkt).subspan(6)), 1);
  EXPECT_TRUE(CrcsGood(pkt));
}

// LFT programmed by SubnSet, then data packets: forwarded, unprogrammed, above
// LinearFDBTop, to a port that is not Active, from a port that is not Active.
TEST(SwitchForwarding, UnicastByLft) {
  Switch sw(TestConfig(0x1100, 8));
  Cable(sw, {1, 2, 3});
  auto activate = [&](uint8_t port) {
    for (uint8_t state : {0x03, 0x04}) {
      Mad m = LidSmp(kSet, kPortInfo, port);
      Data(m)[32] = state;
      Data(m)[36] = 0x50;
      ASSERT_EQ(Status(*Ask(sw, m)), 0);
    }
  };
  activate(1);
  activate(2);
  Mad top = LidSmp(kSet, kSwitchInfo, 0);
  Put16(Data(top).subspan(6), 0x0043);  // LinearFDBTop 67
  ASSERT_EQ(Status(*Ask(sw, top)), 0);
  Mad lft = LidSmp(kSet, kLft, 1);  // LIDs 64..127
  std::fill(Data(lft).begin(), Data(lft).end(), 0xFF);
  Data(lft)[0] = 2;  // LID 64 -> port 2
  Data(lft)[1] = 3;  // LID 65 -> port 3 (Init only)
  Data(lft)[2] = 9;  // LID 66 -> no such port
  Data(lft)[4] = 1;  // LID 68 -> above LinearFDBTop
  ASSERT_EQ(Status(*Ask(sw, lft)), 0);

  const std::vector<uint8_t> payload(64, 0xAB);
  const std::vector<uint8_t> to64 = Packet(0, 64, 10, 0x12, payload, 0x34);
  RouteResult r = sw.route(1, to64);
  ASSERT_FALSE(r.drop.has_value());
  EXPECT_EQ(r.egress, std::vector<uint8_t>{2});
  EXPECT_TRUE(r.rewritten.empty()) << "unchanged packets keep their CRCs";
  EXPECT_EQ(Single(sw.Receive(1, to64), 2), to64);
  EXPECT_EQ(sw.counters(2).xmit_packets, 1u);

  EXPECT_EQ(sw.route(1, Packet(0, 65, 10, 0x12, payload)).drop, SwitchDrop::kEgressNotActive);
  EXPECT_EQ(sw.counters(3).xmit_discards, 1u);
  EXPECT_EQ(sw.route(1, Packet(0, 66, 10, 0x12, payload)).drop, SwitchDrop::kUnprogrammedLid);
  EXPECT_EQ(sw.route(1, Packet(0, 68, 10, 0x12, payload)).drop, SwitchDrop::kUnprogrammedLid);
  EXPECT_EQ(sw.route(1, Packet(0, 20, 10, 0x12, payload)).drop, SwitchDrop::kUnprogrammedLid);
  EXPECT_EQ(sw.counters(1).rcv_switch_relay_errors, 3u);
  EXPECT_EQ(sw.drops(SwitchDrop::kUnprogrammedLid), 3u);
  EXPECT_EQ(sw.route(3, to64).drop, SwitchDrop::kIngressNotActive);  // port 3 is in Init
  EXPECT_EQ(sw.route(1, Packet(0, 0, 10, 0x12, payload)).drop, SwitchDrop::kReservedLid);
  EXPECT_EQ(sw.route(1, Packet(0, 0xFFFF, 10, 0x12, payload)).drop, SwitchDrop::kReservedLid);
  EXPECT_TRUE(sw.Receive(1, Packet(0, 66, 10, 0x12, payload)).empty());

  // The switch's own LID on a data packet: no agent behind port 0 for it.
  Mad lid = LidSmp(kSet, kPortInfo, 0);
  Put16(Data(lid).subspan(16), 64);
  Data(lid)[36] = 0x50;
  ASSERT_EQ(Status(*Ask(sw, lid)), 0);
  EXPECT_EQ(sw.route(1, to64).drop, SwitchDrop::kNoAgent);
}

TEST(SwitchForwarding, MulticastByMft) {
  Switch sw(TestConfig(0x1100, 20));
  for (uint8_t p : {1, 2, 3, 17, 18}) {
    sw.SetLinkUp(p, true);
    for (uint8_t state : {0x03, 0x04}) {
      Mad m = LidSmp(kSet, kPortInfo, p);
      Data(m)[32] = state;
      Data(m)[36] = 0x50;
      ASSERT_EQ(Status(*Ask(sw, m)), 0);
    }
  }
  sw.SetLinkUp(4, true);                // Init: a member that cannot take data yet
  Mad low = LidSmp(kSet, kMft, 0);      // position 0 (ports 0-15), block 0
  Put16(Data(low).subspan(2), 0x001E);  // MLID 0xC001: ports 1, 2, 3, 4
  ASSERT_EQ(Status(*Ask(sw, low)), 0);
  Mad high = LidSmp(kSet, kMft, 1u << 28);  // position 1 (ports 16-31)
  Put16(Data(high).subspan(2), 0x0002);     // MLID 0xC001: port 17
  ASSERT_EQ(Status(*Ask(sw, high)), 0);

  const std::vector<uint8_t> payload(8, 1);
  const std::vector<uint8_t> mc = Packet(0, 0xC001, 10, 0xFFFFFF, payload);
  RouteResult r = sw.route(2, mc);
  ASSERT_FALSE(r.drop.has_value());
  EXPECT_EQ(r.egress, (std::vector<uint8_t>{1, 3, 17})) << "not back to 2, not to Init 4";
  EXPECT_EQ(sw.counters(4).xmit_discards, 1u);
  const std::vector<Transmit> out = sw.Receive(2, mc);
  ASSERT_EQ(out.size(), 3u);
  for (const Transmit& t : out) EXPECT_EQ(t.bytes, mc);

  EXPECT_EQ(sw.route(2, Packet(0, 0xC002, 10, 0xFFFFFF, payload)).drop,
            SwitchDrop::kUnprogrammedLid);
  EXPECT_EQ(sw.route(2, Packet(0, 0xC400, 10, 0xFFFFFF, payload)).drop,
            SwitchDrop::kUnprogrammedLid);  // beyond MulticastFDBCap
}

TEST(SwitchForwarding, MalformedPackets) {
  Switch sw(TestConfig(0x1100, 8));
  Cable(sw, {1});
  Mad one_hop = DrSmp(kGet, kNodeInfo, 0, {1});
  one_hop[kHopPointer] = 1;
  const std::vector<uint8_t> good = SmpPacket(one_hop);
  EXPECT_EQ(sw.Receive(1, good).size(), 1u);
  // HopCount 0 is for the SMA of the SM's own node: from a link, its answer would go to
  // an SM on this switch, and there is none.
  EXPECT_TRUE(sw.Receive(1, SmpPacket(DrSmp(kGet, kNodeInfo, 0, {}))).empty());
  EXPECT_EQ(sw.drops(SwitchDrop::kNoSm), 1u);

  EXPECT_EQ(sw.route(1, std::span(good).first(5)).drop, SwitchDrop::kMalformed);
  std::vector<uint8_t> cut(good.begin(), good.end() - 4);  // PktLen disagrees
  EXPECT_EQ(sw.route(1, cut).drop, SwitchDrop::kMalformed);
  EXPECT_EQ(sw.route(9, good).drop, SwitchDrop::kMalformed);         // no port 9
  EXPECT_EQ(sw.route(2, good).drop, SwitchDrop::kIngressNotActive);  // no link on port 2
  EXPECT_EQ(sw.counters(1).rcv_errors, 2u);

  // A VL15 packet whose MAD is cut short (LRH:PktLen consistent with it).
  const Mad whole = MadOf(good);
  EXPECT_EQ(sw.route(1, Packet(15, 0xFFFF, 0xFFFF, 0, std::span(whole).first(200))).drop,
            SwitchDrop::kVl15NotSmp);

  std::vector<uint8_t> bad_crc = good;
  bad_crc[kMadInPacket + 40] ^= 1;
  EXPECT_EQ(sw.route(1, bad_crc).drop, SwitchDrop::kBadCrc);

  // VL15 to QP1, and QP0 on a data VL.
  EXPECT_EQ(sw.route(1, Packet(15, 0xFFFF, 0xFFFF, 1, MadOf(good))).drop, SwitchDrop::kVl15NotSmp);
  EXPECT_EQ(sw.route(1, Packet(0, 0xFFFF, 0xFFFF, 0, MadOf(good))).drop,
            SwitchDrop::kIngressNotActive);

  // Hop count 64 and a bad hop pointer: dropped by the directed-route rules.
  Mad hops = DrSmp(kGet, kNodeInfo, 0, {1});
  hops[kHopCount] = 64;
  hops[kHopPointer] = 1;
  EXPECT_EQ(sw.route(1, SmpPacket(hops)).drop, SwitchDrop::kDirectedRoute);
  EXPECT_EQ(sw.last_smp_drop(), smp::Drop::kBadHopCount);
  Mad ptr = DrSmp(kGet, kNodeInfo, 0, {1, 2});
  ptr[kHopPointer] = 7;
  EXPECT_TRUE(sw.Receive(1, SmpPacket(ptr)).empty());
  EXPECT_EQ(sw.last_smp_drop(), smp::Drop::kBadHopPointer);

  // Class version 2 is answered with "bad version".
  Mad v2 = one_hop;
  v2[2] = 2;
  const std::vector<uint8_t> resp = Single(sw.Receive(1, SmpPacket(v2)), 1);
  ASSERT_FALSE(resp.empty());
  EXPECT_EQ(Status(MadOf(resp)), 0x8004);  // D | bad version
}

}  // namespace
}  // namespace softib::fabric::test
