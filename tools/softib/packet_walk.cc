#include "packet_walk.h"

#include <cstdio>
#include <optional>
#include <ostream>
#include <string>

#include "softib/codec/bits.h"
#include "softib/codec/engine.h"
#include "softib/wire/hex.h"
#include "softib/wire/ib_crc.h"
#include "softib/wire/packet_walker.h"

namespace softib::madtool {
namespace {

using codec::FormatDesc;

constexpr uint8_t kUdSendOnly = 0x64;
constexpr uint32_t kQp1QKey = 0x80010000;

// Prints header `h`, which the walk found, field by field through its generated layout.
void PrintHeader(std::ostream& os, wire::Header h, std::span<const uint8_t> packet,
                 const wire::PacketLayout& layout) {
  const FormatDesc* desc = codec::FindFormat(wire::NameOf(h));
  const std::size_t offset = layout.offset(h);
  os << "-- " << wire::NameOf(h) << " (bytes " << offset << ".." << offset + wire::SizeOf(h) - 1
     << ") --\n";
  if (desc != nullptr) codec::PrintFields(os, *desc, layout.bytes(packet, h), 0);
}

// The message of a walk that stopped because the packet ends inside header `f.header` (an
// IBA transport packet: its ICRC and VCRC take the last six bytes).
std::string TooShort(const wire::WalkFinding& f, std::span<const uint8_t> packet) {
  const std::size_t crcs = ibcrc::kIcrcBytes + ibcrc::kVcrcBytes;
  const std::size_t end = packet.size() > crcs ? packet.size() - crcs : 0;
  return "too short: packet ends inside its " + std::string(wire::NameOf(f.header)) + " (needs " +
         std::to_string(f.offset + wire::SizeOf(f.header)) + " bytes before the CRCs, has " +
         std::to_string(end) + ")";
}

// A CRC as its wire bytes (least significant byte first), the way tshark shows it.
std::string WireHex(uint32_t crc, int bytes) {
  std::vector<uint8_t> wire;
  for (int i = 0; i < bytes; ++i) wire.push_back(static_cast<uint8_t>(crc >> (8 * i)));
  return "0x" + hex::Format(wire);
}

void PrintCrc(std::ostream& os, std::string_view name, uint32_t wire, uint32_t computed,
              int bytes) {
  std::string line(name);
  line += ':';
  line.resize(32, '.');
  os << line << WireHex(wire, bytes)
     << (wire == computed ? " ok" : " BAD (expected " + WireHex(computed, bytes) + ")") << "\n";
}

void PrintCrcs(std::ostream& os, std::span<const uint8_t> packet,
               const wire::PacketLayout& layout) {
  const ibcrc::CrcCheck check = ibcrc::CheckCrcs(packet, layout);
  if (!check.well_formed) return;
  os << "-- CRCs --\n";
  if (check.has_icrc) PrintCrc(os, "ICRC", check.icrc_wire, check.icrc_computed, 4);
  PrintCrc(os, "VCRC", check.vcrc_wire, check.vcrc_computed, 2);
}

std::string SetAll(const FormatDesc* desc, std::span<uint8_t> bytes,
                   std::initializer_list<std::pair<std::string_view, uint64_t>> values) {
  if (desc == nullptr) return "a wire header layout is missing";
  for (const auto& [name, value] : values) {
    const std::string e = codec::SetField(*desc, bytes, name, std::to_string(value));
    if (!e.empty()) return std::string(desc->name) + "." + std::string(name) + ": " + e;
  }
  return "";
}

}  // namespace

void DecodePacket(std::ostream& os, std::span<const uint8_t> packet, Errors* errors) {
  // The packet walker's tolerant mode: every header it could find, and each problem it met.
  const wire::PacketLayout layout =
      wire::WalkPacket(packet, {.depth = wire::WalkDepth::kAll, .mode = wire::WalkMode::kTolerant});
  const auto found = layout.all_findings();
  auto problem = [&](wire::WalkProblem p) -> const wire::WalkFinding* {
    for (const wire::WalkFinding& f : found)
      if (f.problem == p) return &f;
    return nullptr;
  };
  if (!layout.has(wire::Header::kLrh)) {
    errors->push_back("too short: a packet needs at least " +
                      std::to_string(wire::LRH::kSize + ibcrc::kVcrcBytes) +
                      " bytes (LRH + VCRC), got " + std::to_string(packet.size()));
    return;
  }
  os << "Packet (" << packet.size() << " bytes)\n";
  PrintHeader(os, wire::Header::kLrh, packet, layout);
  const wire::LRHConstView lrh(packet);
  if (problem(wire::WalkProblem::kBadLinkVersion))
    os << "warning: LRH.LVer is " << int{lrh.LVer()} << ", not 0\n";
  if (problem(wire::WalkProblem::kPktLenMismatch))
    os << "warning: LRH.PktLen says " << std::size_t{lrh.PktLen()} * 4 + ibcrc::kVcrcBytes
       << " bytes with the VCRC, the packet has " << packet.size() << "\n";
  if (problem(wire::WalkProblem::kNotIbaTransport)) {
    os << "-- raw payload (" << layout.payload_bytes << " bytes) --\n"
       << hex::Dump(layout.payload_of(packet));
    PrintCrcs(os, packet, layout);
    return;
  }
  if (const wire::WalkFinding* f = problem(wire::WalkProblem::kTooShort);
      f != nullptr && !layout.has(wire::Header::kBth)) {
    errors->push_back(TooShort(*f, packet));
    return;
  }
  if (layout.has(wire::Header::kGrh)) {
    PrintHeader(os, wire::Header::kGrh, packet, layout);
    if (problem(wire::WalkProblem::kBadGrh))
      os << "warning: GRH.IPVer, NxtHdr or PayLen is not that of a GRH followed by a BTH\n";
  }
  PrintHeader(os, wire::Header::kBth, packet, layout);
  const wire::BTHConstView bth(layout.bytes(packet, wire::Header::kBth));
  if (problem(wire::WalkProblem::kBadTransportVersion))
    os << "warning: BTH.TVer is " << int{bth.TVer()} << ", not 0\n";
  if (layout.opcode == nullptr) {  // the table has no such opcode
    errors->push_back("unknown BTH opcode " + hex::Number(bth.OpCode(), 2));
    PrintCrcs(os, packet, layout);
    return;
  }
  const wire::OpcodeShape& shape = *layout.opcode;
  for (std::size_t i = 0; i < shape.count; ++i) {
    if (!layout.has(shape.headers[i])) break;
    PrintHeader(os, shape.headers[i], packet, layout);
  }
  if (const wire::WalkFinding* f = problem(wire::WalkProblem::kTooShort)) {
    errors->push_back(TooShort(*f, packet));
    return;
  }
  if (problem(wire::WalkProblem::kUnexpectedPayload))
    os << "warning: " << layout.payload_bytes << " bytes after the headers of " << shape.desc->name
       << ", which carries no payload\n";
  if (problem(wire::WalkProblem::kBadPadCnt)) {
    if (!shape.payload) {
      os << "warning: PadCnt " << int{layout.pad} << " on " << shape.desc->name
         << ", which carries no payload\n";
    } else {
      errors->push_back("too short: PadCnt " + std::to_string(layout.pad) + " exceeds the payload");
    }
  } else if (shape.payload) {
    const auto payload = layout.payload_of(packet);
    const auto opcode = static_cast<wire::BthOpcode>(bth.OpCode());
    const bool mad_qp = (opcode == wire::BthOpcode::UD_SEND_ONLY ||
                         opcode == wire::BthOpcode::UD_SEND_ONLY_WITH_IMMEDIATE) &&
                        (bth.DestQP() == 0 || bth.DestQP() == 1);
    if (mad_qp) {
      os << "-- MAD on QP" << bth.DestQP() << " (" << payload.size() << " bytes) --\n";
      DecodeMad(os, payload, 0, errors);
    } else {
      os << "-- payload (" << payload.size() << " bytes"
         << (layout.pad ? ", then " + std::to_string(layout.pad) + " pad" : std::string())
         << ") --\n"
         << hex::Dump(payload);
    }
  }
  PrintCrcs(os, packet, layout);
}

std::vector<uint8_t> BuildMadPacket(std::span<const uint8_t> mad, const MadPacketOptions& options,
                                    Errors* errors) {
  const FormatDesc* lrh = codec::FindFormat("LRH");
  const FormatDesc* bth = codec::FindFormat("BTH");
  const FormatDesc* deth = codec::FindFormat("DETH");
  if (lrh == nullptr || bth == nullptr || deth == nullptr || mad.size() < kMadHeaderSize) {
    errors->push_back("cannot build a packet: missing wire layouts or MAD");
    return {};
  }
  const uint8_t mgmt_class = mad[1];
  const bool smp = mgmt_class == 0x01 || mgmt_class == 0x81;
  const bool directed = mgmt_class == 0x81;
  const std::size_t body = lrh->size + bth->size + deth->size + mad.size();
  const std::size_t words = (body + ibcrc::kIcrcBytes) / 4;
  std::vector<uint8_t> packet(body, 0);
  std::span<uint8_t> p(packet);
  std::string e = SetAll(lrh, p.first(lrh->size),
                         {{"VL", smp ? 15 : 0},
                          {"SL", options.sl},
                          {"LNH", 2},
                          {"DLID", directed ? 0xFFFF : options.dlid},
                          {"PktLen", words},
                          {"SLID", directed ? 0xFFFF : options.slid}});
  if (e.empty())
    e = SetAll(bth, p.subspan(lrh->size, bth->size),
               {{"OpCode", kUdSendOnly},
                {"P_Key", options.p_key},
                {"DestQP", smp ? 0 : 1},
                {"PSN", options.psn}});
  if (e.empty())
    e = SetAll(deth, p.subspan(lrh->size + bth->size, deth->size),
               {{"Q_Key", smp ? 0 : kQp1QKey}, {"SrcQP", smp ? 0 : 1}});
  if (!e.empty()) {
    errors->push_back(e);
    return {};
  }
  std::copy(mad.begin(), mad.end(), packet.begin() + static_cast<long>(body - mad.size()));
  ibcrc::AppendCrcs(packet);
  return packet;
}

}  // namespace softib::madtool
