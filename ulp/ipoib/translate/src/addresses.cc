// The IPoIB hardware address (RFC 4391 §9.1.1, 'C' of RFC 4755 §3.1) through the generated
// codec, the multicast GIDs of RFC 4391 §4, the MAC a neighbour gets and the drop names.
#include <algorithm>

#include "packet_bytes.h"
#include "softib/ipoib/translate.h"
#include "softib/wire/ipoib.h"

namespace softib::ipoib {

void EncodeHwAddr(const HwAddr& address, std::span<uint8_t, kHwAddrBytes> out) {
  const wire::IpoibHwAddrView view(out);
  // The whole first octet is the flags: 'C' and the bits RFC 4391 reserves (sent as given,
  // which is 0 unless a caller sets them).
  out[0] = address.flags;
  view.set_QPN(address.qpn & 0xFFFFFF);
  view.set_GID(address.gid);
}

HwAddr DecodeHwAddr(std::span<const uint8_t, kHwAddrBytes> in) {
  const wire::IpoibHwAddrConstView view(in);
  HwAddr hw;
  hw.flags = in[0];
  hw.qpn = view.QPN();
  std::copy(view.GID().begin(), view.GID().end(), hw.gid.begin());
  return hw;
}

namespace {

// FF1s:<signature>:PPPP:: with the rest zero (RFC 4391 §4): flags 1 (transient), the scope,
// the IPv4 (401B) or IPv6 (601B) signature and the P_Key, full-membership bit set.
Gid MgidPrefix(uint8_t scope, uint8_t signature_high, uint16_t pkey) {
  Gid gid{};
  gid[0] = 0xFF;
  gid[1] = static_cast<uint8_t>(0x10 | (scope & 0x0F));
  gid[2] = signature_high;
  gid[3] = 0x1B;
  const uint16_t full = static_cast<uint16_t>(pkey | 0x8000);
  gid[4] = static_cast<uint8_t>(full >> 8);
  gid[5] = static_cast<uint8_t>(full);
  return gid;
}

}  // namespace

Gid BroadcastMgid(uint16_t pkey, uint8_t scope) {
  Gid gid = MgidPrefix(scope, 0x40, pkey);
  gid[12] = gid[13] = gid[14] = gid[15] = 0xFF;
  return gid;
}

Gid Ipv4MulticastMgid(uint32_t group_host_order, uint16_t pkey, uint8_t scope) {
  Gid gid = MgidPrefix(scope, 0x40, pkey);
  gid[12] = static_cast<uint8_t>((group_host_order >> 24) & 0x0F);  // the group's 28 bits
  gid[13] = static_cast<uint8_t>(group_host_order >> 16);
  gid[14] = static_cast<uint8_t>(group_host_order >> 8);
  gid[15] = static_cast<uint8_t>(group_host_order);
  return gid;
}

Gid Ipv6MulticastMgid(std::span<const uint8_t, 16> group, uint16_t pkey) {
  // The group's own scope (its second octet's low nibble) and its low 80 bits.
  Gid gid = MgidPrefix(group[1] & 0x0F, 0x60, pkey);
  std::copy(group.begin() + 6, group.end(), gid.begin() + 6);
  return gid;
}

bool IsBroadcastMgid(const Gid& mgid, uint16_t pkey) {
  Gid expected = BroadcastMgid(pkey, static_cast<uint8_t>(mgid[1] & 0x0F));
  return mgid == expected;
}

Mac DeriveMac(const HwAddr& hw, uint32_t attempt) {
  // FNV-1a (64 bits) over the GID's interface ID, the QPN and the attempt number; the top
  // 48 bits become the MAC, made locally administered (bit 1 of the first octet) and unicast
  // (bit 0 clear).
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](uint8_t b) {
    h ^= b;
    h *= 0x100000001b3ull;
  };
  for (size_t i = 8; i < 16; ++i) mix(hw.gid[i]);
  mix(static_cast<uint8_t>(hw.qpn >> 16));
  mix(static_cast<uint8_t>(hw.qpn >> 8));
  mix(static_cast<uint8_t>(hw.qpn));
  for (int shift = 24; shift >= 0; shift -= 8) mix(static_cast<uint8_t>(attempt >> shift));
  Mac mac{};
  for (size_t i = 0; i < mac.size(); ++i) mac[i] = static_cast<uint8_t>(h >> (56 - 8 * i));
  mac[0] = static_cast<uint8_t>((mac[0] & 0xFC) | 0x02);
  return mac;
}

const char* DropName(Drop drop) {
  switch (drop) {
    case Drop::kNone:
      return "none";
    case Drop::kRunt:
      return "runt";
    case Drop::kOversize:
      return "oversize";
    case Drop::kUnknownEthertype:
      return "unknown_ethertype";
    case Drop::kBadArp:
      return "bad_arp";
    case Drop::kBadNd:
      return "bad_nd";
    case Drop::kNoNeighbour:
      return "no_neighbour";
    case Drop::kBadEncap:
      return "bad_encap";
    case Drop::kLoopedBack:
      return "looped_back";
    case Drop::kSendQueueFull:
      return "send_queue_full";
    case Drop::kCount:
      break;
  }
  return "unknown";
}

}  // namespace softib::ipoib
