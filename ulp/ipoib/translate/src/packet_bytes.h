// Internal helpers of the IPoIB translation: big-endian loads and stores, the Internet
// checksum, IPv4/IPv6 header checks and the walk over IPv6 extension headers to the upper
// layer. The headers the translation rewrites (encapsulation, hardware address, ARP, ND
// option, Ethernet) go through the generated codecs (softib/wire/ipoib.h); these cover the
// IP fields it only reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

#include "softib/ipoib/translate.h"

namespace softib::ipoib::detail {

inline constexpr uint8_t kIpProtoIcmp6 = 58;
inline constexpr uint8_t kIpProtoIgmp = 2;
inline constexpr size_t kIpv4MinHeader = 20;
inline constexpr size_t kIpv6Header = 40;
inline constexpr size_t kEthArpBytes = 28;    // RFC 826 for IPv4 over Ethernet
inline constexpr size_t kIpoibArpBytes = 56;  // RFC 4391 §9.1.1: 8 + 2 × (20 + 4)
inline constexpr size_t kEthNdOptionBytes = 8;
inline constexpr size_t kIpoibNdOptionBytes = 24;  // RFC 4391 §9.2: length 3
inline constexpr uint8_t kNdSourceLinkLayer = 1;
inline constexpr uint8_t kNdTargetLinkLayer = 2;
inline constexpr uint16_t kArpRequest = 1;
inline constexpr uint16_t kArpReply = 2;
inline constexpr uint16_t kArpHwEthernet = 1;
inline constexpr uint16_t kArpHwIpoib = 32;

inline uint16_t Load16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
inline uint32_t Load32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
inline void Store16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

inline bool IsZero(std::span<const uint8_t> bytes) {
  for (uint8_t b : bytes)
    if (b != 0) return false;
  return true;
}

inline constexpr Mac kBroadcastMac = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

// Same QPN and GID: one endpoint, whatever its flags say.
inline bool SameEndpoint(const HwAddr& a, const HwAddr& b) {
  return a.qpn == b.qpn && a.gid == b.gid;
}

// One's-complement sum of `bytes` (odd length: padded with a zero byte), not folded.
inline uint32_t SumWords(std::span<const uint8_t> bytes, uint32_t sum = 0) {
  size_t i = 0;
  for (; i + 1 < bytes.size(); i += 2) sum += Load16(bytes.data() + i);
  if (i < bytes.size()) sum += uint32_t{bytes[i]} << 8;
  return sum;
}
inline uint16_t FoldChecksum(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xffff);
}

// The ICMPv6 checksum (RFC 4443 §2.3) of `icmp` in the IPv6 packet `ip6` (its header's
// addresses), with the checksum field taken as zero.
inline uint16_t Icmp6Checksum(std::span<const uint8_t> ip6, std::span<const uint8_t> icmp) {
  uint32_t sum = SumWords(ip6.subspan(8, 32));  // source and destination addresses
  sum += static_cast<uint32_t>(icmp.size() >> 16) + static_cast<uint32_t>(icmp.size() & 0xffff);
  sum += kIpProtoIcmp6;
  sum = SumWords(icmp.first(2), sum);  // type, code; checksum at 2..3 skipped
  if (icmp.size() > 4) sum = SumWords(icmp.subspan(4), sum);
  return FoldChecksum(sum);
}

// The length of the IP datagram at the start of `payload` from its own header, or nullopt
// when the header is not a valid one of `ethertype` or claims more than `payload` holds.
inline std::optional<size_t> IpDatagramLength(uint16_t ethertype, std::span<const uint8_t> p) {
  if (ethertype == kEthertypeIpv4) {
    if (p.size() < kIpv4MinHeader || (p[0] >> 4) != 4) return std::nullopt;
    const size_t ihl = size_t{p[0] & 0x0fu} * 4;
    const size_t total = Load16(p.data() + 2);
    if (ihl < kIpv4MinHeader || total < ihl || total > p.size()) return std::nullopt;
    return total;
  }
  if (p.size() < kIpv6Header || (p[0] >> 4) != 6) return std::nullopt;
  const size_t total = kIpv6Header + Load16(p.data() + 4);
  if (total > p.size()) return std::nullopt;
  return total;
}

// The upper-layer protocol of an IPv6 packet after hop-by-hop, routing and destination
// options headers: its number and offset from the packet's start. Fragments and anything
// malformed: nullopt.
struct UpperLayer {
  uint8_t protocol = 0;
  size_t offset = 0;
};
inline std::optional<UpperLayer> Ipv6UpperLayer(std::span<const uint8_t> ip6) {
  if (ip6.size() < kIpv6Header) return std::nullopt;
  uint8_t next = ip6[6];
  size_t at = kIpv6Header;
  for (int hops = 0; hops < 8; ++hops) {
    if (next != 0 && next != 43 && next != 60) return UpperLayer{next, at};
    if (at + 8 > ip6.size()) return std::nullopt;
    const size_t len = (size_t{ip6[at + 1]} + 1) * 8;
    next = ip6[at];
    at += len;
    if (at > ip6.size()) return std::nullopt;
  }
  return std::nullopt;
}

// Offset of the first ND option in an ICMPv6 message of `type`, or 0: not an ND message
// (RFC 4861 §4.1-4.5: RS 8, RA 16, NS 24, NA 24, Redirect 40). Both directions use it.
inline size_t NdOptionsOffset(uint8_t type) {
  switch (type) {
    case 133:
      return 8;
    case 134:
      return 16;
    case 135:
    case 136:
      return 24;
    case 137:
      return 40;
    default:
      return 0;
  }
}

}  // namespace softib::ipoib::detail
