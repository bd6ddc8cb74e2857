// Host → fabric: an Ethernet II frame becomes an IPoIB packet in place (RFC 4391): the
// encapsulation header takes the last 4 bytes of the Ethernet header, ARP becomes IPoIB ARP
// and ND's link-layer address options the IPoIB ones.
#include <algorithm>
#include <array>
#include <vector>

#include "packet_bytes.h"
#include "softib/ipoib/translate.h"
#include "softib/wire/ipoib.h"

namespace softib::ipoib {
namespace {

using detail::Load32;

TxResult TxDrop(Drop drop) {
  TxResult r;
  r.drop = drop;
  return r;
}

// The hardware address the host names by `mac`: ours or a neighbour's.
const HwAddr* HwOfMac(const Mac& mac, const LocalIdentity& local, NeighbourTable& neighbours) {
  if (mac == local.mac) return &local.hw;
  const Neighbour* n = neighbours.FindByMac(mac);
  return n != nullptr ? &n->hw : nullptr;
}

// Ethernet ARP (28 bytes at `arp`, room for 56) → IPoIB ARP in place. The destination is
// chosen by the caller from the Ethernet destination; here only the body.
Drop RewriteArpFromHost(std::span<uint8_t> arp, const Mac& eth_source, const LocalIdentity& local,
                        NeighbourTable& neighbours) {
  std::array<uint8_t, detail::kEthArpBytes> in{};
  std::copy_n(arp.begin(), in.size(), in.begin());
  const wire::EthernetArpConstView eth(in);
  if (eth.HardwareType() != detail::kArpHwEthernet || eth.ProtocolType() != kEthertypeIpv4 ||
      eth.HardwareLength() != 6 || eth.ProtocolLength() != 4)
    return Drop::kBadArp;
  const uint16_t op = eth.Operation();
  if (op != detail::kArpRequest && op != detail::kArpReply) return Drop::kBadArp;
  Mac sender{};
  std::copy(eth.SenderHardwareAddress().begin(), eth.SenderHardwareAddress().end(), sender.begin());
  // The host speaks only for itself: a sender other than its own MAC is forged.
  if (sender != local.mac || eth_source != local.mac) return Drop::kBadArp;
  Mac target{};
  std::copy(eth.TargetHardwareAddress().begin(), eth.TargetHardwareAddress().end(), target.begin());
  std::array<uint8_t, kHwAddrBytes> target_hw{};  // unknown or zero in a request: zeros
  if (const HwAddr* hw = HwOfMac(target, local, neighbours)) {
    EncodeHwAddr(*hw, target_hw);
  } else if (op == detail::kArpReply && !detail::IsZero(target) &&
             target != detail::kBroadcastMac) {
    return Drop::kNoNeighbour;  // a reply to someone the table does not know
  }
  const wire::IpoibArpView out(arp.first(detail::kIpoibArpBytes));
  out.set_HardwareType(detail::kArpHwIpoib);
  out.set_ProtocolType(kEthertypeIpv4);
  out.set_HardwareLength(kHwAddrBytes);
  out.set_ProtocolLength(4);
  out.set_Operation(op);
  EncodeHwAddr(local.hw, out.SenderHardwareAddress());
  out.set_SenderProtocolAddress(eth.SenderProtocolAddress());
  out.set_TargetHardwareAddress(target_hw);
  out.set_TargetProtocolAddress(eth.TargetProtocolAddress());
  return Drop::kNone;
}

// ND's Ethernet link-layer address options (8 bytes) → the IPoIB ones (24 bytes) in the IPv6
// packet at `ip6` (length `*ip_length`, room up to ip6.size()); payload length and ICMPv6
// checksum fixed. Not an ND message: nothing changes.
Drop RewriteNdFromHost(std::span<uint8_t> ip6, size_t* ip_length, const LocalIdentity& local,
                       NeighbourTable& neighbours) {
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
  rewritten.reserve(options.size() + 64);
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
    if (len != detail::kEthNdOptionBytes) return Drop::kBadNd;
    Mac mac{};
    std::copy_n(options.begin() + static_cast<ptrdiff_t>(at + 2), mac.size(), mac.begin());
    const HwAddr* hw = HwOfMac(mac, local, neighbours);
    if (hw == nullptr) return Drop::kBadNd;
    std::array<uint8_t, detail::kIpoibNdOptionBytes> option{};
    const wire::IpoibNdLinkLayerOptionView view(option);
    view.set_Type(type);
    view.set_Length(detail::kIpoibNdOptionBytes / 8);
    view.set_Padding(0);
    EncodeHwAddr(*hw, view.LinkLayerAddress());
    rewritten.insert(rewritten.end(), option.begin(), option.end());
    at += len;
  }
  const size_t new_length = icmp_at + options_at + rewritten.size();
  if (new_length > ip6.size()) return Drop::kOversize;
  if (new_length - detail::kIpv6Header > 0xFFFF) return Drop::kOversize;
  std::copy(rewritten.begin(), rewritten.end(),
            ip6.begin() + static_cast<ptrdiff_t>(icmp_at + options_at));
  detail::Store16(ip6.data() + 4, static_cast<uint16_t>(new_length - detail::kIpv6Header));
  const std::span<uint8_t> icmp = ip6.subspan(icmp_at, new_length - icmp_at);
  detail::Store16(icmp.data() + 2, detail::Icmp6Checksum(ip6, icmp));
  *ip_length = new_length;
  return Drop::kNone;
}

}  // namespace

