// The packet walker on packets written by hand from the IBTA Vol. 1 tables, never from the IDL:
// LRH 7.7 (VL 0[7..4], LVer 0[3..0], SL 1[7..4], LNH 1[1..0], DLID 2-3, PktLen 4[2..0]+5 in
// words from the LRH through the ICRC, SLID 6-7), GRH 8.3 (IPVer 0[7..4], PayLen 4-5 = the bytes
// after the GRH through the ICRC, NxtHdr 6 = 0x1B, HopLmt 7, SGID 8-23, DGID 24-39), BTH 9.2
// (OpCode 0, SE/M/PadCnt/TVer 1, P_Key 2-3, DestQP 5-7, A 8[7], PSN 9-11), the extension
// headers of 9.3 (RDETH 4, DETH 8, RETH 16, AtomicETH 28, AETH 4, AtomicAckETH 8, ImmDt 4,
// IETH 4 bytes) and the opcode table of 9.2.1 (Table 38). The walker reads no CRC, so the ICRC
// and VCRC bytes here are zeros unless a test says otherwise.
#include "softib/wire/packet_walker.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "softib/wire/ib_crc.h"

namespace softib::wire {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes Cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

const Bytes kCrcs = {0, 0, 0, 0, 0, 0};  // ICRC (4) + VCRC (2)

// UD SEND ONLY (0x64), local: LRH | BTH | DETH | 5 payload bytes | 3 pad | ICRC | VCRC = 42
// bytes, PktLen 40 / 4 = 10.
Bytes UdSendOnly() {
  return Cat({{0x00, 0x02, 0x00, 0x05, 0x00, 0x0a, 0x00, 0x07},                 // LRH: LNH 2
              {0x64, 0x30, 0xff, 0xff, 0x00, 0x00, 0x00, 0x2a, 0x80, 0, 0, 1},  // BTH: PadCnt 3
              {0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01},                 // DETH
              {0x11, 0x22, 0x33, 0x44, 0x55, 0x00, 0x00, 0x00},                 // payload, pad
              kCrcs});
}

// RC RDMA WRITE ONLY WITH IMMEDIATE (0x0B), global: LRH | GRH | BTH | RETH | ImmDt | 8 payload
// | ICRC | VCRC = 94 bytes, PktLen 92 / 4 = 23, GRH:PayLen 12 + 16 + 4 + 8 + 4 = 44.
Bytes RcWriteOnlyImmGlobal() {
  Bytes grh = {0x60, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x1b, 0x40};  // IPVer 6, PayLen 44, NxtHdr
  for (int i = 0; i < 16; ++i) grh.push_back(i == 0 ? 0xfe : i == 1 ? 0x80 : uint8_t(i));  // SGID
  for (int i = 0; i < 16; ++i) grh.push_back(i == 0 ? 0xfe : i == 1 ? 0x80 : uint8_t(i + 16));
  return Cat({{0x00, 0x03, 0x00, 0x05, 0x00, 0x17, 0x00, 0x07},  // LRH: LNH 3, PktLen 23
              grh,
              {0x0b, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x2a, 0x00, 0, 0, 2},  // BTH
              {0, 0, 0, 0, 0, 0, 0x10, 0x00, 0, 0, 0x12, 0x34, 0, 0, 0, 0x08},  // RETH
              {0xde, 0xad, 0xbe, 0xef},                                         // ImmDt
              {1, 2, 3, 4, 5, 6, 7, 8},                                         // payload
              kCrcs});
}

// RD SEND ONLY (0x44): LRH | BTH | RDETH | DETH | 4 payload | ICRC | VCRC = 42 bytes.
Bytes RdSendOnly() {
  return Cat({{0x00, 0x02, 0x00, 0x05, 0x00, 0x0a, 0x00, 0x07},
              {0x44, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x2a, 0x00, 0, 0, 3},
              {0x00, 0x00, 0x12, 0x34},                          // RDETH: EECnxt 0x1234
              {0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x2b},  // DETH
              {0xa1, 0xa2, 0xa3, 0xa4},
              kCrcs});
}

// RC ACKNOWLEDGE (0x11): LRH | BTH | AETH | ICRC | VCRC = 30 bytes, PktLen 7.
Bytes RcAck() {
  return Cat({{0x00, 0x02, 0x00, 0x05, 0x00, 0x07, 0x00, 0x07},
              {0x11, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x2a, 0x00, 0, 0, 4},
              {0x1f, 0x00, 0x00, 0x05},  // AETH: ACK, credits 31, MSN 5
              kCrcs});
}

void ExpectHeaders(const PacketLayout& l, const std::map<Header, std::size_t>& expected) {
  for (std::size_t i = 0; i < kHeaderCount; ++i) {
    const auto h = static_cast<Header>(i);
    const auto found = expected.find(h);
    if (found == expected.end()) {
      EXPECT_FALSE(l.has(h)) << NameOf(h);
    } else {
      ASSERT_TRUE(l.has(h)) << NameOf(h);
      EXPECT_EQ(l.offset(h), found->second) << NameOf(h);
    }
  }
}

PacketLayout Tolerant(const Bytes& p, WalkDepth depth = WalkDepth::kAll) {
  return WalkPacket(p, {.depth = depth, .mode = WalkMode::kTolerant});
}

TEST(PacketWalker, HeaderSizesAreTheSpecs) {
  const std::map<Header, std::size_t> spec = {
      {Header::kLrh, 8},        {Header::kGrh, 40}, {Header::kBth, 12},
      {Header::kRdeth, 4},      {Header::kDeth, 8}, {Header::kReth, 16},
      {Header::kAtomicEth, 28}, {Header::kAeth, 4}, {Header::kAtomicAckEth, 8},
      {Header::kImmDt, 4},      {Header::kIeth, 4}};
  ASSERT_EQ(spec.size(), kHeaderCount);
  for (const auto& [h, size] : spec) EXPECT_EQ(SizeOf(h), size) << NameOf(h);
}

// IBA 9.2.1, Table 38: the headers after the BTH of every defined opcode, and whether data
// follows; every other opcode value is reserved.
TEST(PacketWalker, OpcodeTableIsTable38) {
  using H = Header;
  struct Row {
    std::vector<Header> headers;
    bool payload;
  };
  const std::map<uint8_t, Row> table = {
      // RC (000)
      {0x00, {{}, true}},                             // SEND First
      {0x01, {{}, true}},                             // SEND Middle
      {0x02, {{}, true}},                             // SEND Last
      {0x03, {{H::kImmDt}, true}},                    // SEND Last with Immediate
      {0x04, {{}, true}},                             // SEND Only
      {0x05, {{H::kImmDt}, true}},                    // SEND Only with Immediate
      {0x06, {{H::kReth}, true}},                     // RDMA WRITE First
      {0x07, {{}, true}},                             // RDMA WRITE Middle
      {0x08, {{}, true}},                             // RDMA WRITE Last
      {0x09, {{H::kImmDt}, true}},                    // RDMA WRITE Last with Immediate
      {0x0a, {{H::kReth}, true}},                     // RDMA WRITE Only
      {0x0b, {{H::kReth, H::kImmDt}, true}},          // RDMA WRITE Only with Immediate
      {0x0c, {{H::kReth}, false}},                    // RDMA READ Request
      {0x0d, {{H::kAeth}, true}},                     // RDMA READ response First
      {0x0e, {{}, true}},                             // RDMA READ response Middle
      {0x0f, {{H::kAeth}, true}},                     // RDMA READ response Last
      {0x10, {{H::kAeth}, true}},                     // RDMA READ response Only
      {0x11, {{H::kAeth}, false}},                    // Acknowledge
      {0x12, {{H::kAeth, H::kAtomicAckEth}, false}},  // ATOMIC Acknowledge
      {0x13, {{H::kAtomicEth}, false}},               // CmpSwap
      {0x14, {{H::kAtomicEth}, false}},               // FetchAdd
      {0x16, {{H::kIeth}, true}},                     // SEND Last with Invalidate
      {0x17, {{H::kIeth}, true}},                     // SEND Only with Invalidate
      // UC (001)
      {0x20, {{}, true}},
      {0x21, {{}, true}},
      {0x22, {{}, true}},
      {0x23, {{H::kImmDt}, true}},
      {0x24, {{}, true}},
      {0x25, {{H::kImmDt}, true}},
      {0x26, {{H::kReth}, true}},
      {0x27, {{}, true}},
      {0x28, {{}, true}},
      {0x29, {{H::kImmDt}, true}},
      {0x2a, {{H::kReth}, true}},
      {0x2b, {{H::kReth, H::kImmDt}, true}},
      // RD (010): every packet carries the RDETH, requests a DETH after it.
      {0x40, {{H::kRdeth, H::kDeth}, true}},
      {0x41, {{H::kRdeth, H::kDeth}, true}},
      {0x42, {{H::kRdeth, H::kDeth}, true}},
      {0x43, {{H::kRdeth, H::kDeth, H::kImmDt}, true}},
      {0x44, {{H::kRdeth, H::kDeth}, true}},
      {0x45, {{H::kRdeth, H::kDeth, H::kImmDt}, true}},
      {0x46, {{H::kRdeth, H::kDeth, H::kReth}, true}},
      {0x47, {{H::kRdeth, H::kDeth}, true}},
      {0x48, {{H::kRdeth, H::kDeth}, true}},
      {0x49, {{H::kRdeth, H::kDeth, H::kImmDt}, true}},
      {0x4a, {{H::kRdeth, H::kDeth, H::kReth}, true}},
      {0x4b, {{H::kRdeth, H::kDeth, H::kReth, H::kImmDt}, true}},
      {0x4c, {{H::kRdeth, H::kDeth, H::kReth}, false}},
      {0x4d, {{H::kRdeth, H::kAeth}, true}},
      {0x4e, {{H::kRdeth}, true}},
      {0x4f, {{H::kRdeth, H::kAeth}, true}},
      {0x50, {{H::kRdeth, H::kAeth}, true}},
      {0x51, {{H::kRdeth, H::kAeth}, false}},
      {0x52, {{H::kRdeth, H::kAeth, H::kAtomicAckEth}, false}},
      {0x53, {{H::kRdeth, H::kDeth, H::kAtomicEth}, false}},
      {0x54, {{H::kRdeth, H::kDeth, H::kAtomicEth}, false}},
      {0x55, {{H::kRdeth, H::kDeth}, false}},  // RESYNC
      // UD (011)
      {0x64, {{H::kDeth}, true}},             // SEND Only
      {0x65, {{H::kDeth, H::kImmDt}, true}},  // SEND Only with Immediate
  };
  for (unsigned op = 0; op < 256; ++op) {
    SCOPED_TRACE(op);
    const OpcodeShape* shape = ShapeOf(static_cast<uint8_t>(op));
    const auto row = table.find(static_cast<uint8_t>(op));
    if (row == table.end()) {
      EXPECT_EQ(shape, nullptr);
      continue;
    }
    ASSERT_NE(shape, nullptr);
    EXPECT_EQ(shape->payload, row->second.payload);
    ASSERT_EQ(shape->count, row->second.headers.size());
    std::size_t offset = 0;
    for (std::size_t i = 0; i < shape->count; ++i) {
      EXPECT_EQ(shape->headers[i], row->second.headers[i]) << i;
      EXPECT_EQ(shape->offsets[i], offset) << i;
      offset += SizeOf(row->second.headers[i]);
    }
    EXPECT_EQ(shape->bytes, offset);
    EXPECT_EQ(shape->desc->opcode, op);
  }
}

TEST(PacketWalker, UdSendOnlyLocal) {
  const Bytes p = UdSendOnly();
  ASSERT_EQ(p.size(), 42u);
  const PacketLayout l = WalkPacket(p);
  ASSERT_TRUE(l.ok()) << ToString(l.problem());
  EXPECT_EQ(l.lnh, LinkNextHeader::IBA_LOCAL);
  ExpectHeaders(l, {{Header::kLrh, 0}, {Header::kBth, 8}, {Header::kDeth, 20}});
  ASSERT_NE(l.opcode, nullptr);
  EXPECT_EQ(l.opcode->desc->name, "UD_SEND_ONLY");
  EXPECT_EQ(l.payload, 28u);
  EXPECT_EQ(l.payload_bytes, 5u);
  EXPECT_EQ(l.pad, 3u);
  EXPECT_EQ(l.icrc, 36u);
  EXPECT_EQ(l.vcrc, 40u);
  const auto payload = l.payload_of(p);
  EXPECT_EQ(Bytes(payload.begin(), payload.end()), (Bytes{0x11, 0x22, 0x33, 0x44, 0x55}));
  EXPECT_EQ(DETHConstView(l.bytes(p, Header::kDeth)).SrcQP(), 1u);
  // The tolerant walk of a good packet finds the same, and nothing to report.
  const PacketLayout t = Tolerant(p);
  EXPECT_TRUE(t.ok());
  EXPECT_EQ(t.at, l.at);
  EXPECT_EQ(t.payload_bytes, l.payload_bytes);
}

TEST(PacketWalker, RcWriteOnlyWithImmediateGlobal) {
  const Bytes p = RcWriteOnlyImmGlobal();
  ASSERT_EQ(p.size(), 94u);
  const PacketLayout l = WalkPacket(p);
  ASSERT_TRUE(l.ok()) << ToString(l.problem());
  EXPECT_EQ(l.lnh, LinkNextHeader::IBA_GLOBAL);
  ExpectHeaders(l, {{Header::kLrh, 0},
                    {Header::kGrh, 8},
                    {Header::kBth, 48},
                    {Header::kReth, 60},
                    {Header::kImmDt, 76}});
  EXPECT_EQ(l.payload, 80u);
  EXPECT_EQ(l.payload_bytes, 8u);
  EXPECT_EQ(l.pad, 0u);
  EXPECT_EQ(l.icrc, 88u);
  EXPECT_EQ(l.vcrc, 92u);
  EXPECT_EQ(RETHConstView(l.bytes(p, Header::kReth)).R_Key(), 0x1234u);
  EXPECT_EQ(ImmDtConstView(l.bytes(p, Header::kImmDt)).ImmediateData(), 0xdeadbeefu);
}

TEST(PacketWalker, RdSendOnlyHasRdethThenDeth) {
  const Bytes p = RdSendOnly();
  const PacketLayout l = WalkPacket(p);
  ASSERT_TRUE(l.ok()) << ToString(l.problem());
  ExpectHeaders(l,
                {{Header::kLrh, 0}, {Header::kBth, 8}, {Header::kRdeth, 20}, {Header::kDeth, 24}});
  EXPECT_EQ(RDETHConstView(l.bytes(p, Header::kRdeth)).EECnxt(), 0x1234u);
  EXPECT_EQ(l.payload, 32u);
  EXPECT_EQ(l.payload_bytes, 4u);
}

TEST(PacketWalker, AcknowledgesAndAtomicsCarryNoPayload) {
  PacketLayout l = WalkPacket(RcAck());
  ASSERT_TRUE(l.ok()) << ToString(l.problem());
  ExpectHeaders(l, {{Header::kLrh, 0}, {Header::kBth, 8}, {Header::kAeth, 20}});
  EXPECT_EQ(l.payload_bytes, 0u);
  EXPECT_EQ(l.icrc, 24u);

  // ATOMIC Acknowledge: AETH | AtomicAckETH, 38 bytes, PktLen 9.
  const Bytes atomic_ack = Cat({{0x00, 0x02, 0x00, 0x05, 0x00, 0x09, 0x00, 0x07},
                                {0x12, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x2a, 0x00, 0, 0, 5},
                                {0x00, 0x00, 0x00, 0x06},
                                {0, 0, 0, 0, 0, 0, 0, 0x2a},
                                kCrcs});
  l = WalkPacket(atomic_ack);
  ASSERT_TRUE(l.ok()) << ToString(l.problem());
  ExpectHeaders(
      l, {{Header::kLrh, 0}, {Header::kBth, 8}, {Header::kAeth, 20}, {Header::kAtomicAckEth, 24}});

  // CmpSwap: AtomicETH (VA 8, R_Key 4, SwapAdd 8, Compare 8), 54 bytes, PktLen 13.
  Bytes cmp_swap = Cat({{0x00, 0x02, 0x00, 0x05, 0x00, 0x0d, 0x00, 0x07},
                        {0x13, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x2a, 0x80, 0, 0, 6}});
  for (int i = 0; i < 28; ++i) cmp_swap.push_back(static_cast<uint8_t>(i));
  cmp_swap.insert(cmp_swap.end(), kCrcs.begin(), kCrcs.end());
  l = WalkPacket(cmp_swap);
  ASSERT_TRUE(l.ok()) << ToString(l.problem());
  ExpectHeaders(l, {{Header::kLrh, 0}, {Header::kBth, 8}, {Header::kAtomicEth, 20}});
  EXPECT_EQ(l.icrc, 48u);

  // SEND Only with Invalidate: IETH | 4 payload, 34 bytes, PktLen 8.
  const Bytes send_inv = Cat({{0x00, 0x02, 0x00, 0x05, 0x00, 0x08, 0x00, 0x07},
                              {0x17, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x2a, 0x00, 0, 0, 7},
                              {0x00, 0x00, 0x56, 0x78},
                              {9, 8, 7, 6},
                              kCrcs});
  l = WalkPacket(send_inv);
  ASSERT_TRUE(l.ok()) << ToString(l.problem());
  ExpectHeaders(l, {{Header::kLrh, 0}, {Header::kBth, 8}, {Header::kIeth, 20}});
  EXPECT_EQ(IETHConstView(l.bytes(send_inv, Header::kIeth)).R_Key(), 0x5678u);
  EXPECT_EQ(l.payload_bytes, 4u);
}

TEST(PacketWalker, RawAndIpv6LnhAreNotTransportPackets) {
  for (uint8_t lnh : {0, 1}) {
    SCOPED_TRACE(int{lnh});
    Bytes p = UdSendOnly();
    p[1] = lnh;  // LRH:LNH raw (0) or IPv6 (1): no ICRC, the rest up to the VCRC is payload
    const PacketLayout strict = WalkPacket(p);
    EXPECT_EQ(strict.problem(), WalkProblem::kNotIbaTransport);
    EXPECT_FALSE(strict.has(Header::kBth));
    const PacketLayout t = Tolerant(p);
    ASSERT_EQ(t.finding_count, 1u);
    EXPECT_EQ(t.problem(), WalkProblem::kNotIbaTransport);
    ExpectHeaders(t, {{Header::kLrh, 0}});
    EXPECT_EQ(t.payload, 8u);
    EXPECT_EQ(t.payload_bytes, 32u);
    EXPECT_EQ(t.icrc, PacketLayout::kNone);
    EXPECT_EQ(t.vcrc, 40u);
  }
  // A raw packet's length is still checked, after its LNH (a strict walk stops at the LNH).
  Bytes raw = UdSendOnly();
  raw[1] = 0x00;
  raw[5] = 0x0b;  // PktLen 11
  EXPECT_EQ(WalkPacket(raw).problem(), WalkProblem::kNotIbaTransport);
  const PacketLayout t = Tolerant(raw, WalkDepth::kBth);
  ASSERT_EQ(t.finding_count, 2u);
  EXPECT_EQ(t.findings[0].problem, WalkProblem::kNotIbaTransport);
  EXPECT_EQ(t.findings[1].problem, WalkProblem::kPktLenMismatch);
  // IBA local and global are transport packets.
  EXPECT_TRUE(WalkPacket(UdSendOnly()).ok());
  EXPECT_TRUE(WalkPacket(RcWriteOnlyImmGlobal()).ok());
}

TEST(PacketWalker, ShortPacketsAreRejectedWhereTheyEnd) {
  const Bytes ud = UdSendOnly();
  // Shorter than LRH + VCRC.
  PacketLayout l = WalkPacket(Bytes(ud.begin(), ud.begin() + 9));
  EXPECT_EQ(l.problem(), WalkProblem::kTooShort);
  EXPECT_EQ(l.findings[0].header, Header::kLrh);
  EXPECT_FALSE(l.has(Header::kLrh));
  // LNH 2 needs LRH + BTH + ICRC + VCRC = 26 bytes.
  l = Tolerant(Bytes(ud.begin(), ud.begin() + 24));
  EXPECT_EQ(l.problem(), WalkProblem::kTooShort);
  EXPECT_EQ(l.findings[0].header, Header::kBth);
  EXPECT_EQ(l.findings[0].offset, 8u);
  // LNH 3: 50 bytes end inside the GRH (8 + 40 + 6 = 54), 60 inside the BTH (66).
  const Bytes global = RcWriteOnlyImmGlobal();
  l = Tolerant(Bytes(global.begin(), global.begin() + 50));
  EXPECT_EQ(l.problem(), WalkProblem::kTooShort);
  EXPECT_EQ(l.findings[0].header, Header::kGrh);
  EXPECT_EQ(l.findings[0].offset, 8u);
  l = WalkPacket(Bytes(global.begin(), global.begin() + 60));
  EXPECT_EQ(l.problem(), WalkProblem::kTooShort);
  EXPECT_EQ(l.findings[0].header, Header::kBth);
  EXPECT_EQ(l.findings[0].offset, 48u);
  // RDMA WRITE First (RETH follows the BTH) in 30 bytes: LRH | BTH | 4 bytes | CRCs.
  const Bytes write_first = Cat({{0x00, 0x02, 0x00, 0x05, 0x00, 0x07, 0x00, 0x07},
                                 {0x06, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x2a, 0, 0, 0, 8},
                                 {0, 0, 0, 0},
                                 kCrcs});
  l = WalkPacket(write_first);
  EXPECT_EQ(l.problem(), WalkProblem::kTooShort);
  EXPECT_EQ(l.findings[0].header, Header::kReth);
  EXPECT_EQ(l.findings[0].offset, 20u);
  l = Tolerant(write_first);  // what was found before it
  ExpectHeaders(l, {{Header::kLrh, 0}, {Header::kBth, 8}});
  EXPECT_EQ(l.finding_count, 1u);
}

TEST(PacketWalker, PktLenMismatchIsRejectedStrictAndReportedTolerant) {
  for (uint8_t words : {9, 11, 0}) {
    SCOPED_TRACE(int{words});
    Bytes p = UdSendOnly();
    p[5] = words;  // the packet is 10 words (+ VCRC)
    EXPECT_EQ(WalkPacket(p).problem(), WalkProblem::kPktLenMismatch);
    const PacketLayout t = Tolerant(p);
    ASSERT_EQ(t.finding_count, 1u);
    EXPECT_EQ(t.problem(), WalkProblem::kPktLenMismatch);
    // The walk went on by the bytes there are.
    ExpectHeaders(t, {{Header::kLrh, 0}, {Header::kBth, 8}, {Header::kDeth, 20}});
    EXPECT_EQ(t.payload_bytes, 5u);
  }
  // One byte more than PktLen says.
  Bytes longer = UdSendOnly();
  longer.push_back(0);
  EXPECT_EQ(WalkPacket(longer).problem(), WalkProblem::kPktLenMismatch);
}

TEST(PacketWalker, UnknownOpcodeIsRejectedAtTransportDepthOnly) {
  Bytes p = UdSendOnly();
  p[8] = 0x18;  // reserved RC opcode (IBA 9.2.1)
  const PacketLayout strict = WalkPacket(p);
  EXPECT_EQ(strict.problem(), WalkProblem::kUnknownOpcode);
  EXPECT_EQ(strict.findings[0].offset, 8u);
  const PacketLayout t = Tolerant(p);
  EXPECT_EQ(t.problem(), WalkProblem::kUnknownOpcode);
  EXPECT_EQ(t.opcode, nullptr);
  ExpectHeaders(t, {{Header::kLrh, 0}, {Header::kBth, 8}});
  // A switch's walk stops at the BTH: the transport is not its business.
  const PacketLayout to_bth = WalkPacket(p, {.depth = WalkDepth::kBth});
  EXPECT_TRUE(to_bth.ok());
  ExpectHeaders(to_bth, {{Header::kLrh, 0}, {Header::kBth, 8}});
}

TEST(PacketWalker, VersionsAndGrhFieldsAreChecked) {
  Bytes lver = UdSendOnly();
  lver[0] = 0x01;  // LRH:LVer 1
  EXPECT_EQ(WalkPacket(lver).problem(), WalkProblem::kBadLinkVersion);
  EXPECT_EQ(WalkPacket(lver, {.depth = WalkDepth::kBth}).problem(), WalkProblem::kBadLinkVersion);
  Bytes tver = UdSendOnly();
  tver[9] = 0x31;  // PadCnt 3, TVer 1
  EXPECT_EQ(WalkPacket(tver).problem(), WalkProblem::kBadTransportVersion);
  EXPECT_TRUE(WalkPacket(tver, {.depth = WalkDepth::kBth}).ok());

  Bytes next = RcWriteOnlyImmGlobal();
  next[8 + 6] = 0x11;  // GRH:NxtHdr not a BTH
  EXPECT_EQ(WalkPacket(next).problem(), WalkProblem::kBadGrh);
  EXPECT_TRUE(WalkPacket(next, {.depth = WalkDepth::kBth}).ok());
  Bytes ipver = RcWriteOnlyImmGlobal();
  ipver[8] = 0x40;  // IPVer 4
  EXPECT_EQ(WalkPacket(ipver).problem(), WalkProblem::kBadGrh);
  Bytes pay_len = RcWriteOnlyImmGlobal();
  pay_len[8 + 5] = 0x30;  // PayLen 48, not 44
  EXPECT_EQ(WalkPacket(pay_len).problem(), WalkProblem::kBadGrh);
}

TEST(PacketWalker, PadAndPayloadMustFitTheOpcode) {
  Bytes ack_pad = RcAck();
  ack_pad[9] = 0x10;  // PadCnt 1 on an opcode without payload
  EXPECT_EQ(WalkPacket(ack_pad).problem(), WalkProblem::kBadPadCnt);

  // An ACK with four bytes after its AETH (PktLen 8).
  Bytes ack_data = RcAck();
  ack_data[5] = 0x08;
  ack_data.insert(ack_data.begin() + 24, {1, 2, 3, 4});
  EXPECT_EQ(WalkPacket(ack_data).problem(), WalkProblem::kUnexpectedPayload);
  const PacketLayout t = Tolerant(ack_data);
  ASSERT_EQ(t.finding_count, 1u);
  EXPECT_EQ(t.payload, 24u);
  EXPECT_EQ(t.payload_bytes, 4u);

  // UD SEND ONLY with no data but PadCnt 3: more pad than payload.
  const Bytes empty_padded = Cat({{0x00, 0x02, 0x00, 0x05, 0x00, 0x08, 0x00, 0x07},
                                  {0x64, 0x30, 0xff, 0xff, 0x00, 0x00, 0x00, 0x2a, 0, 0, 0, 1},
                                  {0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01},
                                  kCrcs});
  EXPECT_EQ(WalkPacket(empty_padded).problem(), WalkProblem::kBadPadCnt);
}

TEST(PacketWalker, TolerantWalkReportsEveryProblemInOrder) {
  Bytes p = RcWriteOnlyImmGlobal();
  p[0] = 0x01;       // LRH:LVer 1
  p[5] = 0x30;       // PktLen 48
  p[8 + 6] = 0x3a;   // GRH:NxtHdr
  p[48 + 1] = 0x02;  // BTH:TVer 2
  EXPECT_EQ(WalkPacket(p).problem(), WalkProblem::kBadLinkVersion);
  const PacketLayout t = Tolerant(p);
  ASSERT_EQ(t.finding_count, 4u);
  EXPECT_EQ(t.findings[0].problem, WalkProblem::kBadLinkVersion);
  EXPECT_EQ(t.findings[1].problem, WalkProblem::kPktLenMismatch);
  EXPECT_EQ(t.findings[2].problem, WalkProblem::kBadGrh);
  EXPECT_EQ(t.findings[2].header, Header::kGrh);
  EXPECT_EQ(t.findings[3].problem, WalkProblem::kBadTransportVersion);
  EXPECT_EQ(t.findings[3].offset, 48u);
  // And still every header.
  ExpectHeaders(t, {{Header::kLrh, 0},
                    {Header::kGrh, 8},
                    {Header::kBth, 48},
                    {Header::kReth, 60},
                    {Header::kImmDt, 76}});
  EXPECT_EQ(t.payload_bytes, 8u);
}

TEST(PacketWalker, APacketWithoutItsCrcsYet) {
  Bytes p = UdSendOnly();
  p.resize(p.size() - kCrcs.size());  // LRH through pad: PktLen still counts the ICRC
  const PacketLayout l = WalkPacket(p, {.crcs = false});
  ASSERT_TRUE(l.ok()) << ToString(l.problem());
  ExpectHeaders(l, {{Header::kLrh, 0}, {Header::kBth, 8}, {Header::kDeth, 20}});
  EXPECT_EQ(l.payload_bytes, 5u);
  EXPECT_EQ(l.icrc, PacketLayout::kNone);
  EXPECT_EQ(l.vcrc, PacketLayout::kNone);
}

TEST(PacketWalker, CrcCheckOverAWalkedPacketIsTheSame) {
  Bytes p = UdSendOnly();
  p.resize(p.size() - kCrcs.size());
  ibcrc::AppendCrcs(p);
  const PacketLayout l = WalkPacket(p);
  ASSERT_TRUE(l.ok());
  const ibcrc::CrcCheck walked = ibcrc::CheckCrcs(p, l);
  const ibcrc::CrcCheck fresh = ibcrc::CheckCrcs(p);
  EXPECT_TRUE(walked.well_formed && walked.icrc_ok() && walked.vcrc_ok());
  EXPECT_EQ(walked.icrc_computed, fresh.icrc_computed);
  EXPECT_EQ(walked.vcrc_computed, fresh.vcrc_computed);
}

}  // namespace
}  // namespace softib::wire
