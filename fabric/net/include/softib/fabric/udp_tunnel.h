// The UDP side of tunnel cables: one socket carrying any number of links (cables whose far
// end is in another softibd), each named by a link id both ends derive alike
// (tunnel_datagram.h LinkId). What arrives is checked — header, length, link, VCRC, ICRC —
// and only good packets are handed on; the rest is dropped and counted by reason. The ends
// exchange hellos: a link is up only while both hear each other (ten hellos missed: down),
// and an end taken down on purpose tells its peer at once.
//
// Not thread-safe: one thread (FabricHost's) calls everything after set-up. No clock of its
// own: Service() is given the time, so the tests drive it with a fake one.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "softib/fabric/tunnel_datagram.h"

namespace softib::fabric {

// Datagrams dropped on arrival, by reason.
struct TunnelDrops {
  uint64_t short_datagram = 0;  // shorter than the header, or than an IB packet's CRCs
  uint64_t bad_header = 0;      // magic, version, type, reserved, length, hello entries
  uint64_t unknown_link = 0;    // a packet for a link this end does not host
  uint64_t link_down = 0;       // a packet for a link that is not up here
  uint64_t wrong_peer = 0;      // a packet from another address than the link's peer
  uint64_t bad_vcrc = 0;
  uint64_t bad_icrc = 0;
  uint64_t conflicts = 0;   // hellos for one link from two live senders (a node hosted twice)
  uint64_t own_hellos = 0;  // this daemon's own hellos came back (it is its own --peer)
};

struct TunnelLinkCounters {
  uint64_t sent = 0, received = 0;
  uint64_t gaps = 0;          // sequence numbers skipped on arrival (lost between the ends)
  uint64_t out_of_order = 0;  // arrived after a later sequence number
  uint64_t send_errors = 0;   // sendto failed (socket buffer full, no route)
  uint64_t not_up = 0;        // handed to Send while the link was down
  uint64_t flaps = 0;         // up -> down transitions
};

struct UdpAddress {
  sockaddr_in addr{};
  std::string ToString() const;
  bool operator==(const UdpAddress& o) const {
    return addr.sin_addr.s_addr == o.addr.sin_addr.s_addr && addr.sin_port == o.addr.sin_port;
  }
};
// "HOST:PORT" (HOST an IPv4 address or a name resolving to one, PORT 0..65535).
std::optional<UdpAddress> ParseUdpAddress(const std::string& text, std::string* error);

class UdpTunnel {
 public:
  static constexpr uint64_t kHelloIntervalNs = 100'000'000;
  // 1 s: a daemon's fabric thread under a sanitizer on a loaded machine can stall for a few
  // hundred milliseconds, and a false down takes every port on the cable down with it.
  static constexpr uint64_t kDeadIntervals = 10;

  // `deliver(link, packet)`: a checked packet for link `link`; `link_state(link, up)`: the
  // link came up (both ends hear each other) or went down. Both from inside Service.
  using Deliver = std::function<void(uint32_t link, std::span<const uint8_t> packet)>;
  using LinkState = std::function<void(uint32_t link, bool up)>;
  UdpTunnel(Deliver deliver, LinkState link_state);
  ~UdpTunnel();
  UdpTunnel(const UdpTunnel&) = delete;
  UdpTunnel& operator=(const UdpTunnel&) = delete;

  // Binds the socket (port 0: the kernel picks one, see port()).
  bool Bind(const UdpAddress& local, std::string* error);
  uint16_t port() const;
  int fd() const { return fd_; }
  // Where hellos go besides the senders heard from (at least one end names the other).
  void AddPeer(const UdpAddress& peer) { peers_.push_back(peer); }
  // A tunnel link; its index, or nullopt when the id is taken.
  std::optional<uint32_t> AddLink(uint64_t link_id);
  std::size_t num_links() const { return links_.size(); }

  // Reads every waiting datagram, sends the hellos that are due, takes down links whose peer
  // went quiet; returns when it next wants to run (nanoseconds, same clock as `now_ns`).
  uint64_t Service(uint64_t now_ns);
  // Sends a packet (LRH through VCRC) across link `link`.
  void Send(uint32_t link, std::span<const uint8_t> packet);
  // Takes the link down on purpose (the peer hears it at once) or lets it come up again.
  void SetEnabled(uint32_t link, bool enabled);

  bool up(uint32_t link) const { return links_.at(link).up; }
  bool enabled(uint32_t link) const { return links_.at(link).enabled; }
  uint64_t link_id(uint32_t link) const { return links_.at(link).id; }
  // The peer's address once heard ("" before).
  std::string peer(uint32_t link) const;
  const TunnelLinkCounters& counters(uint32_t link) const { return links_.at(link).counters; }
  const TunnelDrops& drops() const { return drops_; }
  uint64_t sender_id() const { return sender_id_; }

 private:
  struct Link {
    uint64_t id = 0;
    bool enabled = true;
    bool up = false;
    uint64_t heard_ns = 0;  // last hello from the peer (0: never, or forgotten)
    tunnel::HelloState peer_state = tunnel::HelloState::kPolling;
    uint64_t peer_sender = 0;
    std::optional<UdpAddress> peer;
    uint32_t tx_sequence = 0;
    std::optional<uint32_t> rx_sequence;  // last received
    TunnelLinkCounters counters;
  };

  void Receive(std::span<const uint8_t> datagram, const UdpAddress& from, uint64_t now_ns);
  void ReceivePacket(const tunnel::Header& header, std::span<const uint8_t> packet,
                     const UdpAddress& from);
  void ReceiveHello(const tunnel::Header& header, std::span<const uint8_t> body,
                    const UdpAddress& from, uint64_t now_ns);
  // The peer's hello is recent (as of now_ns_).
  bool Hears(const Link& link) const;
  // Brings the link up or down as the hellos say; tells link_state_ of a change.
  void Evaluate(uint32_t index);
  void SendHellos();
  void SendTo(const UdpAddress& to, std::span<const uint8_t> datagram, uint64_t* errors);

  Deliver deliver_;
  LinkState link_state_;
  int fd_ = -1;
  uint64_t sender_id_ = 0;
  uint64_t now_ns_ = 0;  // of the last Service
  uint32_t hello_sequence_ = 0;
  uint64_t next_hello_ns_ = 0;  // 0: at once
  std::vector<UdpAddress> peers_;
  std::vector<std::pair<UdpAddress, uint64_t>> heard_from_;  // senders and when last heard
  std::vector<Link> links_;
  std::unordered_map<uint64_t, uint32_t> by_id_;
  TunnelDrops drops_;
  uint64_t hello_send_errors_ = 0;
  std::vector<uint8_t> buffer_;
  std::vector<tunnel::HelloEntry> entries_;
};

}  // namespace softib::fabric
