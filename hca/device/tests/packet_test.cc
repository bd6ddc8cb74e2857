// Packet build/parse: every opcode of the generated table round-trips at many payload sizes;
// one UD SEND_ONLY packet is checked byte by byte against fields worked out from the spec;
// corruption and malformed headers are dropped with the right reason.
#include "hca/device/packet.h"

#include <gtest/gtest.h>

#include <numeric>

#include "softib/wire/ib_crc.h"

namespace softib::hca {
namespace {

PacketHeaders SampleHeaders(uint8_t opcode, bool global) {
  PacketHeaders h;
  h.lrh.VL = 0;
  h.lrh.SL = 3;
  h.lrh.DLID = 0x1234;
  h.lrh.SLID = 0x0042;
  if (global) {
    wire::GRH grh;
    grh.TClass = 0x12;
    grh.FlowLabel = 0x54321;
    grh.HopLmt = 64;
    for (int i = 0; i < 16; ++i) grh.SGID[i] = static_cast<uint8_t>(0xA0 + i);
    for (int i = 0; i < 16; ++i) grh.DGID[i] = static_cast<uint8_t>(0xB0 + i);
    h.grh = grh;
  }
  h.bth.OpCode = opcode;
  h.bth.SE = 1;
  h.bth.P_Key = 0x8001;
  h.bth.DestQP = 0xABCDEF;
  h.bth.A = 1;
  h.bth.PSN = 0x123456;
  h.rdeth.EECnxt = 0x0F0E0D;
  h.deth.Q_Key = 0x80010000;
  h.deth.SrcQP = 0x000101;
  h.reth = {0x0102030405060708ull, 0xCAFEBABE, 0x1000};
  h.atomic_eth.VA = 0x1122334455667788ull;
  h.atomic_eth.R_Key = 0x99AABBCC;
  h.atomic_eth.SwapAddData = 0xDDEEFF0011223344ull;
  h.atomic_eth.CompareData = 0x5566778899AABBCCull;
  h.aeth.Syndrome = 0x1F;
  h.aeth.MSN = 0x00BEEF;
  h.atomic_ack_eth.OrigRemoteData = 0x0123456789ABCDEFull;
  h.immdt.ImmediateData = 0xFEEDF00D;
  h.ieth.R_Key = 0x13572468;
  return h;
}

std::vector<uint8_t> Payload(std::size_t n) {
  std::vector<uint8_t> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(i * 7 + 1);
  return p;
}

// Rewrites the CRCs after a test changed bytes, as a faulty router would.
void RecomputeCrcs(std::vector<uint8_t>& packet, bool with_icrc = true) {
  packet.resize(packet.size() - (with_icrc ? 6 : 2));
  ibcrc::AppendCrcs(packet);
}

TEST(Packet, EveryOpcodeRoundTripsAtEveryPayloadSize) {
  const std::vector<std::size_t> sizes = {0,    1,    2,    3,    4,    5,    6,   7,
                                          8,    31,   63,   255,  256,  257,  511, 1023,
                                          1024, 2047, 2048, 4093, 4094, 4095, 4096};
  int opcodes = 0, packets = 0;
  for (const codec::OpcodeDesc& op : codec::AllOpcodes()) {
    if (op.name.empty()) continue;
    ++opcodes;
    for (bool global : {false, true}) {
      for (std::size_t size : sizes) {
        if (!op.payload && size != 0) continue;
        SCOPED_TRACE(std::string(op.name) + " payload " + std::to_string(size) +
                     (global ? " global" : " local"));
        PacketHeaders in = SampleHeaders(op.opcode, global);
        const std::vector<uint8_t> payload = Payload(size);
        const std::vector<uint8_t> bytes = BuildPacket(in, payload);
        ASSERT_FALSE(bytes.empty());
        ASSERT_EQ(bytes.size(), WireBytes(global, op, size));
        ParsedPacket out;
        ASSERT_EQ(ParsePacket(bytes, &out), DropReason::kNone);
        EXPECT_EQ(out.opcode, &op);
        EXPECT_EQ(std::vector<uint8_t>(out.payload.begin(), out.payload.end()), payload);
        EXPECT_EQ(out.hdr.bth.PadCnt, (4 - size % 4) % 4);
        EXPECT_EQ(std::size_t{out.hdr.lrh.PktLen} * 4 + 2, bytes.size());
        EXPECT_EQ(out.hdr.lrh.LNH, global ? 3 : 2);
        // Everything the builder does not compute comes back as given.
        in.lrh.LNH = out.hdr.lrh.LNH;
        in.lrh.PktLen = out.hdr.lrh.PktLen;
        in.bth.PadCnt = out.hdr.bth.PadCnt;
        EXPECT_EQ(out.hdr.lrh, in.lrh);
        EXPECT_EQ(out.hdr.bth, in.bth);
        if (global) {
          EXPECT_EQ(out.hdr.grh->SGID, in.grh->SGID);
          EXPECT_EQ(out.hdr.grh->FlowLabel, in.grh->FlowLabel);
          EXPECT_EQ(out.hdr.grh->PayLen, bytes.size() - 8 - 40 - 2);
        }
        for (std::string_view name : op.headers) {
          if (name == "DETH") {
            EXPECT_EQ(out.hdr.deth, in.deth);
          }
          if (name == "RETH") {
            EXPECT_EQ(out.hdr.reth, in.reth);
          }
          if (name == "RDETH") {
            EXPECT_EQ(out.hdr.rdeth, in.rdeth);
          }
          if (name == "AtomicETH") {
            EXPECT_EQ(out.hdr.atomic_eth, in.atomic_eth);
          }
          if (name == "AETH") {
            EXPECT_EQ(out.hdr.aeth, in.aeth);
          }
          if (name == "AtomicAckETH") {
            EXPECT_EQ(out.hdr.atomic_ack_eth, in.atomic_ack_eth);
          }
          if (name == "ImmDt") {
            EXPECT_EQ(out.hdr.immdt, in.immdt);
          }
          if (name == "IETH") {
            EXPECT_EQ(out.hdr.ieth, in.ieth);
          }
        }
        ++packets;
      }
    }
  }
  EXPECT_GE(opcodes, 40);  // RC, UC, RD and UD rows of the table
  RecordProperty("packets", packets);
}

TEST(Packet, UdSendOnlyRoundTripsAtEachSizeUpToTheMtu) {
  for (std::size_t size = 0; size <= 4096; ++size) {
    const std::vector<uint8_t> payload = Payload(size);
    const std::vector<uint8_t> bytes = BuildPacket(SampleHeaders(0x64, false), payload);
    ParsedPacket out;
    ASSERT_EQ(ParsePacket(bytes, &out), DropReason::kNone) << size;
    ASSERT_TRUE(std::equal(out.payload.begin(), out.payload.end(), payload.begin(), payload.end()))
        << size;
  }
}

TEST(Packet, PayloadIsRefusedOnOpcodesWithoutOne) {
  const std::vector<uint8_t> four(4, 0xAA);
  EXPECT_TRUE(BuildPacket(SampleHeaders(0x11, false), four).empty());           // RC ACKNOWLEDGE
  EXPECT_TRUE(BuildPacket(SampleHeaders(0x18, false), {}).empty());             // not an opcode
  EXPECT_TRUE(BuildPacket(SampleHeaders(0x04, false), Payload(8200)).empty());  // > PktLen
}

// UD SEND_ONLY, DLID 2, SLID 1, P_Key 0xFFFF, DestQP 0x48, PSN 1, Q_Key 0x11111111,
// SrcQP 0x49, payload DE AD BE (3 bytes, so one pad byte). Expected bytes are the IBA
// field layouts (7.7 LRH, 9.2 BTH, 9.3.3 DETH) filled in by hand.
TEST(Packet, UdSendOnlyMatchesTheSpecLayoutByteForByte) {
  PacketHeaders h;
  h.lrh.DLID = 0x0002;
  h.lrh.SLID = 0x0001;
  h.bth.OpCode = 0x64;
  h.bth.P_Key = 0xFFFF;
  h.bth.DestQP = 0x48;
  h.bth.PSN = 1;
  h.deth.Q_Key = 0x11111111;
  h.deth.SrcQP = 0x49;
  const std::vector<uint8_t> payload = {0xDE, 0xAD, 0xBE};
  const std::vector<uint8_t> bytes = BuildPacket(h, payload);
  const std::vector<uint8_t> expected_headers = {
      // LRH: VL 0 | LVer 0; SL 0 | rsvd | LNH 2 (IBA local); DLID; rsvd | PktLen; SLID.
      // PktLen: (8 LRH + 12 BTH + 8 DETH + 4 payload+pad + 4 ICRC) / 4 = 9 words.
      0x00, 0x02, 0x00, 0x02, 0x00, 0x09, 0x00, 0x01,
      // BTH: OpCode 0x64 (UD 011, SEND_ONLY 00100); SE 0 M 0 PadCnt 01 TVer 0000 = 0x10;
      // P_Key; rsvd; DestQP 24 bits; A 0 | rsvd; PSN 24 bits.
      0x64, 0x10, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00, 0x00, 0x01,
      // DETH: Q_Key; rsvd; SrcQP.
      0x11, 0x11, 0x11, 0x11, 0x00, 0x00, 0x00, 0x49,
      // payload and one zero pad byte
      0xDE, 0xAD, 0xBE, 0x00};
  ASSERT_EQ(bytes.size(), expected_headers.size() + 4 + 2);
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 32), expected_headers);
  // The CRCs are those of the tested ib_crc helpers over exactly these bytes.
  std::vector<uint8_t> with_crcs = expected_headers;
  ibcrc::AppendCrcs(with_crcs);
  EXPECT_EQ(bytes, with_crcs);
}

