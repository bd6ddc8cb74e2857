// The two CRCs of an InfiniBand packet (IBTA Vol 1, 7.8):
//   ICRC: 32 bits, the Ethernet CRC-32, over the fields no switch or router
//         changes; the variant fields are replaced by ones while computing it.
//   VCRC: 16 bits, polynomial x^16+x^12+x^3+x+1 (0x100B), initial value 0xFFFF,
//         over every byte from the LRH through the ICRC.
// Both are reflected CRCs (bits enter least significant first, as on Ethernet),
// complemented at the end, and sit on the wire least significant byte first —
// the byte order Linux rxe uses for the RoCE ICRC.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace softib::wire {
struct PacketLayout;  // packet_walker.h
}

namespace softib::ibcrc {

inline constexpr std::size_t kIcrcBytes = 4;
inline constexpr std::size_t kVcrcBytes = 2;

// CRC-32 (IEEE 802.3): init ~0, reflected, final complement. Chain calls by
// passing the previous result as `previous` (0 to start).
uint32_t Crc32(std::span<const uint8_t> data, uint32_t previous = 0);

// CRC-16 with polynomial 0x100B, reflected, init 0xFFFF, final complement.
uint16_t Crc16Vcrc(std::span<const uint8_t> data);

// Computes the ICRC of `headers_and_payload`: the packet from the first LRH byte
// through the last payload/pad byte (no ICRC, no VCRC). Masked as IBTA 7.8.1:
//   local packet (LNH=2):  LRH:VL and BTH:Resv8a are taken as ones;
//   global packet (LNH=3): the whole LRH, GRH:TClass, GRH:FlowLabel, GRH:HopLmt
//                          and BTH:Resv8a are taken as ones.
// The LNH and the header offsets come from the packet walker (packet_walker.h).
// Precondition: an IBA transport packet (LNH 2 or 3) holding its LRH(+GRH)+BTH (else returns 0).
uint32_t ComputeIcrc(std::span<const uint8_t> headers_and_payload);

// VCRC over everything before it (LRH through ICRC).
uint16_t ComputeVcrc(std::span<const uint8_t> lrh_through_icrc);

// Appends the ICRC (when the LNH calls for one) and the VCRC, least significant
// byte first.
void AppendCrcs(std::vector<uint8_t>& packet);

// The CRCs found at the end of a whole packet and the values they should have.
struct CrcCheck {
  bool well_formed = false;  // long enough for its headers and CRCs
  bool has_icrc = false;
  uint32_t icrc_wire = 0, icrc_computed = 0;
  uint16_t vcrc_wire = 0, vcrc_computed = 0;
  bool icrc_ok() const { return !has_icrc || icrc_wire == icrc_computed; }
  bool vcrc_ok() const { return vcrc_wire == vcrc_computed; }
};
CrcCheck CheckCrcs(std::span<const uint8_t> whole_packet);
// The same for a packet already walked with its CRCs (any depth, any mode), not walked again.
CrcCheck CheckCrcs(std::span<const uint8_t> whole_packet, const wire::PacketLayout& layout);

// Reads/writes a value stored least significant byte first.
uint32_t LoadLe32(const uint8_t* p);
uint16_t LoadLe16(const uint8_t* p);

}  // namespace softib::ibcrc
