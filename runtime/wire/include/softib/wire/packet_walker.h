// The one walk over an InfiniBand packet's headers (IBA 1.3 vol. 1): from LRH:LNH (7.7.9) it
// finds the GRH (LNH 3, chapter 8) and the BTH (LNH 2 or 3, 9.2), then the extension headers the
// BTH opcode implies (9.2.1 and 9.3: RDETH, DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt,
// IETH), the payload, the pad (BTH:PadCnt), the ICRC and the VCRC (7.8) — offsets and lengths,
// checked against the bytes there are and against LRH:PktLen. Which headers an opcode carries
// comes from the generated opcode table (wire::kBthOpcodeTable, from idl/wire.idl), turned into
// the walker's own table at compile time; the header sizes are the generated codecs' kSize.
//
// Every layer that reads whole packets uses it: the HCA's receive path (hca/device packet.cc),
// the switch relay and its traps (fabric/switch), the ICRC's masked fields (ib_crc.cc), the HCA
// driver's ring service (hca/driver) and `softib mad decode` (tools/softib).
//
// Two modes:
//   strict   stops at the first problem (what a receive path does: the packet is dropped);
//   tolerant records each problem and goes on as far as the bytes allow,
//            returning what it found (a decoder printing what it can of a damaged packet).
// Two depths:
//   kBth     the LRH checked, the GRH and BTH located (what a switch reads: it relays packets
//            whose transport it does not interpret, and raw packets by their LRH alone);
//   kAll     everything: the GRH's and BTH's version fields, the opcode's headers, payload, pad.
//
// The strict walk is inline and allocation-free: a switch's and the HCA's receive paths run it
// on every packet.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "softib/codec/format_desc.h"
#include "softib/wire/ib_crc.h"
#include "softib/wire/wire.h"

namespace softib::wire {

// Every header a packet may carry.
enum class Header : uint8_t {
  kLrh,
  kGrh,
  kBth,
  kRdeth,
  kDeth,
  kReth,
  kAtomicEth,
  kAeth,
  kAtomicAckEth,
  kImmDt,
  kIeth,
};
inline constexpr std::size_t kHeaderCount = 11;
inline constexpr std::size_t kFirstExtensionHeader = static_cast<std::size_t>(Header::kRdeth);

// The generated codecs' names and sizes of the headers, indexed by Header.
inline constexpr std::array<std::string_view, kHeaderCount> kHeaderNames = {
    LRH::kName,       GRH::kName,  BTH::kName,          RDETH::kName, DETH::kName, RETH::kName,
    AtomicETH::kName, AETH::kName, AtomicAckETH::kName, ImmDt::kName, IETH::kName};
inline constexpr std::array<uint8_t, kHeaderCount> kHeaderSizes = {
    LRH::kSize,       GRH::kSize,  BTH::kSize,          RDETH::kSize, DETH::kSize, RETH::kSize,
    AtomicETH::kSize, AETH::kSize, AtomicAckETH::kSize, ImmDt::kSize, IETH::kSize};

constexpr std::string_view NameOf(Header h) { return kHeaderNames[static_cast<std::size_t>(h)]; }
constexpr std::size_t SizeOf(Header h) { return kHeaderSizes[static_cast<std::size_t>(h)]; }

// GRH:IPVer and GRH:NxtHdr of a GRH followed by a BTH (IBA 8.3.1).
inline constexpr uint8_t kGrhIpVersion = 6;
inline constexpr uint8_t kGrhNextHeaderIba = 0x1B;
// LRH:PktLen is 11 bits of 4-byte words (IBA 7.7.8).
inline constexpr std::size_t kMaxPacketWords = 0x7FF;

namespace walker_detail {

constexpr std::size_t MaxExtensionHeaders() {
  std::size_t most = 0;
  for (const codec::OpcodeDesc& row : kBthOpcodeTable)
    most = row.headers.size() > most ? row.headers.size() : most;
  return most;
}

// The Header an opcode row names. A name the walker does not know stops the compilation (the
// throw cannot be evaluated in a constant expression): teach the walker a header the IDL adds.
constexpr Header ExtensionNamed(std::string_view name) {
  for (std::size_t i = kFirstExtensionHeader; i < kHeaderCount; ++i)
    if (kHeaderNames[i] == name) return static_cast<Header>(i);
  throw "the BTH opcode table names a header the packet walker does not know";
}

}  // namespace walker_detail

inline constexpr std::size_t kMaxExtensionHeaders = walker_detail::MaxExtensionHeaders();

// What a BTH opcode implies after the BTH.
struct OpcodeShape {
  const codec::OpcodeDesc* desc = nullptr;  // its row of kBthOpcodeTable; null: no such opcode
  bool payload = false;                     // data follows the headers
  uint8_t count = 0;                        // extension headers
  uint8_t bytes = 0;                        // their total size
  std::array<Header, kMaxExtensionHeaders> headers{};   // in wire order
  std::array<uint8_t, kMaxExtensionHeaders> offsets{};  // each from the end of the BTH
};

// Row i for BTH:OpCode i, derived from the generated table at compile time.
inline constexpr std::array<OpcodeShape, 256> kOpcodeShapes = [] {
  std::array<OpcodeShape, 256> shapes{};
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const codec::OpcodeDesc& row = kBthOpcodeTable[i];
    if (row.name.empty()) continue;
    OpcodeShape& s = shapes[i];
    s.desc = &kBthOpcodeTable[i];
    s.payload = row.payload;
    for (std::string_view name : row.headers) {
      const Header h = walker_detail::ExtensionNamed(name);
      s.headers[s.count] = h;
      s.offsets[s.count] = s.bytes;
      s.bytes = static_cast<uint8_t>(s.bytes + SizeOf(h));
      ++s.count;
    }
  }
  return shapes;
}();

