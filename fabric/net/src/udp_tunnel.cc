#include "softib/fabric/udp_tunnel.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <random>

#include "softib/wire/ib_crc.h"

namespace softib::fabric {

namespace {
using tunnel::HelloState;
// Datagrams read per Service call, so a flood cannot starve the fabric's other work.
constexpr int kReadsPerService = 256;
constexpr int kSocketBufferBytes = 4 << 20;
}  // namespace

std::string UdpAddress::ToString() const {
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &addr.sin_addr, text, sizeof text);
  return std::string(text) + ":" + std::to_string(ntohs(addr.sin_port));
}

std::optional<UdpAddress> ParseUdpAddress(const std::string& text, std::string* error) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    *error = "\"" + text + "\" is not HOST:PORT";
    return std::nullopt;
  }
  const std::string host = text.substr(0, colon), port_text = text.substr(colon + 1);
  unsigned long port = 0;
  for (char c : port_text) {
    if (c < '0' || c > '9' || (port = port * 10 + static_cast<unsigned>(c - '0')) > 65535) {
      *error = "\"" + port_text + "\" is not a port (0..65535)";
      return std::nullopt;
    }
  }
  UdpAddress out;
  out.addr.sin_family = AF_INET;
  out.addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &out.addr.sin_addr) == 1) return out;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0 || !found) {
    *error = "\"" + host + "\": " + (rc != 0 ? gai_strerror(rc) : "no IPv4 address");
    return std::nullopt;
  }
  out.addr.sin_addr = reinterpret_cast<const sockaddr_in*>(found->ai_addr)->sin_addr;
  freeaddrinfo(found);
  return out;
}

UdpTunnel::UdpTunnel(Deliver deliver, LinkState link_state)
    : deliver_(std::move(deliver)), link_state_(std::move(link_state)), buffer_(65536) {
  std::random_device random;
  while (sender_id_ == 0) sender_id_ = uint64_t{random()} << 32 | random();
}

UdpTunnel::~UdpTunnel() {
  if (fd_ >= 0) close(fd_);
}

