#include "softib/wire/ib_crc.h"

#include "softib/wire/ib_crc_internal.h"
#include "softib/wire/packet_walker.h"

#include <array>
#include <bit>
#include <cstring>

namespace softib::ibcrc {
namespace {

// Reflected forms of the generator polynomials.
constexpr uint32_t kCrc32Reflected = 0xEDB88320u;  // 0x04C11DB7 bit-reversed
constexpr uint16_t kVcrcReflected = 0xD008u;       // 0x100B bit-reversed

// Slicing-by-8 (the table method extended to eight bytes per step, after Kounavis and
// Berry): Table(k)[n] is the CRC contribution of byte n followed by k zero bytes, so eight
// input bytes fold into the register with eight independent lookups. A CRC of every byte
// of every packet at both ends is the HCA's largest per-byte cost; one byte per step ran
// at ~0.2 GB/s, this at several GB/s.
template <typename T, T kPoly>
constexpr std::array<std::array<T, 256>, 8> MakeTables() {
  std::array<std::array<T, 256>, 8> tables{};
  for (uint32_t n = 0; n < 256; ++n) {
    T c = static_cast<T>(n);
    for (int k = 0; k < 8; ++k)
      c = (c & 1) ? static_cast<T>((c >> 1) ^ kPoly) : static_cast<T>(c >> 1);
    tables[0][n] = c;
  }
  for (int k = 1; k < 8; ++k) {
    for (uint32_t n = 0; n < 256; ++n) {
      const T previous = tables[k - 1][n];
      tables[k][n] = static_cast<T>((previous >> 8) ^ tables[0][previous & 0xFFu]);
    }
  }
  return tables;
}

constexpr auto kCrc32Tables = MakeTables<uint32_t, kCrc32Reflected>();
constexpr auto kVcrcTables = MakeTables<uint16_t, kVcrcReflected>();

// The register (the running CRC, not complemented) after `data`. A reflected CRC of W bits
// XORs into the first W/8 bytes of each eight-byte step; the other bytes index their
// tables directly.
static_assert(std::endian::native == std::endian::little, "the eight-byte step assumes it");

template <typename T>
T Update(T c, std::span<const uint8_t> data, const std::array<std::array<T, 256>, 8>& t) {
  const uint8_t* p = data.data();
  std::size_t n = data.size();
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);  // little-endian hosts: byte i is bits 8i..8i+7
    word ^= c;
    c = static_cast<T>(t[7][word & 0xFF] ^ t[6][(word >> 8) & 0xFF] ^ t[5][(word >> 16) & 0xFF] ^
                       t[4][(word >> 24) & 0xFF] ^ t[3][(word >> 32) & 0xFF] ^
                       t[2][(word >> 40) & 0xFF] ^ t[1][(word >> 48) & 0xFF] ^ t[0][word >> 56]);
  }
  for (; n > 0; --n, ++p) c = static_cast<T>(t[0][(c ^ *p) & 0xFFu] ^ (c >> 8));
  return c;
}

}  // namespace

namespace detail {

uint32_t Crc32RegisterSlicing(uint32_t reg, std::span<const uint8_t> data) {
  return Update<uint32_t>(reg, data, kCrc32Tables);
}

uint16_t VcrcRegisterSlicing(uint16_t reg, std::span<const uint8_t> data) {
  return Update<uint16_t>(reg, data, kVcrcTables);
}

}  // namespace detail

// Folding runs several times faster than the tables where the CPU has PCLMULQDQ
// (ib_crc_fold.cc); the tables remain for other CPUs and the 32-bit build.
uint32_t Crc32(std::span<const uint8_t> data, uint32_t previous) {
  const uint32_t reg = ~previous;
  return ~(detail::FoldingAvailable() ? detail::Crc32RegisterFolded(reg, data)
                                      : detail::Crc32RegisterSlicing(reg, data));
}

