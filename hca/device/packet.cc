#include "hca/device/packet.h"

#include <algorithm>
#include <string_view>

#include "softib/wire/ib_crc.h"
#include "softib/wire/packet_walker.h"

namespace softib::hca {
namespace {

constexpr std::size_t kCrcBytes = ibcrc::kIcrcBytes + ibcrc::kVcrcBytes;
// A packet of a 4096-byte MTU with every header it can carry, rounded up.
constexpr std::size_t kPacketBufferBytes = 4096 + 256;

// Applies `fn` to the header struct of extension header `h`.
template <typename Fn>
void WithHeader(PacketHeaders& hdr, wire::Header h, Fn&& fn) {
  switch (h) {
    case wire::Header::kRdeth:
      return fn(hdr.rdeth);
    case wire::Header::kDeth:
      return fn(hdr.deth);
    case wire::Header::kReth:
      return fn(hdr.reth);
    case wire::Header::kAtomicEth:
      return fn(hdr.atomic_eth);
    case wire::Header::kAeth:
      return fn(hdr.aeth);
    case wire::Header::kAtomicAckEth:
      return fn(hdr.atomic_ack_eth);
    case wire::Header::kImmDt:
      return fn(hdr.immdt);
    case wire::Header::kIeth:
      return fn(hdr.ieth);
    case wire::Header::kLrh:
    case wire::Header::kGrh:
    case wire::Header::kBth:
      return;  // not extension headers
  }
}

// The receive path's reason for a problem the strict walk found.
DropReason DropOf(wire::WalkProblem problem) {
  switch (problem) {
    case wire::WalkProblem::kNone:
      return DropReason::kNone;
    case wire::WalkProblem::kTooShort:
      return DropReason::kTooShort;
    case wire::WalkProblem::kBadLinkVersion:
      return DropReason::kBadLver;
    case wire::WalkProblem::kPktLenMismatch:
      return DropReason::kBadPktLen;
    case wire::WalkProblem::kNotIbaTransport:
      return DropReason::kUnsupportedLnh;
    case wire::WalkProblem::kBadGrh:
      return DropReason::kBadGrh;
    case wire::WalkProblem::kBadTransportVersion:
      return DropReason::kBadTver;
    case wire::WalkProblem::kUnknownOpcode:
      return DropReason::kUnknownOpcode;
    case wire::WalkProblem::kUnexpectedPayload:
      return DropReason::kUnexpectedPayload;
    case wire::WalkProblem::kBadPadCnt:
      return DropReason::kBadPadCnt;
  }
  return DropReason::kTooShort;
}

}  // namespace

const char* ToString(DropReason reason) {
  switch (reason) {
    case DropReason::kNone:
      return "none";
    case DropReason::kTooShort:
      return "too short";
    case DropReason::kBadLver:
      return "bad LRH:LVer";
    case DropReason::kUnsupportedLnh:
      return "unsupported LRH:LNH";
    case DropReason::kBadPktLen:
      return "bad LRH:PktLen";
    case DropReason::kBadVcrc:
      return "bad VCRC";
    case DropReason::kBadGrh:
      return "bad GRH";
    case DropReason::kBadTver:
      return "bad BTH:TVer";
    case DropReason::kUnknownOpcode:
      return "unknown BTH:OpCode";
    case DropReason::kBadPadCnt:
      return "bad BTH:PadCnt";
    case DropReason::kUnexpectedPayload:
      return "payload on an opcode without one";
    case DropReason::kBadIcrc:
      return "bad ICRC";
  }
  return "?";
}

std::size_t ExtensionHeaderBytes(const codec::OpcodeDesc& opcode) {
  const wire::OpcodeShape* shape = wire::ShapeOf(opcode.opcode);
  return shape != nullptr ? shape->bytes : 0;
}

std::size_t WireBytes(bool global, const codec::OpcodeDesc& opcode, std::size_t payload_bytes) {
  const std::size_t padded = (payload_bytes + 3) & ~std::size_t{3};
  return wire::LRH::kSize + (global ? wire::GRH::kSize : 0) + wire::BTH::kSize +
         ExtensionHeaderBytes(opcode) + padded + kCrcBytes;
}

std::vector<uint8_t> BuildPacket(PacketHeaders hdr, std::span<const uint8_t> payload) {
  return BuildPacket(hdr, payload, {});
}

std::vector<uint8_t> BuildPacket(PacketHeaders hdr, std::span<const uint8_t> payload,
                                 std::vector<uint8_t> storage) {
  std::vector<uint8_t> out = BuildUnsealedPacket(hdr, payload, std::move(storage));
  if (!out.empty()) SealPacket(out);
  return out;
}

std::vector<uint8_t> BuildUnsealedPacket(PacketHeaders hdr, std::span<const uint8_t> payload,
                                         std::vector<uint8_t> storage) {
  const wire::OpcodeShape* shape = wire::ShapeOf(hdr.bth.OpCode);
  if (shape == nullptr || (!shape->payload && !payload.empty())) return {};
  const bool global = hdr.grh.has_value();
  const std::size_t total = WireBytes(global, *shape->desc, payload.size());
  // PktLen counts the words from the LRH through the ICRC (everything but the VCRC).
  const std::size_t words = (total - ibcrc::kVcrcBytes) / 4;
  if (words > kMaxPacketWords) return {};

  hdr.lrh.LNH = static_cast<uint8_t>(global ? wire::LinkNextHeader::IBA_GLOBAL
                                            : wire::LinkNextHeader::IBA_LOCAL);
  hdr.lrh.PktLen = static_cast<uint16_t>(words);
  hdr.bth.PadCnt = static_cast<uint8_t>((4 - payload.size() % 4) % 4);

  std::vector<uint8_t> out = std::move(storage);
  out.clear();
  // One allocation at most, and every buffer of at least a 4 KiB-MTU packet's size: buffers
  // are recycled between packets of every kind (an ACK's buffer carries the next data
  // packet), so a small one would be grown (malloc, copy, free) on its next use.
  // SealPacket writes the CRCs in place.
  out.reserve(std::max(total, kPacketBufferBytes));
  const std::size_t header_bytes = total - kCrcBytes - ((payload.size() + 3) & ~std::size_t{3});
  out.resize(header_bytes);
  std::size_t at = 0;
  hdr.lrh.Pack(std::span(out).subspan(at, wire::LRH::kSize));
  at += wire::LRH::kSize;
  if (global) {
    wire::GRH& grh = *hdr.grh;
    grh.IPVer = kGrhIpVersion;
    grh.NxtHdr = kGrhNextHeaderIba;
    // PayLen: the bytes after the GRH up to and including the ICRC.
    grh.PayLen =
        static_cast<uint16_t>(total - wire::LRH::kSize - wire::GRH::kSize - ibcrc::kVcrcBytes);
    grh.Pack(std::span(out).subspan(at, wire::GRH::kSize));
    at += wire::GRH::kSize;
  }
  hdr.bth.Pack(std::span(out).subspan(at, wire::BTH::kSize));
  at += wire::BTH::kSize;
  for (std::size_t i = 0; i < shape->count; ++i) {
    WithHeader(hdr, shape->headers[i], [&](auto& h) {
      h.Pack(std::span(out).subspan(at + shape->offsets[i], std::decay_t<decltype(h)>::kSize));
    });
  }
  // The payload is appended rather than written over zeros (no fill of the whole packet
  // first); the pad bytes are zero (IBA 9.2: pad bytes are transmitted as zero).
  out.insert(out.end(), payload.begin(), payload.end());
  out.resize(total);  // pad and the CRC slots, zero until SealPacket
  return out;
}

DropReason ParsePacket(std::span<const uint8_t> bytes, ParsedPacket* out, bool sealed) {
  *out = ParsedPacket{};
  PacketHeaders& hdr = out->hdr;
  const wire::PacketLayout layout = wire::WalkPacket(bytes);  // strict, every header
  if (!layout.ok()) {
    // Past the link layer (the BTH found), a damaged packet is told from a malformed one by
    // its VCRC first: corruption on the link is a VCRC error, whichever field it hit.
    if (sealed && layout.has(wire::Header::kBth) &&
        ibcrc::ComputeVcrc(bytes.first(layout.vcrc)) != ibcrc::LoadLe16(&bytes[layout.vcrc]))
      return DropReason::kBadVcrc;
    return DropOf(layout.problem());
  }
  if (sealed) {
    const ibcrc::CrcCheck crcs = ibcrc::CheckCrcs(bytes, layout);
    if (!crcs.vcrc_ok()) return DropReason::kBadVcrc;
    if (!crcs.icrc_ok()) return DropReason::kBadIcrc;
  }

  hdr.lrh.Unpack(layout.bytes(bytes, wire::Header::kLrh));
  if (layout.has(wire::Header::kGrh)) {
    hdr.grh.emplace();
    hdr.grh->Unpack(layout.bytes(bytes, wire::Header::kGrh));
  }
  hdr.bth.Unpack(layout.bytes(bytes, wire::Header::kBth));
  const wire::OpcodeShape& shape = *layout.opcode;
  out->opcode = shape.desc;
  for (std::size_t i = 0; i < shape.count; ++i) {
    WithHeader(hdr, shape.headers[i],
               [&](auto& h) { h.Unpack(layout.bytes(bytes, shape.headers[i])); });
  }
  out->payload = layout.payload_of(bytes);
  return DropReason::kNone;
}

}  // namespace softib::hca
