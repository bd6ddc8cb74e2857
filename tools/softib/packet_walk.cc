#include "packet_walk.h"

#include <cstdio>
#include <optional>
#include <ostream>
#include <string>

#include "hex.h"
#include "ib_crc.h"
#include "softib/codec/bits.h"
#include "softib/codec/engine.h"

namespace softib::madtool {
namespace {

using codec::FormatDesc;

constexpr uint8_t kUdSendOnly = 0x64;
constexpr uint8_t kUdSendOnlyWithImmediate = 0x65;
constexpr uint32_t kQp1QKey = 0x80010000;

std::optional<uint64_t> Field(const FormatDesc& desc, std::span<const uint8_t> bytes,
                              std::string_view name, Errors* errors) {
  for (const codec::FieldDesc& f : desc.fields)
    if (f.name == name) return codec::GetBits(bytes, f.bit_offset, f.bit_width);
  errors->push_back("layout " + std::string(desc.name) + " has no field " + std::string(name));
  return std::nullopt;
}

// Prints header `name` at `offset`; returns its size, or nothing when the
// packet is too short or the layout is unknown.
std::optional<std::size_t> PrintHeader(std::ostream& os, std::string_view name,
                                       std::span<const uint8_t> packet, std::size_t offset,
                                       std::size_t end, Errors* errors) {
  const FormatDesc* desc = codec::FindFormat(name);
  if (desc == nullptr) {
    errors->push_back("no layout for header " + std::string(name));
    return std::nullopt;
  }
  if (end < offset + desc->size) {
    errors->push_back("too short: packet ends inside its " + std::string(name) + " (needs " +
                      std::to_string(offset + desc->size) + " bytes before the CRCs, has " +
                      std::to_string(end) + ")");
    return std::nullopt;
  }
  os << "-- " << name << " (bytes " << offset << ".." << offset + desc->size - 1 << ") --\n";
  codec::PrintFields(os, *desc, packet.subspan(offset, desc->size), 0);
  return desc->size;
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

void PrintCrcs(std::ostream& os, std::span<const uint8_t> packet) {
  const ibcrc::CrcCheck check = ibcrc::CheckCrcs(packet);
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
  const FormatDesc* lrh = codec::FindFormat("LRH");
  if (lrh == nullptr) {
    errors->push_back("no LRH layout");
    return;
  }
  if (packet.size() < lrh->size + ibcrc::kVcrcBytes) {
    errors->push_back("too short: a packet needs at least " +
                      std::to_string(lrh->size + ibcrc::kVcrcBytes) + " bytes (LRH + VCRC), got " +
                      std::to_string(packet.size()));
    return;
  }
  os << "Packet (" << packet.size() << " bytes)\n";
  PrintHeader(os, "LRH", packet, 0, packet.size(), errors);
  const auto lnh = Field(*lrh, packet, "LNH", errors);
  const auto pkt_len = Field(*lrh, packet, "PktLen", errors);
  if (!lnh || !pkt_len) return;
  if (*pkt_len * 4 + ibcrc::kVcrcBytes != packet.size())
    os << "warning: LRH.PktLen says " << *pkt_len * 4 + ibcrc::kVcrcBytes
       << " bytes with the VCRC, the packet has " << packet.size() << "\n";

  const bool iba = *lnh == 2 || *lnh == 3;
  const std::size_t crc_bytes = ibcrc::kVcrcBytes + (iba ? ibcrc::kIcrcBytes : 0);
  if (packet.size() < lrh->size + crc_bytes) {
    errors->push_back("too short: no room for the ICRC and VCRC");
    return;
  }
  const std::size_t end = packet.size() - crc_bytes;  // first CRC byte
  std::size_t offset = lrh->size;
  if (!iba) {
    os << "-- raw payload (" << end - offset << " bytes) --\n"
       << hex::Dump(packet.subspan(offset, end - offset));
    PrintCrcs(os, packet);
    return;
  }
  if (*lnh == 3) {
    const auto n = PrintHeader(os, "GRH", packet, offset, end, errors);
    if (!n) return;
    offset += *n;
  }
  const FormatDesc* bth = codec::FindFormat("BTH");
  const std::size_t bth_at = offset;
  const auto bth_size = PrintHeader(os, "BTH", packet, offset, end, errors);
  if (!bth_size || bth == nullptr) return;
  offset += *bth_size;
  const auto bth_bytes = packet.subspan(bth_at, bth->size);
  const auto opcode = Field(*bth, bth_bytes, "OpCode", errors);
  const auto pad = Field(*bth, bth_bytes, "PadCnt", errors);
  const auto dest_qp = Field(*bth, bth_bytes, "DestQP", errors);
  if (!opcode || !pad || !dest_qp) return;
  const codec::OpcodeDesc* row = codec::FindOpcode(static_cast<uint8_t>(*opcode));
  if (row == nullptr) {
    errors->push_back("unknown BTH opcode " + hex::Number(*opcode, 2));
    PrintCrcs(os, packet);
    return;
  }
  for (std::string_view header : row->headers) {
    const auto n = PrintHeader(os, header, packet, offset, end, errors);
    if (!n) return;
    offset += *n;
  }
  if (!row->payload) {
    if (offset != end)
      os << "warning: " << end - offset << " bytes after the headers of " << row->name
         << ", which carries no payload\n";
  } else if (end - offset < *pad) {
    errors->push_back("too short: PadCnt " + std::to_string(*pad) + " exceeds the payload");
  } else {
    const auto payload = packet.subspan(offset, end - offset - *pad);
    const bool mad_qp = (*opcode == kUdSendOnly || *opcode == kUdSendOnlyWithImmediate) &&
                        (*dest_qp == 0 || *dest_qp == 1);
    if (mad_qp) {
      os << "-- MAD on QP" << *dest_qp << " (" << payload.size() << " bytes) --\n";
      DecodeMad(os, payload, 0, errors);
    } else {
      os << "-- payload (" << payload.size() << " bytes"
         << (*pad ? ", then " + std::to_string(*pad) + " pad" : std::string()) << ") --\n"
         << hex::Dump(payload);
    }
  }
  PrintCrcs(os, packet);
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