// The shape of `opcode`, or null when the table has no such opcode.
constexpr const OpcodeShape* ShapeOf(uint8_t opcode) {
  const OpcodeShape& s = kOpcodeShapes[opcode];
  return s.desc != nullptr ? &s : nullptr;
}

enum class WalkProblem : uint8_t {
  kNone,
  kTooShort,             // the packet ends inside a header (Finding::header), or before its CRCs
  kBadLinkVersion,       // LRH:LVer is not 0 (IBA 7.7.2)
  kPktLenMismatch,       // LRH:PktLen * 4 + the VCRC is not the packet's size (IBA 7.7.8)
  kNotIbaTransport,      // LRH:LNH raw (0) or IPv6 (1): no BTH follows (IBA 7.7.9)
  kBadGrh,               // GRH:IPVer not 6, NxtHdr not 0x1B, or PayLen not the bytes after it
  kBadTransportVersion,  // BTH:TVer is not 0 (IBA 9.2)
  kUnknownOpcode,        // BTH:OpCode is not in the opcode table
  kUnexpectedPayload,    // bytes after the headers of an opcode that carries no payload
  kBadPadCnt,            // more pad than payload, or pad on an opcode without payload
};
const char* ToString(WalkProblem problem);

struct WalkFinding {
  WalkProblem problem = WalkProblem::kNone;
  Header header = Header::kLrh;  // the header it concerns
  uint8_t offset = 0;            // where that header starts (would start, when too short)
};

enum class WalkDepth : uint8_t { kBth, kAll };
enum class WalkMode : uint8_t { kStrict, kTolerant };

struct WalkOptions {
  WalkDepth depth = WalkDepth::kAll;
  WalkMode mode = WalkMode::kStrict;
  // False for a packet built up to its pad whose CRCs are not appended yet (the ICRC's own
  // walk): LRH:PktLen and GRH:PayLen then count the ICRC that will follow.
  bool crcs = true;
};

// Every problem one walk can meet: LVer, PktLen, GRH, TVer, payload on an opcode without one,
// then the PadCnt (each other problem ends the walk; a raw packet's walk meets at most three).
inline constexpr std::size_t kMaxFindings = 6;

