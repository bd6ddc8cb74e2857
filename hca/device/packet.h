// IBA packets as they travel on a link: LRH, GRH when LRH:LNH says IBA global, BTH, the
// extension headers the opcode calls for (in the opcode table's order), payload, pad to a
// 4-byte boundary (BTH:PadCnt), ICRC, VCRC. All headers go through the generated codecs
// (softib/wire/wire.h); which headers an opcode carries comes from the generated opcode
// table, never from a hand-written list. Received packets are walked by runtime/wire's packet
// walker (softib/wire/packet_walker.h), which every layer reading packets shares.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "softib/codec/format_desc.h"
#include "softib/wire/packet_walker.h"
#include "softib/wire/wire.h"

namespace softib::hca {

// GRH:NxtHdr and GRH:IPVer of a GRH followed by a BTH, and the largest LRH:PktLen.
using wire::kGrhIpVersion;
using wire::kGrhNextHeaderIba;
using wire::kMaxPacketWords;

// Every header a packet may carry; which ones are on the wire follows from LRH:LNH (GRH)
// and BTH:OpCode (the rest). Fields of absent headers are ignored.
struct PacketHeaders {
  wire::LRH lrh;
  std::optional<wire::GRH> grh;
  wire::BTH bth;
  wire::RDETH rdeth;
  wire::DETH deth;
  wire::RETH reth;
  wire::AtomicETH atomic_eth;
  wire::AETH aeth;
  wire::AtomicAckETH atomic_ack_eth;
  wire::ImmDt immdt;
  wire::IETH ieth;
};

// Why a received packet was dropped; kNone for a packet that passed every check.
enum class DropReason : uint8_t {
  kNone,
  kTooShort,           // shorter than LRH + BTH + CRCs, or than its own headers
  kBadLver,            // LRH:LVer is not 0
  kUnsupportedLnh,     // raw packets (LNH 0/1) are not IBA transport packets
  kBadPktLen,          // LRH:PktLen disagrees with the bytes received
  kBadVcrc,            // link-level CRC mismatch
  kBadGrh,             // GRH:IPVer, NxtHdr or PayLen wrong
  kBadTver,            // BTH:TVer is not 0
  kUnknownOpcode,      // BTH:OpCode not in the opcode table
  kBadPadCnt,          // more pad than payload, or pad on an opcode without payload
  kUnexpectedPayload,  // data after the headers of an opcode that carries none
  kBadIcrc,            // end-to-end CRC mismatch
};
const char* ToString(DropReason reason);

struct ParsedPacket {
  PacketHeaders hdr;
  const codec::OpcodeDesc* opcode = nullptr;
  std::span<const uint8_t> payload;  // without pad; points into the parsed bytes
};

// Bytes of the extension headers `opcode` lists (after the BTH).
std::size_t ExtensionHeaderBytes(const codec::OpcodeDesc& opcode);

// Bytes on the wire of a packet with these headers and payload, CRCs included.
std::size_t WireBytes(bool global, const codec::OpcodeDesc& opcode, std::size_t payload_bytes);

// Builds a whole packet. Computes LRH:LNH (from grh presence), LRH:PktLen, GRH:PayLen,
// GRH:IPVer, GRH:NxtHdr and BTH:PadCnt; every other field is taken from `hdr`.
// Returns an empty vector when the opcode is unknown, when payload is given to an opcode
// that carries none, or when the packet would not fit LRH:PktLen.
std::vector<uint8_t> BuildPacket(PacketHeaders hdr, std::span<const uint8_t> payload);
// The same, built in `storage` (its contents are discarded, its capacity reused).
std::vector<uint8_t> BuildPacket(PacketHeaders hdr, std::span<const uint8_t> payload,
                                 std::vector<uint8_t> storage);

// CRC offload (crc_offload.cc). An *unsealed* packet has every byte of its wire format but
// its ICRC and VCRC, whose 6 bytes are there and zero: what the HCA builds for a link that
// carries it inside the daemon where nobody can observe it (Link::TransmitUnsealed). Whoever
// can observe a packet (a capture, a fault injector, a tunnel, any link that does not take
// unsealed packets) seals it first. A receiver checks the CRCs of every sealed packet.
std::vector<uint8_t> BuildUnsealedPacket(PacketHeaders hdr, std::span<const uint8_t> payload,
                                         std::vector<uint8_t> storage);
// Computes the ICRC and VCRC of an unsealed packet into its last 6 bytes (no reallocation).
void SealPacket(std::vector<uint8_t>& packet);
// True when every packet must be sealed and checked (the run option SOFTIB_FORCE_CRC=1, read
// once per process, or SetForceCrcs): no CRC offload anywhere.
bool ForceCrcs();
// Tests: overrides the run option for this process.
void SetForceCrcs(bool force);

// Checks a received packet (lengths, versions, VCRC, GRH, opcode, pad, ICRC) and decodes
// its headers into `out`. `out->payload` views `bytes`, so keep them alive together.
// `sealed` false: the packet came unsealed over an in-daemon link (CRC offload), so its
// CRC bytes are not checked (every other check is).
DropReason ParsePacket(std::span<const uint8_t> bytes, ParsedPacket* out, bool sealed = true);

}  // namespace softib::hca
