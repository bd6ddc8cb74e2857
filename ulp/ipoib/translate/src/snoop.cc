// IGMP and MLD from the host: which groups it listens to now, as the MGIDs the driver joins as
// a full member (RFC 4391 §4: all 28 / 112 group bits, which the multicast MAC loses).
//
// The all-hosts group 224.0.0.1 and the all-nodes group ff02::1 are left out: hosts never
// report them (RFC 2236 §6, RFC 2710 §5), and the driver joins both itself when the interface
// comes up. Every other group, link-local ones included (224.0.0.251, ff02::1:ffXX:XXXX
// solicited-node groups, which ND needs), is reported.
#include <algorithm>

#include "packet_bytes.h"
#include "softib/ipoib/translate.h"
#include "softib/wire/ipoib.h"

namespace softib::ipoib {
namespace {

using detail::Load16;
using detail::Load32;

constexpr uint32_t kAllHostsGroup = 0xE0000001;  // 224.0.0.1

void AddIpv4Group(std::vector<GroupChange>* out, uint32_t group, bool join,
                  const LocalIdentity& local) {
  if ((group & 0xF0000000) != 0xE0000000 || group == kAllHostsGroup) return;
  out->push_back({join, Ipv4MulticastMgid(group, local.pkey, local.mcast_scope)});
}

void AddIpv6Group(std::vector<GroupChange>* out, const uint8_t* group, bool join,
                  const LocalIdentity& local) {
  if (group[0] != 0xFF) return;
  static constexpr uint8_t kAllNodes[16] = {0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  if (std::equal(group, group + 16, kAllNodes)) return;
  out->push_back({join, Ipv6MulticastMgid(std::span<const uint8_t, 16>(group, 16), local.pkey)});
}

// IGMPv3 / MLDv2 record types (RFC 3376 §4.2.12, RFC 3810 §5.2.12): MODE_IS_INCLUDE 1,
// MODE_IS_EXCLUDE 2, CHANGE_TO_INCLUDE 3, CHANGE_TO_EXCLUDE 4, ALLOW_NEW 5, BLOCK_OLD 6. An
// include record with no source is the host leaving; every other record keeps it listening
// (source lists are not tracked: the whole group is joined).
bool RecordIsLeave(uint8_t type, uint16_t sources) {
  return (type == 1 || type == 3) && sources == 0;
}
bool RecordKnown(uint8_t type) { return type >= 1 && type <= 6; }

void SnoopIgmp(std::span<const uint8_t> igmp, const LocalIdentity& local,
               std::vector<GroupChange>* out) {
  if (igmp.size() < 8) return;
  switch (igmp[0]) {
    case 0x12:  // IGMPv1 membership report
    case 0x16:  // IGMPv2 membership report
      AddIpv4Group(out, Load32(igmp.data() + 4), true, local);
      return;
    case 0x17:  // IGMPv2 leave group
      AddIpv4Group(out, Load32(igmp.data() + 4), false, local);
      return;
    case 0x22: {  // IGMPv3 membership report: records from byte 8
      const size_t records = Load16(igmp.data() + 6);
      size_t at = 8;
      for (size_t i = 0; i < records; ++i) {
        if (at + 8 > igmp.size()) return;
        const uint8_t type = igmp[at];
        const size_t aux = size_t{igmp[at + 1]} * 4;
        const uint16_t sources = Load16(igmp.data() + at + 2);
        const uint32_t group = Load32(igmp.data() + at + 4);
        const size_t next = at + 8 + size_t{sources} * 4 + aux;
        if (next > igmp.size()) return;
        if (RecordKnown(type)) AddIpv4Group(out, group, !RecordIsLeave(type, sources), local);
        at = next;
      }
      return;
    }
    default:
      return;
  }
}

void SnoopMld(std::span<const uint8_t> icmp, const LocalIdentity& local,
              std::vector<GroupChange>* out) {
  if (icmp.size() < 8) return;
  switch (icmp[0]) {
    case 131:  // MLDv1 report: the group at byte 8
    case 132:  // MLDv1 done
      if (icmp.size() < 24) return;
      AddIpv6Group(out, icmp.data() + 8, icmp[0] == 131, local);
      return;
    case 143: {  // MLDv2 report: records from byte 8
      const size_t records = Load16(icmp.data() + 6);
      size_t at = 8;
      for (size_t i = 0; i < records; ++i) {
        if (at + 20 > icmp.size()) return;
        const uint8_t type = icmp[at];
        const size_t aux = size_t{icmp[at + 1]} * 4;
        const uint16_t sources = Load16(icmp.data() + at + 2);
        const size_t next = at + 20 + size_t{sources} * 16 + aux;
        if (next > icmp.size()) return;
        if (RecordKnown(type))
          AddIpv6Group(out, icmp.data() + at + 4, !RecordIsLeave(type, sources), local);
        at = next;
      }
      return;
    }
    default:
      return;
  }
}

}  // namespace

std::vector<GroupChange> SnoopHostMembership(std::span<const uint8_t> frame,
                                             const LocalIdentity& local) {
  std::vector<GroupChange> changes;
  if (frame.size() < kEthHeaderBytes) return changes;
  const wire::EthernetHeaderConstView eth(frame);
  const uint16_t ethertype = eth.EtherType();
  if (ethertype != kEthertypeIpv4 && ethertype != kEthertypeIpv6) return changes;
  const std::span<const uint8_t> ip = frame.subspan(kEthHeaderBytes);
  const auto datagram = detail::IpDatagramLength(ethertype, ip);
  if (!datagram) return changes;
  const std::span<const uint8_t> packet = ip.first(*datagram);
  if (ethertype == kEthertypeIpv4) {
    const size_t ihl = size_t{packet[0] & 0x0Fu} * 4;
    const bool fragment = (Load16(packet.data() + 6) & 0x3FFF) != 0;
    if (packet[9] != detail::kIpProtoIgmp || fragment) return changes;
    SnoopIgmp(packet.subspan(ihl), local, &changes);
  } else {
    const auto upper = detail::Ipv6UpperLayer(packet);
    if (!upper || upper->protocol != detail::kIpProtoIcmp6) return changes;
    SnoopMld(packet.subspan(upper->offset), local, &changes);
  }
  return changes;
}

}  // namespace softib::ipoib
