// A stand-in for ulp/ipoib/translate (translate.h) while that library is written in
// parallel: it translates only what the driver's tests send — Ethernet/IPv4 ARP, IPv4
// unicast, broadcast and multicast, IGMPv2 reports and leaves — with the MAC of a hardware
// address 02 and the GID's last five bytes, as the driver derives its own. Not the
// contract's implementation: ND, IPv6 multicast, MAC collisions and most checks are left
// out. The build uses the real library once ../translate exists.
#include <cstring>

#include "softib/ipoib/translate.h"

namespace softib::ipoib {

namespace {

uint16_t StandInBe16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
void StandInPutBe16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
uint32_t StandInBe32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}
Mac MacOf(const HwAddr& hw) {
  return {0x02, hw.gid[11], hw.gid[12], hw.gid[13], hw.gid[14], hw.gid[15]};
}
Gid GroupMgid(uint16_t pkey, uint8_t scope, uint8_t b2, uint8_t b3) {
  Gid g{};
  g[0] = 0xFF;
  g[1] = static_cast<uint8_t>(0x10 | (scope & 0x0F));
  g[2] = b2;
  g[3] = b3;
  StandInPutBe16(&g[4], pkey);
  return g;
}

}  // namespace

void EncodeHwAddr(const HwAddr& a, std::span<uint8_t, kHwAddrBytes> out) {
  out[0] = a.flags;
  out[1] = static_cast<uint8_t>(a.qpn >> 16);
  out[2] = static_cast<uint8_t>(a.qpn >> 8);
  out[3] = static_cast<uint8_t>(a.qpn);
  std::memcpy(out.data() + 4, a.gid.data(), 16);
}

HwAddr DecodeHwAddr(std::span<const uint8_t, kHwAddrBytes> in) {
  HwAddr a;
  a.flags = in[0];
  a.qpn = uint32_t{in[1]} << 16 | uint32_t{in[2]} << 8 | in[3];
  std::memcpy(a.gid.data(), in.data() + 4, 16);
  return a;
}

Gid BroadcastMgid(uint16_t pkey, uint8_t scope) {
  Gid g = GroupMgid(pkey, scope, 0x40, 0x1B);
  for (int n = 12; n < 16; ++n) g[n] = 0xFF;
  return g;
}

Gid Ipv4MulticastMgid(uint32_t group, uint16_t pkey, uint8_t scope) {
  Gid g = GroupMgid(pkey, scope, 0x40, 0x1B);
  const uint32_t low = group & 0x0FFFFFFF;
  g[12] = static_cast<uint8_t>(low >> 24);
  g[13] = static_cast<uint8_t>(low >> 16);
  g[14] = static_cast<uint8_t>(low >> 8);
  g[15] = static_cast<uint8_t>(low);
  return g;
}

Gid Ipv6MulticastMgid(std::span<const uint8_t, 16> group, uint16_t pkey) {
  Gid g = GroupMgid(pkey, group[1] & 0x0F, 0x60, 0x1B);
  std::memcpy(g.data() + 6, group.data() + 6, 10);
  return g;
}

const char* DropName(Drop drop) {
  static const char* const kNames[] = {"none",       "runt",   "oversize",     "unknown_ethertype",
                                       "bad_arp",    "bad_nd", "no_neighbour", "bad_encap",
                                       "looped_back"};
  return drop < Drop::kCount ? kNames[static_cast<size_t>(drop)] : "?";
}

Neighbour* NeighbourTable::Learn(const HwAddr& hw, uint16_t lid) {
  if (Neighbour* n = FindByHw(hw)) {
    if (lid != 0) n->lid = lid;
    return n;
  }
  entries_.push_back({MacOf(hw), hw, lid, 0});
  return &entries_.back();
}
Neighbour* NeighbourTable::FindByMac(const Mac& mac) {
  for (Neighbour& n : entries_) {
    if (n.mac == mac) return &n;
  }
  return nullptr;
}
Neighbour* NeighbourTable::FindByHw(const HwAddr& hw) {
  for (Neighbour& n : entries_) {
    if (n.hw.qpn == hw.qpn && n.hw.gid == hw.gid) return &n;
  }
  return nullptr;
}
Neighbour* NeighbourTable::FindBySource(uint16_t slid, uint32_t qpn) {
  for (Neighbour& n : entries_) {
    if (n.lid == slid && n.hw.qpn == qpn) return &n;
  }
  return nullptr;
}
void NeighbourTable::Forget(const Mac& mac) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->mac == mac) {
      entries_.erase(it);
      return;
    }
  }
}
void NeighbourTable::Clear() { entries_.clear(); }
std::vector<Neighbour> NeighbourTable::Snapshot() const { return entries_; }