uint16_t Crc16Vcrc(std::span<const uint8_t> data) {
  const uint16_t reg = 0xFFFFu;
  return static_cast<uint16_t>(~(detail::FoldingAvailable()
                                     ? detail::VcrcRegisterFolded(reg, data)
                                     : detail::VcrcRegisterSlicing(reg, data)));
}

namespace {

using wire::Header;
using wire::PacketLayout;
using MaskedHeaders = std::array<uint8_t, wire::LRH::kSize + wire::GRH::kSize + wire::BTH::kSize>;

// The walk the CRCs need: the LNH, and where the GRH and BTH are. Tolerant: a CRC is computed
// over whatever the bytes are (a receiver's checks are its own).
PacketLayout WalkHeaders(std::span<const uint8_t> packet, bool crcs) {
  return wire::WalkPacket(
      packet, {.depth = wire::WalkDepth::kBth, .mode = wire::WalkMode::kTolerant, .crcs = crcs});
}

// Copies the LRH(+GRH)+BTH into `masked` with the variant fields as ones (IBTA 7.8.1);
// returns their length, 0 when the walk did not find the BTH (not an IBA transport packet,
// or too short to hold its headers).
std::size_t MaskHeaders(std::span<const uint8_t> packet, const PacketLayout& layout,
                        MaskedHeaders& masked) {
  if (!layout.has(Header::kBth)) return 0;
  const std::size_t bth = layout.offset(Header::kBth);
  const std::size_t header_len = bth + wire::BTH::kSize;
  for (std::size_t i = 0; i < header_len; ++i) masked[i] = packet[i];
  if (layout.has(Header::kGrh)) {
    for (std::size_t i = 0; i < wire::LRH::kSize; ++i) masked[i] = 0xFF;  // routers rewrite it
    uint8_t* grh = &masked[layout.offset(Header::kGrh)];
    grh[0] |= 0x0F;  // TClass, high nibble
    grh[1] = 0xFF;   // TClass low nibble + FlowLabel high nibble
    grh[2] = 0xFF;   // FlowLabel
    grh[3] = 0xFF;   // FlowLabel
    grh[7] = 0xFF;   // HopLmt
  } else {
    masked[0] |= 0xF0;  // LRH:VL
  }
  masked[bth + 4] = 0xFF;  // BTH:Resv8a
  return header_len;
}

// The ICRC of a packet with one (LRH through pad) and the VCRC register after the same
// bytes: they share the payload, which is read once for both (a single fold where the CPU
// can). False when the packet cannot hold its headers.
bool IcrcAndVcrcRegister(std::span<const uint8_t> headers_and_payload, const PacketLayout& layout,
                         uint32_t* icrc, uint16_t* vcrc_reg) {
  MaskedHeaders masked{};
  const std::size_t header_len = MaskHeaders(headers_and_payload, layout, masked);
  if (header_len == 0) return false;
  uint32_t crc32_reg =
      detail::Crc32RegisterSlicing(~0u, std::span<const uint8_t>(masked.data(), header_len));
  uint16_t vcrc = detail::VcrcRegisterSlicing(0xFFFFu, headers_and_payload.first(header_len));
  const std::span<const uint8_t> payload = headers_and_payload.subspan(header_len);
  if (detail::FoldingAvailable()) {
    detail::BothRegistersFolded(&crc32_reg, &vcrc, payload);
  } else {
    crc32_reg = detail::Crc32RegisterSlicing(crc32_reg, payload);
    vcrc = detail::VcrcRegisterSlicing(vcrc, payload);
  }
  *icrc = ~crc32_reg;
  *vcrc_reg = vcrc;
  return true;
}

// The VCRC once the ICRC's four bytes (as on the wire) follow.
uint16_t FinishVcrc(uint16_t vcrc_reg, uint32_t icrc_wire) {
  const uint8_t bytes[4] = {static_cast<uint8_t>(icrc_wire), static_cast<uint8_t>(icrc_wire >> 8),
                            static_cast<uint8_t>(icrc_wire >> 16),
                            static_cast<uint8_t>(icrc_wire >> 24)};
  return static_cast<uint16_t>(~detail::VcrcRegisterSlicing(vcrc_reg, bytes));
}

}  // namespace