// Recomputes only the VCRC (what a router does after forwarding), leaving the ICRC as sent.
std::vector<uint8_t> Relinked(std::vector<uint8_t> p) {
  p.resize(p.size() - 2);
  const uint16_t vcrc = ibcrc::ComputeVcrc(p);
  p.push_back(static_cast<uint8_t>(vcrc));
  p.push_back(static_cast<uint8_t>(vcrc >> 8));
  return p;
}

TEST(Packet, CorruptionIsCaughtByVcrcThenIcrc) {
  const std::vector<uint8_t> good = BuildPacket(SampleHeaders(0x64, false), Payload(100));
  ParsedPacket out;
  constexpr std::size_t kBthResv8a = 8 + 4;  // variant: left out of the ICRC
  for (std::size_t i = 8; i < good.size() - 6; ++i) {
    std::vector<uint8_t> bad = good;
    bad[i] ^= 0x20;
    EXPECT_EQ(ParsePacket(bad, &out), DropReason::kBadVcrc) << "byte " << i;
    const DropReason e2e = ParsePacket(Relinked(bad), &out);
    if (i == kBthResv8a) {
      EXPECT_EQ(e2e, DropReason::kNone);
    } else if (i < 20) {
      EXPECT_NE(e2e, DropReason::kNone) << "byte " << i;  // a BTH check may fire first
    } else {
      EXPECT_EQ(e2e, DropReason::kBadIcrc) << "byte " << i;
    }
  }
  for (std::size_t i = 0; i < 8; ++i) {  // LRH: some other check, or the VCRC
    std::vector<uint8_t> bad = good;
    bad[i] ^= 0x01;
    EXPECT_NE(ParsePacket(bad, &out), DropReason::kNone) << "byte " << i;
  }
}

