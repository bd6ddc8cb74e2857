// Ethernet ↔ IPoIB translation (RFC 4391 IPoIB over UD, RFC 4755 connected mode): what the
// IPoIB driver does between the host's Ethernet face and the fabric, as WinOFED's IPoIB
// miniport does for NDIS. Pure code: no kernel, no AL, no locks (the driver serialises the
// neighbour table). CONTRACT written by the lead; ulp/ipoib/translate implements it and may
// add to it.
//
// Frames are Ethernet II without FCS. An IPoIB packet is the 4-byte encapsulation header
// followed by the payload (RFC 4391 §6). Translation works in place in a buffer the caller
// owns, so the driver's registered buffers are written once: transmit reads the frame at
// an offset with room after it (ARP and ND options grow); receive finds the packet after
// the 40 bytes the GRH occupied, whose space the Ethernet header reuses.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace softib::ipoib {

using Mac = std::array<uint8_t, 6>;
using Gid = std::array<uint8_t, 16>;  // network order

inline constexpr size_t kEncapBytes = 4;    // RFC 4391 §6: type, reserved
inline constexpr size_t kHwAddrBytes = 20;  // RFC 4391 §9.1.1: flags/QPN, GID
inline constexpr size_t kEthHeaderBytes = 14;
inline constexpr size_t kGrhBytes = 40;
inline constexpr uint32_t kBroadcastQpn = 0xFFFFFF;
inline constexpr uint16_t kEthertypeIpv4 = 0x0800;
inline constexpr uint16_t kEthertypeArp = 0x0806;
inline constexpr uint16_t kEthertypeIpv6 = 0x86DD;
// Bytes a transmit buffer must have free after the frame (the ARP and ND growth).
inline constexpr size_t kTxTailroom = 64;

// An IP address of the host's (IPv4: the first 4 bytes).
struct IpAddr {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};
  friend bool operator==(const IpAddr&, const IpAddr&) = default;
};

// The 20-byte IPoIB hardware address.
struct HwAddr {
  static constexpr uint8_t kConnectedFlag = 0x80;  // 'C' (RFC 4755): connected mode offered
  uint8_t flags = 0;                               // reserved bits 0 on send
  uint32_t qpn = 0;                                // 24 bits
  Gid gid{};
  bool connected() const { return (flags & kConnectedFlag) != 0; }
  friend bool operator==(const HwAddr&, const HwAddr&) = default;
};
void EncodeHwAddr(const HwAddr& address, std::span<uint8_t, kHwAddrBytes> out);
HwAddr DecodeHwAddr(std::span<const uint8_t, kHwAddrBytes> in);

// Multicast GIDs (RFC 4391 §4): FF1s:401B:PPPP::FFFF:FFFF for the broadcast group, the IPv4
// group's 28 bits and the IPv6 group's low 80 bits (with its own scope) otherwise. `pkey`
// with the full-membership bit set, as the MGID carries it.
Gid BroadcastMgid(uint16_t pkey, uint8_t scope = 2);
Gid Ipv4MulticastMgid(uint32_t group_host_order, uint16_t pkey, uint8_t scope = 2);
Gid Ipv6MulticastMgid(std::span<const uint8_t, 16> group, uint16_t pkey);
// (Added by ulp/ipoib/translate.) Whether `mgid` is the broadcast group of `pkey`, in any
// scope.
bool IsBroadcastMgid(const Gid& mgid, uint16_t pkey);
// (Added by ulp/ipoib/translate.) The MAC the Ethernet face sees for `hw`: locally
// administered, unicast, derived from the GID's interface ID (bytes 8..15) and the QPN by
// FNV-1a; `attempt` > 0 gives the next candidate when a MAC is taken. The table uses it for
// neighbours; the driver may use it for its own MAC (attempt 0 of its own address).
Mac DeriveMac(const HwAddr& hw, uint32_t attempt = 0);

// What the interface is on the link.
struct LocalIdentity {
  HwAddr hw;          // own QPN, port GID, 'C' when connected mode is on
  Mac mac{};          // the Ethernet face's MAC
  uint16_t pkey = 0;  // full-membership bit set
  uint8_t mcast_scope = 2;
  uint32_t mtu = 0;  // the interface MTU (IP datagram bytes)
};

// Why a frame or a packet was dropped (the driver counts them; `ip -s link` shows the sums).
enum class Drop : uint8_t {
  kNone = 0,
  kRunt,              // shorter than its headers say
  kOversize,          // longer than the MTU
  kUnknownEthertype,  // neither IPv4, ARP nor IPv6
  kBadArp,            // not an Ethernet/IPv4 ARP (host) or IPoIB ARP (wire), or inconsistent
  kBadNd,             // a neighbour-discovery option that cannot be translated
  kNoNeighbour,       // unicast to / from an address the table does not know
  kBadEncap,          // wire: encapsulation type unknown or reserved bits set
  kLoopedBack,        // wire: our own multicast coming back (not an error)
  kSendQueueFull,     // driver: the send ring full and the frames held for it at their bound
  kCount
};
const char* DropName(Drop drop);