TxResult TranslateFromHost(std::span<uint8_t> buffer, size_t offset, size_t length,
                           const LocalIdentity& local, NeighbourTable& neighbours) {
  TxResult r;
  if (length < kEthHeaderBytes) return {Drop::kRunt};
  uint8_t* frame = buffer.data() + offset;
  Mac dst;
  std::memcpy(dst.data(), frame, 6);
  const uint16_t type = StandInBe16(frame + 12);
  const bool broadcast = dst == Mac{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  uint8_t* packet = frame + kEthHeaderBytes - kEncapBytes;
  size_t payload = length - kEthHeaderBytes;
  if (type == kEthertypeIpv4) {
    if (payload < 20) return {Drop::kRunt};
    if (payload > local.mtu) return {Drop::kOversize};
    if (broadcast) {
      r.multicast = true;
      r.mgid = BroadcastMgid(local.pkey, local.mcast_scope);
    } else if (dst[0] & 1) {
      r.multicast = true;
      r.mgid = Ipv4MulticastMgid(StandInBe32(frame + kEthHeaderBytes + 16), local.pkey,
                                 local.mcast_scope);
    }
  } else if (type == kEthertypeArp) {
    const uint8_t* arp = frame + kEthHeaderBytes;
    if (payload < 28) return {Drop::kRunt};
    if (StandInBe16(arp) != 1 || StandInBe16(arp + 2) != kEthertypeIpv4 || arp[4] != 6 ||
        arp[5] != 4) {
      return {Drop::kBadArp};
    }
    uint8_t out[8 + 2 * (kHwAddrBytes + 4)] = {};
    StandInPutBe16(out, 32);
    StandInPutBe16(out + 2, kEthertypeIpv4);
    out[4] = kHwAddrBytes;
    out[5] = 4;
    StandInPutBe16(out + 6, StandInBe16(arp + 6));
    EncodeHwAddr(local.hw, std::span<uint8_t, kHwAddrBytes>(out + 8, kHwAddrBytes));
    std::memcpy(out + 28, arp + 14, 4);
    Mac tha;
    std::memcpy(tha.data(), arp + 18, 6);
    if (Neighbour* n = neighbours.FindByMac(tha)) {
      EncodeHwAddr(n->hw, std::span<uint8_t, kHwAddrBytes>(out + 32, kHwAddrBytes));
    }
    std::memcpy(out + 52, arp + 24, 4);
    std::memcpy(packet + kEncapBytes, out, sizeof out);
    payload = sizeof out;
    if (broadcast) {
      r.multicast = true;
      r.mgid = BroadcastMgid(local.pkey, local.mcast_scope);
    }
  } else {
    return {Drop::kUnknownEthertype};
  }
  if (!r.multicast) {
    r.neighbour = neighbours.FindByMac(dst);
    if (r.neighbour == nullptr) return {Drop::kNoNeighbour};
  }
  StandInPutBe16(packet, type);
  StandInPutBe16(packet + 2, 0);
  r.offset = static_cast<size_t>(packet - buffer.data());
  r.length = kEncapBytes + payload;
  return r;
}

RxResult TranslateToHost(std::span<uint8_t> buffer, size_t offset, size_t length,
                         const RxSource& source, const LocalIdentity& local,
                         NeighbourTable& neighbours) {
  RxResult r;
  if (length < kEncapBytes) return {Drop::kRunt};
  uint8_t* packet = buffer.data() + offset;
  const uint16_t type = StandInBe16(packet);
  if (StandInBe16(packet + 2) != 0) return {Drop::kBadEncap};
  if (source.has_grh && source.sgid == local.hw.gid && source.qpn == local.hw.qpn) {
    return {Drop::kLoopedBack};
  }
  Neighbour* from = source.has_grh ? neighbours.Learn({0, source.qpn, source.sgid}, source.slid)
                                   : neighbours.FindBySource(source.slid, source.qpn);
  const bool to_group = source.has_grh && source.dgid[0] == 0xFF;
  uint8_t* frame = packet + kEncapBytes - kEthHeaderBytes;
  size_t payload = length - kEncapBytes;
  if (type == kEthertypeArp) {
    const uint8_t* arp = packet + kEncapBytes;
    if (payload < 56) return {Drop::kRunt};
    if (StandInBe16(arp) != 32 || arp[4] != kHwAddrBytes || arp[5] != 4) return {Drop::kBadArp};
    uint8_t out[28];
    StandInPutBe16(out, 1);
    StandInPutBe16(out + 2, kEthertypeIpv4);
    out[4] = 6;
    out[5] = 4;
    StandInPutBe16(out + 6, StandInBe16(arp + 6));
    const HwAddr sha = DecodeHwAddr(std::span<const uint8_t, kHwAddrBytes>(arp + 8, kHwAddrBytes));
    Neighbour* sender = neighbours.Learn(sha, source.has_grh ? source.slid : source.slid);
    std::memcpy(out + 8, sender->mac.data(), 6);
    std::memcpy(out + 14, arp + 28, 4);
    const HwAddr tha = DecodeHwAddr(std::span<const uint8_t, kHwAddrBytes>(arp + 32, kHwAddrBytes));
    Mac tmac{};
    if (tha.gid == local.hw.gid) tmac = local.mac;
    std::memcpy(out + 18, tmac.data(), 6);
    std::memcpy(out + 24, arp + 52, 4);
    std::memcpy(frame + kEthHeaderBytes, out, sizeof out);
    payload = sizeof out;
    from = sender;
  } else if (type != kEthertypeIpv4) {
    return {Drop::kUnknownEthertype};
  }
  if (from == nullptr) return {Drop::kNoNeighbour};
  Mac dst = local.mac;
  if (to_group) {
    if (source.dgid[12] == 0xFF && source.dgid[13] == 0xFF && source.dgid[14] == 0xFF &&
        source.dgid[15] == 0xFF) {
      dst = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    } else {
      dst = {
          0x01,           0x00, 0x5E, static_cast<uint8_t>(source.dgid[13] & 0x7F), source.dgid[14],
          source.dgid[15]};
    }
  }
  std::memcpy(frame, dst.data(), 6);
  std::memcpy(frame + 6, from->mac.data(), 6);
  StandInPutBe16(frame + 12, type);
  r.neighbour = from;
  r.offset = static_cast<size_t>(frame - buffer.data());
  r.length = kEthHeaderBytes + payload;
  return r;
}

std::vector<GroupChange> SnoopHostMembership(std::span<const uint8_t> frame,
                                             const LocalIdentity& local) {
  std::vector<GroupChange> changes;
  if (frame.size() < kEthHeaderBytes + 20 || StandInBe16(frame.data() + 12) != kEthertypeIpv4) {
    return changes;
  }
  const uint8_t* ip = frame.data() + kEthHeaderBytes;
  const size_t header = size_t{ip[0] & 0x0Fu} * 4;
  if (ip[9] != 2 || frame.size() < kEthHeaderBytes + header + 8) return changes;
  const uint8_t* igmp = ip + header;
  const uint32_t group = StandInBe32(igmp + 4);
  if (igmp[0] == 0x16 || igmp[0] == 0x12) {
    changes.push_back({true, Ipv4MulticastMgid(group, local.pkey, local.mcast_scope)});
  } else if (igmp[0] == 0x17) {
    changes.push_back({false, Ipv4MulticastMgid(group, local.pkey, local.mcast_scope)});
  }
  return changes;
}

}  // namespace softib::ipoib