TxResult TranslateFromHost(std::span<uint8_t> buffer, size_t offset, size_t length,
                           const LocalIdentity& local, NeighbourTable& neighbours) {
  if (offset > buffer.size() || length > buffer.size() - offset) return TxDrop(Drop::kRunt);
  if (length < kEthHeaderBytes) return TxDrop(Drop::kRunt);
  const std::span<uint8_t> frame = buffer.subspan(offset, length);
  const wire::EthernetHeaderConstView eth(frame);
  Mac destination{};
  Mac source{};
  std::copy(eth.Destination().begin(), eth.Destination().end(), destination.begin());
  std::copy(eth.Source().begin(), eth.Source().end(), source.begin());
  const uint16_t ethertype = eth.EtherType();
  if (ethertype != kEthertypeIpv4 && ethertype != kEthertypeArp && ethertype != kEthertypeIpv6)
    return TxDrop(Drop::kUnknownEthertype);

  // The payload may grow into the tailroom (ARP, ND); never past the buffer's end.
  const size_t payload_at = offset + kEthHeaderBytes;
  const size_t room_end = std::min(buffer.size(), offset + length + kTxTailroom);
  size_t payload_length = length - kEthHeaderBytes;
  TxResult result;

  if (ethertype == kEthertypeArp) {
    if (payload_length < detail::kEthArpBytes) return TxDrop(Drop::kRunt);
    if (payload_at + detail::kIpoibArpBytes > room_end) return TxDrop(Drop::kOversize);
    const Drop drop = RewriteArpFromHost(buffer.subspan(payload_at, detail::kIpoibArpBytes), source,
                                         local, neighbours);
    if (drop != Drop::kNone) return TxDrop(drop);
    payload_length = detail::kIpoibArpBytes;
  } else {
    const auto datagram = detail::IpDatagramLength(ethertype, frame.subspan(kEthHeaderBytes));
    if (!datagram) return TxDrop(Drop::kRunt);
    payload_length = *datagram;  // Ethernet padding dropped
    if (local.mtu != 0 && payload_length > local.mtu) return TxDrop(Drop::kOversize);
    const uint8_t* ip = buffer.data() + payload_at;
    if (ethertype == kEthertypeIpv4 && (ip[16] & 0xF0) == 0xE0) {
      result.multicast = true;
      result.mgid = Ipv4MulticastMgid(Load32(ip + 16), local.pkey, local.mcast_scope);
    } else if (ethertype == kEthertypeIpv6 && ip[24] == 0xFF) {
      result.multicast = true;
      result.mgid = Ipv6MulticastMgid(std::span<const uint8_t, 16>(ip + 24, 16), local.pkey);
    }
    if (ethertype == kEthertypeIpv4) {
      const Drop drop = RewriteDhcpFromHost(buffer.subspan(payload_at, room_end - payload_at),
                                            &payload_length, local);
      if (drop != Drop::kNone) return TxDrop(drop);
      if (local.mtu != 0 && payload_length > local.mtu) return TxDrop(Drop::kOversize);
    }
    if (ethertype == kEthertypeIpv6) {
      const Drop drop = RewriteNdFromHost(buffer.subspan(payload_at, room_end - payload_at),
                                          &payload_length, local, neighbours);
      if (drop != Drop::kNone) return TxDrop(drop);
      if (local.mtu != 0 && payload_length > local.mtu) return TxDrop(Drop::kOversize);
    }
  }

  if (!result.multicast) {
    if (destination == detail::kBroadcastMac) {
      result.multicast = true;
      result.mgid = BroadcastMgid(local.pkey, local.mcast_scope);
    } else if ((destination[0] & 0x01) != 0) {
      // A multicast MAC whose IP destination is no group (or an ARP to one): the broadcast
      // group reaches every member, as the MAC asked.
      result.multicast = true;
      result.mgid = BroadcastMgid(local.pkey, local.mcast_scope);
    } else {
      result.neighbour = neighbours.FindByMac(destination);
      if (result.neighbour == nullptr) return TxDrop(Drop::kNoNeighbour);
    }
  }

  // The encapsulation header over the Ethernet header's last 4 bytes (RFC 4391 §6).
  const size_t encap_at = payload_at - kEncapBytes;
  const wire::IpoibEncapHeaderView encap(buffer.subspan(encap_at, kEncapBytes));
  encap.set_Type(ethertype);
  encap.set_Reserved(0);
  result.offset = encap_at;
  result.length = kEncapBytes + payload_length;
  return result;
}

}  // namespace softib::ipoib