// What a walk found. All zeros to start with, and 64 bytes: the receive paths make one per
// packet.
struct PacketLayout {
  static constexpr uint32_t kNone = 0;  // an ICRC/VCRC offset: none (the LRH comes first)

  const OpcodeShape* opcode = nullptr;  // kAll: the BTH opcode's shape
  uint32_t size = 0;                    // the bytes walked
  uint32_t payload = 0;        // the first payload byte (kAll, or a raw packet's after the LRH)
  uint32_t payload_bytes = 0;  // without the pad
  uint32_t icrc = kNone;       // where the ICRC starts
  uint32_t vcrc = kNone;       // where the VCRC starts
  // 1 + the offset of each header found, 0 for one not found.
  std::array<uint8_t, kHeaderCount> at{};
  LinkNextHeader lnh = LinkNextHeader::RAW;
  uint8_t pad = 0;  // BTH:PadCnt
  uint8_t finding_count = 0;
  std::array<WalkFinding, kMaxFindings> findings{};

  bool ok() const { return finding_count == 0; }
  WalkProblem problem() const {  // the first one
    return finding_count ? findings[0].problem : WalkProblem::kNone;
  }
  bool has(Header h) const { return at[static_cast<std::size_t>(h)] != 0; }
  std::size_t offset(Header h) const { return at[static_cast<std::size_t>(h)] - 1u; }
  // The bytes of header `h` (which must be present) in `packet`.
  std::span<const uint8_t> bytes(std::span<const uint8_t> packet, Header h) const {
    return packet.subspan(offset(h), SizeOf(h));
  }
  std::span<const uint8_t> payload_of(std::span<const uint8_t> packet) const {
    return packet.subspan(payload, payload_bytes);
  }
  std::span<const WalkFinding> all_findings() const {
    return std::span<const WalkFinding>(findings).first(finding_count);
  }
};

namespace walker_detail {

// Records a problem; true when the walk must stop here (strict mode).
[[gnu::always_inline]] inline bool Note(PacketLayout& l, WalkMode mode, WalkProblem problem,
                                        Header header, std::size_t offset) {
  if (l.finding_count < kMaxFindings)
    l.findings[l.finding_count++] = {problem, header, static_cast<uint8_t>(offset)};
  return mode == WalkMode::kStrict;
}

inline void Set(PacketLayout& l, Header h, std::size_t offset) {
  l.at[static_cast<std::size_t>(h)] = static_cast<uint8_t>(offset + 1);
}

}  // namespace walker_detail

static_assert(sizeof(PacketLayout) <= 64, "a cache line, zeroed by a few stores");