// Neighbours: the MACs the host sees for the link's hardware addresses. A remote's MAC is
// derived from its hardware address (locally administered, unicast); a collision with a
// different address that already holds it is resolved by the table, so a MAC always names
// one address. `context` is the driver's (its address vector, path state ...). Entries are
// keyed by QPN + GID (the flags, 'C', are refreshed by Learn). A Neighbour* stays valid until
// the next Learn of a new address, Forget or Clear (the entries live in a vector).
struct Neighbour {
  Mac mac{};
  HwAddr hw;
  uint16_t lid = 0;  // 0: not known
  uint64_t context = 0;
};
class NeighbourTable {
 public:
  // (Added by ulp/ipoib/translate.) How a new entry's MAC is made: DeriveMac, or a test's.
  using MacDeriver = Mac (*)(const HwAddr& hw, uint32_t attempt);
  explicit NeighbourTable(MacDeriver derive = &DeriveMac) : derive_(derive) {}
  // Learns or refreshes `hw` (with its LID when known): the entry, whose MAC the host sees
  // (nullptr only when 64 candidate MACs are all taken).
  Neighbour* Learn(const HwAddr& hw, uint16_t lid);
  Neighbour* FindByMac(const Mac& mac);
  Neighbour* FindByHw(const HwAddr& hw);
  // The receive side of a packet without a GRH: the source LID and QPN (slid 0: none).
  Neighbour* FindBySource(uint16_t slid, uint32_t qpn);
  void Forget(const Mac& mac);
  void Clear();
  std::vector<Neighbour> Snapshot() const;
  size_t size() const { return entries_.size(); }

 private:
  std::vector<Neighbour> entries_;  // small: a link's peers; linear scans are fine here
  MacDeriver derive_;
};

// Host → fabric. The frame is at buffer[offset, offset + length), with kTxTailroom bytes
// free after it; on success the IPoIB packet (encapsulation header first) is at
// buffer[result.offset, result.offset + result.length). ARP becomes IPoIB ARP (hardware
// type 32, 20-byte addresses), ND's link-layer address options the IPoIB ones (checksum
// fixed), the Ethernet destination a neighbour (unicast), a multicast group (from the IP
// destination: all the group's bits, which a multicast MAC does not keep) or the broadcast
// group (Ethernet broadcast, ARP requests). Drops: kRunt (shorter than the Ethernet header or
// an IP header's length, or the frame outside the buffer), kOversize (an IP datagram over the
// MTU, or ARP/ND growth past the buffer), kUnknownEthertype, kBadArp (not Ethernet/IPv4 ARP,
// or a sender other than our MAC: forged), kBadNd (a malformed option, or a link-layer
// address the table does not know), kNoNeighbour (unicast to an unknown MAC, or an ARP reply
// to one). A multicast MAC whose IP destination is no group goes to the broadcast group.
struct TxResult {
  Drop drop = Drop::kNone;
  bool multicast = false;
  Neighbour* neighbour = nullptr;  // unicast: the destination
  Gid mgid{};                      // multicast: the group
  size_t offset = 0;
  size_t length = 0;
};
TxResult TranslateFromHost(std::span<uint8_t> buffer, size_t offset, size_t length,
                           const LocalIdentity& local, NeighbourTable& neighbours);

// Fabric → host. The packet (encapsulation header first) is at buffer[offset, offset +
// length) with at least kEthHeaderBytes - kEncapBytes bytes before it (the GRH's space); on
// success the Ethernet frame is at buffer[result.offset, result.offset + result.length).
// The source comes from the work completion (and the GRH when present). IPoIB ARP and ND
// teach the table the sender's address; a packet with a GRH names its sender (QPN + SGID), so
// an unknown one is learnt (multicast from a host that never ARPed us); without a GRH an
// unknown (SLID, QPN) is kNoNeighbour. An IPoIB ARP whose sender address is not the packet's
// source QPN (and SGID) is kBadArp. No headroom before the packet: kRunt.
struct RxSource {
  uint32_t qpn = 0;
  uint16_t slid = 0;
  bool has_grh = false;
  Gid sgid{};  // has_grh
  Gid dgid{};  // has_grh: a multicast group when the packet came to one
};
struct RxResult {
  Drop drop = Drop::kNone;
  Neighbour* neighbour = nullptr;  // the sender, when known
  size_t offset = 0;
  size_t length = 0;
};
RxResult TranslateToHost(std::span<uint8_t> buffer, size_t offset, size_t length,
                         const RxSource& source, const LocalIdentity& local,
                         NeighbourTable& neighbours);

// IGMP (v1/v2/v3) and MLD (v1/v2) from the host: the groups it now listens to or left, as
// MGIDs with the group's full address, so the driver joins them as a full member (and
// leaves them). Any other frame: nothing.
struct GroupChange {
  bool join = true;
  Gid mgid{};
};
std::vector<GroupChange> SnoopHostMembership(std::span<const uint8_t> frame,
                                             const LocalIdentity& local);