TEST(Packet, VariantFieldsMayChangeWithoutBreakingTheIcrc) {
  std::vector<uint8_t> p = BuildPacket(SampleHeaders(0x64, false), Payload(16));
  p[0] = static_cast<uint8_t>((p[0] & 0x0F) | 0x70);  // LRH:VL changes hop by hop
  ParsedPacket out;
  EXPECT_EQ(ParsePacket(Relinked(p), &out), DropReason::kNone);
  EXPECT_EQ(out.hdr.lrh.VL, 7);
}

TEST(Packet, MalformedHeadersAreDroppedWithTheirReason) {
  const std::vector<uint8_t> good = BuildPacket(SampleHeaders(0x64, false), Payload(10));
  ParsedPacket out;
  const auto with = [&](auto&& edit) {
    std::vector<uint8_t> p = good;
    edit(p);
    RecomputeCrcs(p);
    return ParsePacket(p, &out);
  };
  EXPECT_EQ(with([](auto& p) { p[0] |= 0x01; }), DropReason::kBadLver);
  EXPECT_EQ(with([](auto& p) { p[1] = (p[1] & ~3) | 0; }), DropReason::kUnsupportedLnh);
  EXPECT_EQ(with([](auto& p) { p[5] += 1; }), DropReason::kBadPktLen);
  EXPECT_EQ(with([](auto& p) { p[9] |= 0x01; }), DropReason::kBadTver);
  EXPECT_EQ(with([](auto& p) { p[8] = 0x18; }), DropReason::kUnknownOpcode);
  // ACKNOWLEDGE (no payload) with bytes after its AETH.
  EXPECT_EQ(with([](auto& p) { p[8] = 0x11; }), DropReason::kUnexpectedPayload);
  EXPECT_EQ(ParsePacket(std::span(good).first(20), &out), DropReason::kTooShort);
  std::vector<uint8_t> ack = BuildPacket(SampleHeaders(0x11, false), {});
  ack[9] |= 0x30;  // PadCnt 3 on an opcode without payload
  RecomputeCrcs(ack);
  EXPECT_EQ(ParsePacket(ack, &out), DropReason::kBadPadCnt);
  std::vector<uint8_t> global = BuildPacket(SampleHeaders(0x64, true), Payload(4));
  global[8 + 6] = 0x11;  // GRH:NxtHdr not IBA
  RecomputeCrcs(global);
  EXPECT_EQ(ParsePacket(global, &out), DropReason::kBadGrh);
}

}  // namespace
}  // namespace softib::hca
