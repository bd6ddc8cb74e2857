// DHCP over InfiniBand (RFC 4390): the BOOTP fields a 20-byte IPoIB hardware address does not
// fit, rewritten between the Ethernet face and the wire (translate.h says which way what).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "packet_bytes.h"
#include "softib/ipoib/translate.h"

namespace softib::ipoib {
namespace {

using detail::Load16;
using detail::Load32;
using detail::Store16;

constexpr uint8_t kIpProtoUdp = 17;
constexpr uint16_t kBootpServerPort = 67;
constexpr uint16_t kBootpClientPort = 68;
constexpr size_t kUdpHeader = 8;
// BOOTP (RFC 951 / RFC 2131 §2): op, htype, hlen, hops, xid, secs, flags at 10, ciaddr,
// yiaddr, siaddr, giaddr, chaddr at 28 (16 bytes), sname, file, the magic cookie at 236.
constexpr size_t kBootpHtype = 1;
constexpr size_t kBootpHlen = 2;
constexpr size_t kBootpFlags = 10;
constexpr size_t kBootpChaddr = 28;
constexpr size_t kBootpChaddrBytes = 16;
constexpr size_t kBootpCookie = 236;
constexpr size_t kBootpOptions = 240;
constexpr uint32_t kMagicCookie = 0x63825363;
constexpr uint16_t kBroadcastFlag = 0x8000;
constexpr uint8_t kHtypeEthernet = 1;
constexpr uint8_t kHtypeInfiniband = 32;
constexpr uint8_t kOptionPad = 0;
constexpr uint8_t kOptionEnd = 255;
constexpr uint8_t kOptionClientId = 61;

// Where the DHCP message of an IPv4 datagram is, and which way it goes.
struct Bootp {
  size_t ihl = 0;
  size_t udp_at = 0;
  size_t udp_length = 0;
  bool from_client = false;  // 68 → 67; otherwise 67 → 68
};

std::optional<Bootp> FindBootp(std::span<const uint8_t> ip) {
  if (ip.size() < detail::kIpv4MinHeader || (ip[0] >> 4) != 4) return std::nullopt;
  const size_t ihl = size_t{ip[0] & 0x0fu} * 4;
  const size_t total = Load16(ip.data() + 2);
  if (ihl < detail::kIpv4MinHeader || total > ip.size() || total < ihl + kUdpHeader)
    return std::nullopt;
  if (ip[9] != kIpProtoUdp) return std::nullopt;
  if ((Load16(ip.data() + 6) & 0x3FFF) != 0) return std::nullopt;  // a fragment
  const uint8_t* udp = ip.data() + ihl;
  const uint16_t source = Load16(udp);
  const uint16_t destination = Load16(udp + 2);
  const size_t udp_length = Load16(udp + 4);
  if (udp_length < kUdpHeader + kBootpOptions || udp_length != total - ihl) return std::nullopt;
  if (Load32(udp + kUdpHeader + kBootpCookie) != kMagicCookie) return std::nullopt;
  Bootp bootp{ihl, ihl, udp_length, false};
  if (source == kBootpClientPort && destination == kBootpServerPort) {
    bootp.from_client = true;
  } else if (!(source == kBootpServerPort && destination == kBootpClientPort)) {
    return std::nullopt;
  }
  return bootp;
}

// The client identifier option's value in the options of `message` (BOOTP from op on), or
// an empty span (none, or malformed options).
std::span<const uint8_t> FindClientId(std::span<const uint8_t> message, bool* malformed) {
  *malformed = false;
  size_t at = kBootpOptions;
  while (at < message.size()) {
    const uint8_t code = message[at];
    if (code == kOptionEnd) return {};
    if (code == kOptionPad) {
      ++at;
      continue;
    }
    if (at + 2 > message.size() || at + 2 + message[at + 1] > message.size()) break;
    if (code == kOptionClientId) return message.subspan(at + 2, message[at + 1]);
    at += 2 + size_t{message[at + 1]};
  }
  *malformed = at > message.size() || (at < message.size() && message[at] != kOptionEnd);
  return {};
}

void FixChecksums(std::span<uint8_t> ip, const Bootp& bootp, bool udp_had_checksum) {
  Store16(ip.data() + 10, 0);
  Store16(ip.data() + 10, detail::FoldChecksum(detail::SumWords(ip.first(bootp.ihl))));
  const std::span<uint8_t> udp = ip.subspan(bootp.udp_at, bootp.udp_length);
  Store16(udp.data() + 6, 0);
  if (!udp_had_checksum) return;
  // RFC 768: the pseudo header (addresses, protocol, UDP length), then the datagram.
  uint32_t sum = detail::SumWords(ip.subspan(12, 8));
  sum += kIpProtoUdp + static_cast<uint32_t>(bootp.udp_length);
  uint16_t checksum = detail::FoldChecksum(detail::SumWords(udp, sum));
  if (checksum == 0) checksum = 0xFFFF;
  Store16(udp.data() + 6, checksum);
}

}  // namespace

std::array<uint8_t, kDhcpClientIdBytes> DhcpClientIdentifier(const LocalIdentity& local) {
  std::array<uint8_t, kDhcpClientIdBytes> id{};
  id[0] = 0xFF;  // RFC 4361 §6.1: an IAID and a DUID follow
  id[1] = 0;
  id[2] = 0;
  Store16(id.data() + 3, local.pkey);                                       // IAID
  Store16(id.data() + 5, 3);                                                // DUID-LL
  Store16(id.data() + 7, uint16_t{kHtypeInfiniband});                       // hardware type 32
  std::copy(local.hw.gid.begin() + 8, local.hw.gid.end(), id.begin() + 9);  // port GUID
  return id;
}

Drop RewriteDhcpFromHost(std::span<uint8_t> ip, size_t* ip_length, const LocalIdentity& local) {
  const auto found = FindBootp(ip.first(*ip_length));
  if (!found) return Drop::kNone;
  Bootp bootp = *found;
  uint8_t* message = ip.data() + bootp.udp_at + kUdpHeader;
  if (message[kBootpHtype] == kHtypeInfiniband) return Drop::kNone;  // already IPoIB's
  const bool udp_had_checksum = Load16(ip.data() + bootp.udp_at + 6) != 0;
  bool insert_id = false;
  if (bootp.from_client) {
    bool malformed = false;
    const auto id =
        FindClientId(std::span<const uint8_t>(message, bootp.udp_length - kUdpHeader), &malformed);
    insert_id = id.empty() && !malformed;
  }
  if (insert_id) {
    if (*ip_length + kDhcpOptionGrowth > ip.size()) return Drop::kOversize;
    // The option goes first, after the cookie; whatever followed moves up.
    const size_t options_at = bootp.udp_at + kUdpHeader + kBootpOptions;
    const size_t end = bootp.udp_at + bootp.udp_length;
    std::copy_backward(ip.begin() + static_cast<ptrdiff_t>(options_at),
                       ip.begin() + static_cast<ptrdiff_t>(end),
                       ip.begin() + static_cast<ptrdiff_t>(end + kDhcpOptionGrowth));
    ip[options_at] = kOptionClientId;
    ip[options_at + 1] = static_cast<uint8_t>(kDhcpClientIdBytes);
    const auto id = DhcpClientIdentifier(local);
    std::copy(id.begin(), id.end(), ip.begin() + static_cast<ptrdiff_t>(options_at + 2));
    bootp.udp_length += kDhcpOptionGrowth;
    *ip_length += kDhcpOptionGrowth;
    Store16(ip.data() + 2, static_cast<uint16_t>(Load16(ip.data() + 2) + kDhcpOptionGrowth));
    Store16(ip.data() + bootp.udp_at + 4, static_cast<uint16_t>(bootp.udp_length));
  }
  message[kBootpHtype] = kHtypeInfiniband;
  message[kBootpHlen] = 0;
  std::fill_n(message + kBootpChaddr, kBootpChaddrBytes, uint8_t{0});
  if (bootp.from_client)
    Store16(message + kBootpFlags,
            static_cast<uint16_t>(Load16(message + kBootpFlags) | kBroadcastFlag));
  FixChecksums(ip.first(*ip_length), bootp, udp_had_checksum);
  return Drop::kNone;
}

void RewriteDhcpToHost(std::span<uint8_t> ip, const Mac& sender_mac, const LocalIdentity& local) {
  const auto found = FindBootp(ip);
  if (!found) return;
  const Bootp bootp = *found;
  uint8_t* message = ip.data() + bootp.udp_at + kUdpHeader;
  if (message[kBootpHtype] != kHtypeInfiniband) return;
  const bool udp_had_checksum = Load16(ip.data() + bootp.udp_at + 6) != 0;
  Mac chaddr{};
  if (bootp.from_client) {
    chaddr = sender_mac;
  } else {
    bool malformed = false;
    const auto id =
        FindClientId(std::span<const uint8_t>(message, bootp.udp_length - kUdpHeader), &malformed);
    const auto ours = DhcpClientIdentifier(local);
    if (id.empty() || std::equal(id.begin(), id.end(), ours.begin(), ours.end()))
      chaddr = local.mac;
  }
  message[kBootpHtype] = kHtypeEthernet;
  message[kBootpHlen] = static_cast<uint8_t>(chaddr.size());
  std::fill_n(message + kBootpChaddr, kBootpChaddrBytes, uint8_t{0});
  std::copy(chaddr.begin(), chaddr.end(), message + kBootpChaddr);
  FixChecksums(ip, bootp, udp_had_checksum);
}

}  // namespace softib::ipoib