// (Added by ulp/ipoib/translate, DHCP over InfiniBand, RFC 4390.) A DHCPv4 message has no
// room for a 20-byte hardware address: on the wire it carries htype 32, hlen 0, a zero
// chaddr, and a client identifier (option 61) names the client. TranslateFromHost and
// TranslateToHost call these on every IPv4 datagram (not a BOOTP message over UDP 67/68:
// nothing happens), so unmodified DHCP clients and servers on the Ethernet face work:
// - host → wire, a client message (UDP 68 → 67): htype 32, hlen 0, chaddr zeroed, the
//   BROADCAST flag set (the server cannot address a reply to a MAC), and DhcpClientIdentifier
//   inserted as the first option unless the message carries option 61 already;
// - host → wire, a server reply (UDP 67 → 68): htype 32, hlen 0, chaddr zeroed;
// - wire → host, a client message: htype 1, hlen 6, chaddr = the sender's neighbour MAC (a
//   server behind the face sees an Ethernet client; the client identifier is kept);
// - wire → host, a server reply: htype 1, hlen 6, chaddr = our MAC when the reply names our
//   client identifier or none (otherwise zero: the reply is another host's).
// The IPv4 header checksum and the UDP checksum (when not zero) are made anew.
// The client identifier (RFC 4361 §6.1 as RFC 4390 §2.1 asks): type 0xFF, the IAID (the
// interface's P_Key, 32 bits, big-endian: one interface per port and partition) and a DUID-LL
// (RFC 8415 §11.4: DUID type 3, hardware type 32 = InfiniBand, then the port GUID, the GID's
// interface ID, bytes 8..15).
inline constexpr size_t kDhcpClientIdBytes = 1 + 4 + 2 + 2 + 8;
std::array<uint8_t, kDhcpClientIdBytes> DhcpClientIdentifier(const LocalIdentity& local);
// `ip` holds the IPv4 datagram of *ip_length bytes and the room after it the option may take
// (kDhcpOptionGrowth); kOversize when that room is missing, kNone otherwise.
inline constexpr size_t kDhcpOptionGrowth = 2 + kDhcpClientIdBytes;
Drop RewriteDhcpFromHost(std::span<uint8_t> ip, size_t* ip_length, const LocalIdentity& local);
void RewriteDhcpToHost(std::span<uint8_t> ip, const Mac& sender_mac, const LocalIdentity& local);

// ---- (Added by ulp/ipoib connected mode, RFC 4755 §4) ----
// In connected mode the interface's MTU is 65520 while peers without 'C' and multicast
// groups are reached over UD, whose MTU is smaller: the driver fragments IPv4 datagrams for
// them (RFC 791), answers a datagram with DF set with ICMP "fragmentation needed" (RFC 792
// type 3 code 4 with the next-hop MTU of RFC 1191), and an IPv6 datagram over the UD MTU
// with ICMPv6 Packet Too Big (RFC 4443 §3.2). Frames are Ethernet II, as everywhere here.
enum class FragmentOutcome : uint8_t {
  kFits,          // the datagram fits `mtu`: send the frame as it is
  kFragmented,    // `fragments` holds the frames to send instead, in order
  kDontFragment,  // IPv4 with DF set: answer with BuildIcmpFragmentationNeeded
  kTooBig,        // IPv6 over `mtu`: answer with BuildIcmpv6PacketTooBig
  kMalformed,     // not an IP datagram whose header can be read: drop (kRunt)
};
// Splits the frame's IPv4 datagram into fragments of at most `mtu` bytes of IP datagram
// each (data in multiples of 8 bytes but the last; the first carries every option, later
// ones only the options whose copied flag is set, padded with End of Option List; the
// header checksum recomputed). An already fragmented datagram is split further (offsets
// and MF kept). `mtu` below 68 (RFC 791's minimum) is kMalformed. Non-IP frames (ARP)
// and datagrams that fit are kFits.
FragmentOutcome FragmentForMtu(std::span<const uint8_t> frame, uint32_t mtu,
                               std::vector<std::vector<uint8_t>>* fragments);
// The host's answer to an IPv4 frame with DF over `next_hop_mtu`: an Ethernet frame from
// the frame's destination MAC to its source MAC carrying an IPv4 ICMP Destination
// Unreachable, code 4, from `source` (IPv4, network order; the interface's address) to the
// datagram's source, TTL 64, quoting the datagram's header and its first 8 data bytes.
// Empty when the frame is no IPv4 datagram.
std::vector<uint8_t> BuildIcmpFragmentationNeeded(std::span<const uint8_t> frame,
                                                  uint32_t next_hop_mtu,
                                                  std::span<const uint8_t, 4> source);
// The same for IPv6: ICMPv6 Packet Too Big (type 2, code 0, the MTU), hop limit 64, from `source`
// to the datagram's source, quoting as much of the datagram as keeps the answer within 1280 bytes
// of IPv6 (RFC 4443 §2.4 (c)). Empty when the frame is no IPv6.
std::vector<uint8_t> BuildIcmpv6PacketTooBig(std::span<const uint8_t> frame, uint32_t mtu,
                                             std::span<const uint8_t, 16> source);

}  // namespace softib::ipoib
