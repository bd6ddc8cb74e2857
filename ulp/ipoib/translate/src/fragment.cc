// Connected mode's UD side (RFC 4755 §4): IPv4 fragmentation to the UD MTU (RFC 791 §3.2),
// ICMP "fragmentation needed" (RFC 792, RFC 1191 §4) and ICMPv6 Packet Too Big (RFC 4443
// §3.2) answered to the host. Pure byte work over Ethernet II frames.
#include <algorithm>
#include <cstring>

#include "packet_bytes.h"
#include "softib/ipoib/translate.h"

namespace softib::ipoib {

using detail::FoldChecksum;
using detail::Load16;
using detail::Store16;
using detail::SumWords;

namespace {

constexpr uint16_t kFlagDf = 0x4000;
constexpr uint16_t kFlagMf = 0x2000;
constexpr uint16_t kOffsetMask = 0x1FFF;
constexpr uint8_t kIpProtoIcmp = 1;
constexpr size_t kIpv6MinMtu = 1280;

uint16_t EtherType(std::span<const uint8_t> frame) { return Load16(frame.data() + 12); }

// The options a non-first fragment carries: those with the copied flag (RFC 791 §3.1),
// padded to 4 bytes with End of Option List.
std::vector<uint8_t> CopiedOptions(std::span<const uint8_t> options) {
  std::vector<uint8_t> out;
  size_t at = 0;
  while (at < options.size()) {
    const uint8_t type = options[at];
    if (type == 0) break;  // End of Option List
    if (type == 1) {       // No Operation
      ++at;
      continue;
    }
    if (at + 1 >= options.size()) break;
    const size_t length = options[at + 1];
    if (length < 2 || at + length > options.size()) break;
    if ((type & 0x80) != 0)
      out.insert(out.end(), options.begin() + at, options.begin() + at + length);
    at += length;
  }
  out.resize((out.size() + 3) / 4 * 4, 0);
  return out;
}

void FinishIpv4Header(uint8_t* ip, size_t header, size_t total, uint16_t flags_offset) {
  Store16(ip + 2, static_cast<uint16_t>(total));
  Store16(ip + 6, flags_offset);
  Store16(ip + 10, 0);
  Store16(ip + 10, FoldChecksum(SumWords({ip, header})));
}

std::vector<uint8_t> EthernetReply(std::span<const uint8_t> frame, uint16_t ethertype) {
  std::vector<uint8_t> out(kEthHeaderBytes);
  std::memcpy(out.data(), frame.data() + 6, 6);  // to the sender
  std::memcpy(out.data() + 6, frame.data(), 6);  // from the MAC it sent to
  Store16(out.data() + 12, ethertype);
  return out;
}

}  // namespace

FragmentOutcome FragmentForMtu(std::span<const uint8_t> frame, uint32_t mtu,
                               std::vector<std::vector<uint8_t>>* fragments) {
  fragments->clear();
  if (frame.size() < kEthHeaderBytes) return FragmentOutcome::kMalformed;
  const uint16_t ethertype = EtherType(frame);
  if (ethertype != kEthertypeIpv4 && ethertype != kEthertypeIpv6) return FragmentOutcome::kFits;
  const std::span<const uint8_t> ip = frame.subspan(kEthHeaderBytes);
  const auto total = detail::IpDatagramLength(ethertype, ip);
  if (!total) return FragmentOutcome::kMalformed;
  if (*total <= mtu) return FragmentOutcome::kFits;
  if (ethertype == kEthertypeIpv6) return FragmentOutcome::kTooBig;
  const size_t header = size_t{ip[0] & 0x0fu} * 4;
  const uint16_t flags_offset = Load16(ip.data() + 6);
  if ((flags_offset & kFlagDf) != 0) return FragmentOutcome::kDontFragment;
  const std::vector<uint8_t> copied = CopiedOptions(ip.subspan(20, header - 20));
  const size_t later_header = 20 + copied.size();
  if (mtu < 68 || mtu < later_header + 8) return FragmentOutcome::kMalformed;
  const size_t first_data = (mtu - header) / 8 * 8;
  const size_t later_data = (mtu - later_header) / 8 * 8;
  const size_t data_bytes = *total - header;
  const uint16_t base_offset = flags_offset & kOffsetMask;  // in 8-byte units
  const bool more_after = (flags_offset & kFlagMf) != 0;
  size_t at = 0;
  while (at < data_bytes) {
    const bool first = at == 0;
    const size_t head = first ? header : later_header;
    const size_t chunk = std::min(first ? first_data : later_data, data_bytes - at);
    const bool last = at + chunk == data_bytes;
    std::vector<uint8_t> out(kEthHeaderBytes + head + chunk);
    std::memcpy(out.data(), frame.data(), kEthHeaderBytes);
    uint8_t* o = out.data() + kEthHeaderBytes;
    if (first) {
      std::memcpy(o, ip.data(), header);
    } else {
      std::memcpy(o, ip.data(), 20);
      o[0] = static_cast<uint8_t>(0x40 | (later_header / 4));
      std::copy(copied.begin(), copied.end(), o + 20);
    }
    std::memcpy(o + head, ip.data() + header + at, chunk);
    const uint16_t offset = static_cast<uint16_t>(base_offset + at / 8);
    const uint16_t mf = (!last || more_after) ? kFlagMf : 0;
    FinishIpv4Header(o, head, head + chunk, static_cast<uint16_t>(mf | (offset & kOffsetMask)));
    fragments->push_back(std::move(out));
    at += chunk;
  }
  return FragmentOutcome::kFragmented;
}

std::vector<uint8_t> BuildIcmpFragmentationNeeded(std::span<const uint8_t> frame,
                                                  uint32_t next_hop_mtu,
                                                  std::span<const uint8_t, 4> source) {
  if (frame.size() < kEthHeaderBytes || EtherType(frame) != kEthertypeIpv4) return {};
  const std::span<const uint8_t> ip = frame.subspan(kEthHeaderBytes);
  const auto total = detail::IpDatagramLength(kEthertypeIpv4, ip);
  if (!total) return {};
  const size_t header = size_t{ip[0] & 0x0fu} * 4;
  const size_t quoted = std::min(*total, header + 8);
  std::vector<uint8_t> out = EthernetReply(frame, kEthertypeIpv4);
  out.resize(kEthHeaderBytes + 20 + 8 + quoted, 0);
  uint8_t* o = out.data() + kEthHeaderBytes;
  o[0] = 0x45;
  o[8] = 64;  // TTL
  o[9] = kIpProtoIcmp;
  std::memcpy(o + 12, source.data(), 4);
  std::memcpy(o + 16, ip.data() + 12, 4);  // to the datagram's source
  FinishIpv4Header(o, 20, 20 + 8 + quoted, 0);
  uint8_t* icmp = o + 20;
  icmp[0] = 3;  // Destination Unreachable
  icmp[1] = 4;  // fragmentation needed and DF set
  Store16(icmp + 6, static_cast<uint16_t>(std::min<uint32_t>(next_hop_mtu, 0xFFFF)));
  std::memcpy(icmp + 8, ip.data(), quoted);
  Store16(icmp + 2, FoldChecksum(SumWords({icmp, 8 + quoted})));
  return out;
}

std::vector<uint8_t> BuildIcmpv6PacketTooBig(std::span<const uint8_t> frame, uint32_t mtu,
                                             std::span<const uint8_t, 16> source) {
  if (frame.size() < kEthHeaderBytes || EtherType(frame) != kEthertypeIpv6) return {};
  const std::span<const uint8_t> ip = frame.subspan(kEthHeaderBytes);
  const auto total = detail::IpDatagramLength(kEthertypeIpv6, ip);
  if (!total) return {};
  const size_t quoted = std::min(*total, kIpv6MinMtu - detail::kIpv6Header - 8);
  std::vector<uint8_t> out = EthernetReply(frame, kEthertypeIpv6);
  out.resize(kEthHeaderBytes + detail::kIpv6Header + 8 + quoted, 0);
  uint8_t* o = out.data() + kEthHeaderBytes;
  o[0] = 0x60;
  Store16(o + 4, static_cast<uint16_t>(8 + quoted));
  o[6] = detail::kIpProtoIcmp6;
  o[7] = 64;  // hop limit
  std::memcpy(o + 8, source.data(), 16);
  std::memcpy(o + 24, ip.data() + 8, 16);  // to the datagram's source
  uint8_t* icmp = o + detail::kIpv6Header;
  icmp[0] = 2;  // Packet Too Big
  icmp[4] = static_cast<uint8_t>(mtu >> 24);
  icmp[5] = static_cast<uint8_t>(mtu >> 16);
  icmp[6] = static_cast<uint8_t>(mtu >> 8);
  icmp[7] = static_cast<uint8_t>(mtu);
  std::memcpy(icmp + 8, ip.data(), quoted);
  Store16(icmp + 2,
          detail::Icmp6Checksum({o, detail::kIpv6Header + 8 + quoted}, {icmp, 8 + quoted}));
  return out;
}

}  // namespace softib::ipoib
