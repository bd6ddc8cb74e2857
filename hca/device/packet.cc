#include "hca/device/packet.h"

#include <string_view>

#include "ib_crc.h"

namespace softib::hca {
namespace {

constexpr std::size_t kCrcBytes = ibcrc::kIcrcBytes + ibcrc::kVcrcBytes;

// Applies `fn` to the header struct the opcode table names `name`; false for a name this
// layer does not know (a table the packet layer was not taught).
template <typename Fn>
bool WithHeader(PacketHeaders& hdr, std::string_view name, Fn&& fn) {
  if (name == wire::RDETH::kName) return fn(hdr.rdeth), true;
  if (name == wire::DETH::kName) return fn(hdr.deth), true;
  if (name == wire::RETH::kName) return fn(hdr.reth), true;
  if (name == wire::AtomicETH::kName) return fn(hdr.atomic_eth), true;
  if (name == wire::AETH::kName) return fn(hdr.aeth), true;
  if (name == wire::AtomicAckETH::kName) return fn(hdr.atomic_ack_eth), true;
  if (name == wire::ImmDt::kName) return fn(hdr.immdt), true;
  if (name == wire::IETH::kName) return fn(hdr.ieth), true;
  return false;
}

std::size_t HeaderSize(std::string_view name) {
  PacketHeaders scratch;
  std::size_t size = 0;
  WithHeader(scratch, name, [&](auto& h) { size = std::decay_t<decltype(h)>::kSize; });
  return size;
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
  std::size_t bytes = 0;
  for (std::string_view name : opcode.headers) bytes += HeaderSize(name);
  return bytes;
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
  const codec::OpcodeDesc* opcode = codec::FindOpcode(hdr.bth.OpCode);
  if (opcode == nullptr || (!opcode->payload && !payload.empty())) return {};
  const bool global = hdr.grh.has_value();
  const std::size_t total = WireBytes(global, *opcode, payload.size());
  // PktLen counts the words from the LRH through the ICRC (everything but the VCRC).
  const std::size_t words = (total - ibcrc::kVcrcBytes) / 4;
  if (words > kMaxPacketWords) return {};

  hdr.lrh.LNH = static_cast<uint8_t>(global ? wire::LinkNextHeader::IBA_GLOBAL
                                            : wire::LinkNextHeader::IBA_LOCAL);
  hdr.lrh.PktLen = static_cast<uint16_t>(words);
  hdr.bth.PadCnt = static_cast<uint8_t>((4 - payload.size() % 4) % 4);

  std::vector<uint8_t> out = std::move(storage);
  out.clear();
  out.reserve(total);  // AppendCrcs must not reallocate (and copy) the whole packet
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
  for (std::string_view name : opcode->headers) {
    WithHeader(hdr, name, [&](auto& h) {
      const std::size_t size = std::decay_t<decltype(h)>::kSize;
      h.Pack(std::span(out).subspan(at, size));
      at += size;
    });
  }
  // The payload is appended rather than written over zeros (no fill of the whole packet
  // first); the pad bytes are zero (IBA 9.2: pad bytes are transmitted as zero).
  out.insert(out.end(), payload.begin(), payload.end());
  out.resize(total - kCrcBytes);
  ibcrc::AppendCrcs(out);
  return out;
}

DropReason ParsePacket(std::span<const uint8_t> bytes, ParsedPacket* out) {
  *out = ParsedPacket{};
  PacketHeaders& hdr = out->hdr;
  if (bytes.size() < wire::LRH::kSize + wire::BTH::kSize + kCrcBytes) return DropReason::kTooShort;
  hdr.lrh.Unpack(bytes.first(wire::LRH::kSize));
  if (hdr.lrh.LVer != 0) return DropReason::kBadLver;
  const auto lnh = static_cast<wire::LinkNextHeader>(hdr.lrh.LNH);
  if (lnh != wire::LinkNextHeader::IBA_LOCAL && lnh != wire::LinkNextHeader::IBA_GLOBAL)
    return DropReason::kUnsupportedLnh;
  if (bytes.size() % 4 != ibcrc::kVcrcBytes ||
      std::size_t{hdr.lrh.PktLen} * 4 + ibcrc::kVcrcBytes != bytes.size())
    return DropReason::kBadPktLen;
  const ibcrc::CrcCheck crcs = ibcrc::CheckCrcs(bytes);
  if (!crcs.well_formed) return DropReason::kTooShort;
  if (!crcs.vcrc_ok()) return DropReason::kBadVcrc;

  std::size_t at = wire::LRH::kSize;
  if (lnh == wire::LinkNextHeader::IBA_GLOBAL) {
    if (bytes.size() < at + wire::GRH::kSize + wire::BTH::kSize + kCrcBytes)
      return DropReason::kTooShort;
    wire::GRH grh;
    grh.Unpack(bytes.subspan(at, wire::GRH::kSize));
    if (grh.IPVer != kGrhIpVersion || grh.NxtHdr != kGrhNextHeaderIba ||
        std::size_t{grh.PayLen} != bytes.size() - at - wire::GRH::kSize - ibcrc::kVcrcBytes)
      return DropReason::kBadGrh;
    hdr.grh = grh;
    at += wire::GRH::kSize;
  }
  hdr.bth.Unpack(bytes.subspan(at, wire::BTH::kSize));
  at += wire::BTH::kSize;
  if (hdr.bth.TVer != 0) return DropReason::kBadTver;
  out->opcode = codec::FindOpcode(hdr.bth.OpCode);
  if (out->opcode == nullptr) return DropReason::kUnknownOpcode;

  const std::size_t end = bytes.size() - kCrcBytes;  // first ICRC byte
  if (at + ExtensionHeaderBytes(*out->opcode) > end) return DropReason::kTooShort;
  for (std::string_view name : out->opcode->headers) {
    WithHeader(hdr, name, [&](auto& h) {
      const std::size_t size = std::decay_t<decltype(h)>::kSize;
      h.Unpack(bytes.subspan(at, size));
      at += size;
    });
  }
  const std::size_t padded = end - at;
  if (!out->opcode->payload && (padded != 0 || hdr.bth.PadCnt != 0))
    return padded != 0 ? DropReason::kUnexpectedPayload : DropReason::kBadPadCnt;
  if (hdr.bth.PadCnt > padded) return DropReason::kBadPadCnt;
  if (!crcs.icrc_ok()) return DropReason::kBadIcrc;
  out->payload = bytes.subspan(at, padded - hdr.bth.PadCnt);
  return DropReason::kNone;
}

}  // namespace softib::hca