bool UdpTunnel::Bind(const UdpAddress& local, std::string* error) {
  fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  // Room for a window of 4 KiB packets in flight (best effort: capped by rmem_max/wmem_max).
  for (int option : {SO_RCVBUF, SO_SNDBUF})
    (void)setsockopt(fd_, SOL_SOCKET, option, &kSocketBufferBytes, sizeof kSocketBufferBytes);
  if (bind(fd_, reinterpret_cast<const sockaddr*>(&local.addr), sizeof local.addr) != 0) {
    *error = "bind " + local.ToString() + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

uint16_t UdpTunnel::port() const {
  sockaddr_in bound{};
  socklen_t length = sizeof bound;
  if (fd_ < 0 || getsockname(fd_, reinterpret_cast<sockaddr*>(&bound), &length) != 0) return 0;
  return ntohs(bound.sin_port);
}

std::optional<uint32_t> UdpTunnel::AddLink(uint64_t link_id) {
  const auto index = static_cast<uint32_t>(links_.size());
  if (link_id == 0 || !by_id_.emplace(link_id, index).second) return std::nullopt;
  links_.push_back({});
  links_.back().id = link_id;
  return index;
}

std::string UdpTunnel::peer(uint32_t link) const {
  const Link& l = links_.at(link);
  return l.peer ? l.peer->ToString() : "";
}

uint64_t UdpTunnel::Service(uint64_t now_ns) {
  now_ns_ = now_ns;
  for (int i = 0; i < kReadsPerService && fd_ >= 0; ++i) {
    UdpAddress from;
    socklen_t from_length = sizeof from.addr;
    const ssize_t n = recvfrom(fd_, buffer_.data(), buffer_.size(), MSG_TRUNC,
                               reinterpret_cast<sockaddr*>(&from.addr), &from_length);
    if (n < 0) break;  // EAGAIN: nothing more (other errors: an ICMP report; try later)
    if (static_cast<std::size_t>(n) > buffer_.size()) {
      ++drops_.bad_header;  // larger than any tunnel datagram
      continue;
    }
    Receive(std::span<const uint8_t>(buffer_.data(), static_cast<std::size_t>(n)), from, now_ns);
  }
  std::erase_if(heard_from_, [&](const auto& heard) {
    return now_ns - heard.second > kDeadIntervals * kHelloIntervalNs;
  });
  for (uint32_t i = 0; i < links_.size(); ++i) Evaluate(i);
  if (now_ns >= next_hello_ns_) {
    SendHellos();
    next_hello_ns_ = now_ns + kHelloIntervalNs;
  }
  uint64_t next = next_hello_ns_;
  for (const Link& l : links_) {
    if (l.heard_ns != 0) next = std::min(next, l.heard_ns + kDeadIntervals * kHelloIntervalNs + 1);
  }
  return next;
}

void UdpTunnel::Receive(std::span<const uint8_t> datagram, const UdpAddress& from,
                        uint64_t now_ns) {
  tunnel::Header header;
  switch (tunnel::DecodeHeader(datagram, &header)) {
    case tunnel::DecodeError::kShort:
      ++drops_.short_datagram;
      return;
    case tunnel::DecodeError::kBadHeader:
      ++drops_.bad_header;
      return;
    case tunnel::DecodeError::kNone:
      break;
  }
  const auto body = datagram.subspan(tunnel::kHeaderBytes);
  if (header.type == tunnel::Type::kHello) {
    ReceiveHello(header, body, from, now_ns);
  } else {
    ReceivePacket(header, body, from);
  }
}

void UdpTunnel::ReceivePacket(const tunnel::Header& header, std::span<const uint8_t> packet,
                              const UdpAddress& from) {
  const auto found = by_id_.find(header.id);
  if (found == by_id_.end()) {
    ++drops_.unknown_link;
    return;
  }
  const ibcrc::CrcCheck crcs = ibcrc::CheckCrcs(packet);
  if (!crcs.well_formed) {
    ++drops_.short_datagram;
    return;
  }
  if (!crcs.vcrc_ok()) {
    ++drops_.bad_vcrc;
    return;
  }
  if (!crcs.icrc_ok()) {
    ++drops_.bad_icrc;
    return;
  }
  Link& link = links_[found->second];
  if (!link.up) {
    ++drops_.link_down;
    return;
  }
  if (!(*link.peer == from)) {
    ++drops_.wrong_peer;  // only the daemon whose hellos brought the link up sends on it
    return;
  }
  if (link.rx_sequence) {
    const auto ahead = static_cast<int32_t>(header.sequence - (*link.rx_sequence + 1));
    if (ahead < 0) {
      ++link.counters.out_of_order;
    } else {
      link.counters.gaps += static_cast<uint32_t>(ahead);
      link.rx_sequence = header.sequence;
    }
  } else {
    link.rx_sequence = header.sequence;
  }
  ++link.counters.received;
  deliver_(found->second, packet);
}

void UdpTunnel::ReceiveHello(const tunnel::Header& header, std::span<const uint8_t> body,
                             const UdpAddress& from, uint64_t now_ns) {
  if (!tunnel::DecodeHello(body, &entries_)) {
    ++drops_.bad_header;
    return;
  }
  if (header.id == sender_id_) {
    ++drops_.own_hellos;  // --peer names this daemon itself: never a link to itself
    return;
  }
  bool known = false;
  for (auto& heard : heard_from_) {
    if (heard.first == from) heard.second = now_ns, known = true;
  }
  if (!known) heard_from_.emplace_back(from, now_ns);
  for (const tunnel::HelloEntry& entry : entries_) {
    const auto found = by_id_.find(entry.link_id);
    if (found == by_id_.end()) continue;  // a link of the sender's with a third daemon
    Link& link = links_[found->second];
    const bool heard_before = Hears(link);
    if (heard_before && link.peer && !(*link.peer == from) && link.peer_sender != header.id) {
      ++drops_.conflicts;  // two live daemons host the far end: keep the first
      continue;
    }
    link.heard_ns = now_ns;
    link.peer_state = entry.state;
    link.peer = from;
    link.peer_sender = header.id;
    if (!heard_before) next_hello_ns_ = 0;  // tell the peer at once that it is heard
    Evaluate(found->second);
  }
}

bool UdpTunnel::Hears(const Link& link) const {
  return link.heard_ns != 0 && now_ns_ - link.heard_ns <= kDeadIntervals * kHelloIntervalNs;
}

void UdpTunnel::Evaluate(uint32_t index) {
  Link& link = links_[index];
  const bool want = link.enabled && Hears(link) && link.peer_state == HelloState::kHearYou;
  if (want == link.up) return;
  link.up = want;
  if (!want) {
    ++link.counters.flaps;
    link.rx_sequence.reset();
  }
  next_hello_ns_ = 0;
  link_state_(index, want);
}

void UdpTunnel::SetEnabled(uint32_t link, bool enabled) {
  links_.at(link).enabled = enabled;
  next_hello_ns_ = 0;
  Evaluate(link);
}

void UdpTunnel::SendHellos() {
  std::vector<UdpAddress> to = peers_;
  for (const auto& heard : heard_from_) {
    if (std::find(to.begin(), to.end(), heard.first) == to.end()) to.push_back(heard.first);
  }
  for (std::size_t first = 0; first < links_.size(); first += tunnel::kHelloEntriesPerDatagram) {
    entries_.clear();
    for (std::size_t i = first;
         i < links_.size() && entries_.size() < tunnel::kHelloEntriesPerDatagram; ++i) {
      const Link& l = links_[i];
      entries_.push_back({l.id, !l.enabled ? HelloState::kDisabled
                                : Hears(l) ? HelloState::kHearYou
                                           : HelloState::kPolling});
    }
    const std::vector<uint8_t> hello = tunnel::EncodeHello(sender_id_, hello_sequence_++, entries_);
    for (const UdpAddress& address : to) SendTo(address, hello, &hello_send_errors_);
  }
}

void UdpTunnel::Send(uint32_t index, std::span<const uint8_t> packet) {
  Link& link = links_.at(index);
  if (!link.up || !link.peer || packet.size() > UINT16_MAX) {
    ++link.counters.not_up;
    return;
  }
  std::array<uint8_t, tunnel::kHeaderBytes> header;
  tunnel::EncodeHeader(
      {tunnel::Type::kPacket, link.id, link.tx_sequence++, static_cast<uint16_t>(packet.size())},
      header);
  iovec parts[2] = {{header.data(), header.size()},
                    {const_cast<uint8_t*>(packet.data()), packet.size()}};
  msghdr message{};
  message.msg_name = &link.peer->addr;
  message.msg_namelen = sizeof link.peer->addr;
  message.msg_iov = parts;
  message.msg_iovlen = 2;
  if (sendmsg(fd_, &message, MSG_DONTWAIT) < 0) {
    ++link.counters.send_errors;
    return;
  }
  ++link.counters.sent;
}

void UdpTunnel::SendTo(const UdpAddress& to, std::span<const uint8_t> datagram, uint64_t* errors) {
  if (sendto(fd_, datagram.data(), datagram.size(), MSG_DONTWAIT,
             reinterpret_cast<const sockaddr*>(&to.addr), sizeof to.addr) < 0)
    ++*errors;
}

}  // namespace softib::fabric