uint32_t ComputeIcrc(std::span<const uint8_t> headers_and_payload) {
  // Only the headers carry variant fields: mask a copy of them, then run the
  // CRC on through the payload without copying it.
  MaskedHeaders masked{};
  const std::size_t header_len =
      MaskHeaders(headers_and_payload, WalkHeaders(headers_and_payload, false), masked);
  if (header_len == 0) return 0;  // precondition broken: no BTH
  uint32_t crc = Crc32(std::span<const uint8_t>(masked.data(), header_len));
  return Crc32(headers_and_payload.subspan(header_len), crc);
}

uint16_t ComputeVcrc(std::span<const uint8_t> lrh_through_icrc) {
  return Crc16Vcrc(lrh_through_icrc);
}

void AppendCrcs(std::vector<uint8_t>& packet) {
  uint32_t icrc = 0;
  uint16_t vcrc_reg = 0;
  const PacketLayout layout = WalkHeaders(packet, false);
  // Shorter than an LRH: not an IBA transport packet (the walk leaves the LNH raw).
  const bool iba = layout.lnh == wire::LinkNextHeader::IBA_LOCAL ||
                   layout.lnh == wire::LinkNextHeader::IBA_GLOBAL;
  if (iba && IcrcAndVcrcRegister(packet, layout, &icrc, &vcrc_reg)) {
    for (int i = 0; i < 4; ++i) packet.push_back(static_cast<uint8_t>(icrc >> (8 * i)));
    const uint16_t vcrc = FinishVcrc(vcrc_reg, icrc);
    packet.push_back(static_cast<uint8_t>(vcrc));
    packet.push_back(static_cast<uint8_t>(vcrc >> 8));
    return;
  }
  if (iba) {
    // Too short for its headers: the ICRC of ComputeIcrc's precondition failure, as before.
    for (int i = 0; i < 4; ++i) packet.push_back(0);
  }
  const uint16_t vcrc = ComputeVcrc(packet);
  packet.push_back(static_cast<uint8_t>(vcrc));
  packet.push_back(static_cast<uint8_t>(vcrc >> 8));
}

uint32_t LoadLe32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

uint16_t LoadLe16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }

CrcCheck CheckCrcs(std::span<const uint8_t> whole_packet) {
  return CheckCrcs(whole_packet, WalkHeaders(whole_packet, true));
}

CrcCheck CheckCrcs(std::span<const uint8_t> whole_packet, const PacketLayout& layout) {
  CrcCheck check;
  if (layout.vcrc == PacketLayout::kNone) return check;  // shorter than its LRH and VCRC
  check.has_icrc = layout.icrc != PacketLayout::kNone;
  const std::size_t vcrc_at = layout.vcrc;
  if (check.has_icrc) {
    if (!layout.has(Header::kBth)) return check;  // too short for its headers
    const std::size_t icrc_at = layout.icrc;
    check.icrc_wire = LoadLe32(&whole_packet[icrc_at]);
    uint16_t vcrc_reg = 0;
    // The walk found the headers, so this cannot fail.
    (void)IcrcAndVcrcRegister(whole_packet.first(icrc_at), layout, &check.icrc_computed, &vcrc_reg);
    check.vcrc_computed = FinishVcrc(vcrc_reg, check.icrc_wire);  // the VCRC covers the wire ICRC
  } else {
    check.vcrc_computed = ComputeVcrc(whole_packet.first(vcrc_at));
  }
  check.vcrc_wire = LoadLe16(&whole_packet[vcrc_at]);
  check.well_formed = true;
  return check;
}

}  // namespace softib::ibcrc
