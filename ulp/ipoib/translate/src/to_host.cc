// Fabric → host: an IPoIB packet becomes an Ethernet II frame in place. The Ethernet header
// takes the encapsulation header's 4 bytes and 10 of the GRH's space before it; IPoIB ARP
// becomes Ethernet ARP and ND's IPoIB link-layer address options the Ethernet ones. ARP and ND
// teach the neighbour table the sender before the frame names it by MAC.
#include <algorithm>
#include <array>
#include <vector>

#include "packet_bytes.h"
#include "softib/ipoib/translate.h"
#include "softib/wire/ipoib.h"

namespace softib::ipoib {
namespace {

RxResult RxDrop(Drop drop) {
  RxResult r;
  r.drop = drop;
  return r;
}

HwAddr HwOfBytes(std::span<const uint8_t, kHwAddrBytes> bytes) { return DecodeHwAddr(bytes); }

// The MAC the host sees for `hw`: ours, a known neighbour's, or (learn) a new entry's.
const Mac* MacOfHw(const HwAddr& hw, const LocalIdentity& local, NeighbourTable& neighbours,
                   bool learn, uint16_t lid) {
  if (detail::SameEndpoint(hw, local.hw)) return &local.mac;
  Neighbour* n = learn ? neighbours.Learn(hw, lid) : neighbours.FindByHw(hw);
  return n != nullptr ? &n->mac : nullptr;
}

// IPoIB ARP (56 bytes) → Ethernet ARP (28 bytes) in place; the sender learnt. `*op` gets the
// operation.
Drop RewriteArpToHost(std::span<uint8_t> arp, const RxSource& source, const LocalIdentity& local,
                      NeighbourTable& neighbours, uint16_t* op) {
  std::array<uint8_t, detail::kIpoibArpBytes> in{};
  std::copy_n(arp.begin(), in.size(), in.begin());
  const wire::IpoibArpConstView ib(in);
  if (ib.HardwareType() != detail::kArpHwIpoib || ib.ProtocolType() != kEthertypeIpv4 ||
      ib.HardwareLength() != kHwAddrBytes || ib.ProtocolLength() != 4)
    return Drop::kBadArp;
  *op = ib.Operation();
  if (*op != detail::kArpRequest && *op != detail::kArpReply) return Drop::kBadArp;
  const HwAddr sender = HwOfBytes(ib.SenderHardwareAddress());
  // The sender's address must be where the packet came from: its QPN (and GID, when the GRH
  // names it); anything else is forged.
  if (sender.qpn != (source.qpn & 0xFFFFFF)) return Drop::kBadArp;
  if (source.has_grh && sender.gid != source.sgid) return Drop::kBadArp;
  const Mac* sender_mac = MacOfHw(sender, local, neighbours, true, source.slid);
  if (sender_mac == nullptr) return Drop::kBadArp;
  const HwAddr target = HwOfBytes(ib.TargetHardwareAddress());
  Mac target_mac{};  // zero target (a request), or one the table does not know: zeros
  if (!detail::IsZero(ib.TargetHardwareAddress())) {
    if (const Mac* m = MacOfHw(target, local, neighbours, false, 0)) target_mac = *m;
  }
  const Mac sender_copy = *sender_mac;
  const wire::EthernetArpView out(arp.first(detail::kEthArpBytes));
  out.set_HardwareType(detail::kArpHwEthernet);
  out.set_ProtocolType(kEthertypeIpv4);
  out.set_HardwareLength(6);
  out.set_ProtocolLength(4);
  out.set_Operation(*op);
  out.set_SenderHardwareAddress(sender_copy);
  out.set_SenderProtocolAddress(ib.SenderProtocolAddress());
  out.set_TargetHardwareAddress(target_mac);
  out.set_TargetProtocolAddress(ib.TargetProtocolAddress());
  return Drop::kNone;
}

// ND's IPoIB link-layer address options (24 bytes) → Ethernet ones (8 bytes) in the IPv6
// packet `ip6`; addresses learnt (the sender's with its LID). Length, payload length and
// checksum fixed.
Drop RewriteNdToHost(std::span<uint8_t> ip6, size_t* ip_length, const RxSource& source,
                     const LocalIdentity& local, NeighbourTable& neighbours) {
  const auto upper = detail::Ipv6UpperLayer(ip6.first(*ip_length));
  if (!upper || upper->protocol != detail::kIpProtoIcmp6) return Drop::kNone;
  const size_t icmp_at = upper->offset;
  if (icmp_at + 4 > *ip_length) return Drop::kNone;
  const size_t options_at = detail::NdOptionsOffset(ip6[icmp_at]);
  if (options_at == 0) return Drop::kNone;
  if (icmp_at + options_at > *ip_length) return Drop::kBadNd;
  const std::vector<uint8_t> options(ip6.begin() + static_cast<ptrdiff_t>(icmp_at + options_at),
                                     ip6.begin() + static_cast<ptrdiff_t>(*ip_length));
  std::vector<uint8_t> rewritten;
  rewritten.reserve(options.size());
  for (size_t at = 0; at < options.size();) {
    if (at + 2 > options.size()) return Drop::kBadNd;
    const size_t len = size_t{options[at + 1]} * 8;
    if (len == 0 || at + len > options.size()) return Drop::kBadNd;
    const uint8_t type = options[at];
    if (type != detail::kNdSourceLinkLayer && type != detail::kNdTargetLinkLayer) {
      rewritten.insert(rewritten.end(), options.begin() + static_cast<ptrdiff_t>(at),
                       options.begin() + static_cast<ptrdiff_t>(at + len));
      at += len;
      continue;
    }
    if (len != detail::kIpoibNdOptionBytes) return Drop::kBadNd;
    const wire::IpoibNdLinkLayerOptionConstView view(
        std::span<const uint8_t>(options).subspan(at, len));
    const HwAddr hw = HwOfBytes(view.LinkLayerAddress());
    // The sender's own address carries its LID; a third party's (a Redirect target) not.
    const bool is_sender =
        hw.qpn == (source.qpn & 0xFFFFFF) && (!source.has_grh || hw.gid == source.sgid);
    const Mac* mac = MacOfHw(hw, local, neighbours, true, is_sender ? source.slid : 0);
    if (mac == nullptr) return Drop::kBadNd;
    const std::array<uint8_t, 2> head = {type, 1};
    rewritten.insert(rewritten.end(), head.begin(), head.end());
    rewritten.insert(rewritten.end(), mac->begin(), mac->end());
    at += len;
  }
  const size_t new_length = icmp_at + options_at + rewritten.size();
  std::copy(rewritten.begin(), rewritten.end(),
            ip6.begin() + static_cast<ptrdiff_t>(icmp_at + options_at));
  detail::Store16(ip6.data() + 4, static_cast<uint16_t>(new_length - detail::kIpv6Header));
  const std::span<uint8_t> icmp = ip6.subspan(icmp_at, new_length - icmp_at);
  detail::Store16(icmp.data() + 2, detail::Icmp6Checksum(ip6, icmp));
  *ip_length = new_length;
  return Drop::kNone;
}

}  // namespace

RxResult TranslateToHost(std::span<uint8_t> buffer, size_t offset, size_t length,
                         const RxSource& source, const LocalIdentity& local,
                         NeighbourTable& neighbours) {
  constexpr size_t kHeadroom = kEthHeaderBytes - kEncapBytes;
  if (offset > buffer.size() || length > buffer.size() - offset) return RxDrop(Drop::kRunt);
  if (length < kEncapBytes) return RxDrop(Drop::kRunt);
  if (offset < kHeadroom) return RxDrop(Drop::kRunt);  // no room for the Ethernet header
  const wire::IpoibEncapHeaderConstView encap(buffer.subspan(offset, kEncapBytes));
  const uint16_t type = encap.Type();
  if (encap.Reserved() != 0) return RxDrop(Drop::kBadEncap);
  if (type != kEthertypeIpv4 && type != kEthertypeArp && type != kEthertypeIpv6)
    return RxDrop(Drop::kBadEncap);
  // Our own packet back from a multicast group.
  if (source.has_grh && (source.qpn & 0xFFFFFF) == local.hw.qpn && source.sgid == local.hw.gid)
    return RxDrop(Drop::kLoopedBack);

  const bool to_group = source.has_grh && source.dgid[0] == 0xFF;
  const bool to_broadcast = to_group && IsBroadcastMgid(source.dgid, local.pkey);
  const size_t payload_at = offset + kEncapBytes;
  size_t payload_length = length - kEncapBytes;
  const std::span<uint8_t> payload = buffer.subspan(payload_at, payload_length);
  Mac destination = local.mac;
  RxResult result;

  if (type == kEthertypeArp) {
    if (payload_length < detail::kIpoibArpBytes) return RxDrop(Drop::kRunt);
    uint16_t op = 0;
    const Drop drop = RewriteArpToHost(payload, source, local, neighbours, &op);
    if (drop != Drop::kNone) return RxDrop(drop);
    payload_length = detail::kEthArpBytes;
    if (to_group) destination = detail::kBroadcastMac;
  } else {
    const auto datagram = detail::IpDatagramLength(type, payload);
    if (!datagram) return RxDrop(Drop::kRunt);
    payload_length = *datagram;
    if (type == kEthertypeIpv6) {
      const Drop drop = RewriteNdToHost(payload, &payload_length, source, local, neighbours);
      if (drop != Drop::kNone) return RxDrop(drop);
    }
    const uint8_t* ip = payload.data();
    if (to_broadcast || !to_group) {
      destination = to_broadcast ? detail::kBroadcastMac : local.mac;
    } else if (type == kEthertypeIpv4 && (ip[16] & 0xF0) == 0xE0) {
      // RFC 1112 §6.4: 01:00:5e and the group's low 23 bits.
      destination = {0x01, 0x00, 0x5e, static_cast<uint8_t>(ip[17] & 0x7F), ip[18], ip[19]};
    } else if (type == kEthertypeIpv6 && ip[24] == 0xFF) {
      // RFC 2464 §7: 33:33 and the group's low 32 bits.
      destination = {0x33, 0x33, ip[36], ip[37], ip[38], ip[39]};
    } else {
      destination = detail::kBroadcastMac;
    }
  }

  // The sender: ARP and ND taught the table; a packet with a GRH names its sender fully (QPN
  // and GID), so it is learnt too; without a GRH only the table's LID and QPN can.
  HwAddr sender_hw;
  sender_hw.qpn = source.qpn & 0xFFFFFF;
  sender_hw.gid = source.sgid;
  Neighbour* sender = source.has_grh ? neighbours.FindByHw(sender_hw)
                                     : neighbours.FindBySource(source.slid, source.qpn);
  if (sender == nullptr && source.has_grh) sender = neighbours.Learn(sender_hw, source.slid);
  if (sender == nullptr) return RxDrop(Drop::kNoNeighbour);
  if (sender->lid == 0 && source.slid != 0) sender->lid = source.slid;
  if (type == kEthertypeIpv4) RewriteDhcpToHost(payload.first(payload_length), sender->mac, local);

  const size_t frame_at = offset - kHeadroom;
  const wire::EthernetHeaderView eth(buffer.subspan(frame_at, kEthHeaderBytes));
  eth.set_Destination(destination);
  eth.set_Source(sender->mac);
  eth.set_EtherType(type);
  result.neighbour = sender;
  result.offset = frame_at;
  result.length = kEthHeaderBytes + payload_length;
  return result;
}

}  // namespace softib::ipoib