// Walks `packet` (LRH first; through the VCRC unless options.crcs is false). Always inlined:
// the options are constants at every call, and what they leave out costs nothing.
[[gnu::always_inline]] inline PacketLayout WalkPacket(std::span<const uint8_t> packet,
                                                      WalkOptions options = {}) {
  using walker_detail::Note;
  using walker_detail::Set;
  PacketLayout l;
  const std::size_t size = packet.size();
  const WalkMode mode = options.mode;
  l.size = static_cast<uint32_t>(size);
  const std::size_t vcrc_bytes = options.crcs ? ibcrc::kVcrcBytes : 0;
  if (size < LRH::kSize + vcrc_bytes) {
    Note(l, mode, WalkProblem::kTooShort, Header::kLrh, 0);
    return l;
  }
  Set(l, Header::kLrh, 0);
  const LRHConstView lrh(packet);
  l.lnh = static_cast<LinkNextHeader>(lrh.LNH());
  if (lrh.LVer() != 0 && Note(l, mode, WalkProblem::kBadLinkVersion, Header::kLrh, 0)) return l;
  const bool global = l.lnh == LinkNextHeader::IBA_GLOBAL;
  const bool iba = global || l.lnh == LinkNextHeader::IBA_LOCAL;
  // A raw packet is no transport packet: a strict walk ends here (a tolerant one goes on to
  // check its length and find its payload: the LRH is all a raw packet's walk can read).
  if (!iba && Note(l, mode, WalkProblem::kNotIbaTransport, Header::kLrh, 0)) return l;
  const std::size_t icrc_bytes = iba ? ibcrc::kIcrcBytes : 0;
  const std::size_t tail = options.crcs ? icrc_bytes + vcrc_bytes : 0;  // CRC bytes at the end
  const std::size_t bth = LRH::kSize + (global ? GRH::kSize : 0);
  if (iba && size < bth + BTH::kSize + tail) {
    const bool in_grh = global && size < LRH::kSize + GRH::kSize + tail;
    Note(l, mode, WalkProblem::kTooShort, in_grh ? Header::kGrh : Header::kBth,
         in_grh ? LRH::kSize : bth);
    return l;
  }
  // PktLen counts the words from the LRH through the ICRC, the VCRC excluded.
  const std::size_t expected = std::size_t{lrh.PktLen()} * 4 + ibcrc::kVcrcBytes;
  const std::size_t whole = options.crcs ? size : size + icrc_bytes + ibcrc::kVcrcBytes;
  if (expected != whole && Note(l, mode, WalkProblem::kPktLenMismatch, Header::kLrh, 0)) return l;
  if (options.crcs) {
    l.vcrc = static_cast<uint32_t>(size - vcrc_bytes);
    if (iba) l.icrc = static_cast<uint32_t>(l.vcrc - icrc_bytes);
  }
  const std::size_t end = size - tail;  // the first CRC byte (or the end)
  if (!iba) {
    l.payload = LRH::kSize;
    l.payload_bytes = static_cast<uint32_t>(end - LRH::kSize);
    return l;
  }
  if (global) Set(l, Header::kGrh, LRH::kSize);
  Set(l, Header::kBth, bth);
  if (options.depth == WalkDepth::kBth) return l;

  if (global) {
    const GRHConstView grh(packet.subspan(LRH::kSize));
    // PayLen: the bytes after the GRH through the ICRC (IBA 8.3.1).
    const std::size_t pay_len = whole - ibcrc::kVcrcBytes - LRH::kSize - GRH::kSize;
    if ((grh.IPVer() != kGrhIpVersion || grh.NxtHdr() != kGrhNextHeaderIba ||
         grh.PayLen() != pay_len) &&
        Note(l, mode, WalkProblem::kBadGrh, Header::kGrh, LRH::kSize))
      return l;
  }
  const BTHConstView bth_view(packet.subspan(bth));
  if (bth_view.TVer() != 0 && Note(l, mode, WalkProblem::kBadTransportVersion, Header::kBth, bth))
    return l;
  const OpcodeShape& shape = kOpcodeShapes[bth_view.OpCode()];
  if (shape.desc == nullptr) {
    Note(l, mode, WalkProblem::kUnknownOpcode, Header::kBth, bth);
    return l;
  }
  l.opcode = &shape;
  const std::size_t ext = bth + BTH::kSize;
  for (std::size_t i = 0; i < shape.count; ++i) {
    const std::size_t at = ext + shape.offsets[i];
    if (at + SizeOf(shape.headers[i]) > end) {
      Note(l, mode, WalkProblem::kTooShort, shape.headers[i], at);
      return l;
    }
    Set(l, shape.headers[i], at);
  }
  const std::size_t after = ext + shape.bytes;
  const std::size_t padded = end - after;
  l.pad = bth_view.PadCnt();
  l.payload = static_cast<uint32_t>(after);
  if (!shape.payload && padded != 0) {
    l.payload_bytes = static_cast<uint32_t>(padded);
    if (Note(l, mode, WalkProblem::kUnexpectedPayload, Header::kBth, bth)) return l;
  }
  if ((!shape.payload && l.pad != 0) || l.pad > padded) {
    Note(l, mode, WalkProblem::kBadPadCnt, Header::kBth, bth);
    return l;
  }
  l.payload_bytes = static_cast<uint32_t>(padded - l.pad);
  return l;
}

}  // namespace softib::wire
