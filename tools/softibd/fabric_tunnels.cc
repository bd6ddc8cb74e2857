#include "fabric_tunnels.h"

#include <cstdio>

namespace softib::softibd {

namespace {

std::optional<fabric::UdpAddress> ParseUdp(const std::string& option, const std::string& text,
                                           std::string* error) {
  if (text.rfind("udp:", 0) != 0) {
    *error = option + " " + text + ": not udp:HOST:PORT";
    return std::nullopt;
  }
  auto address = fabric::ParseUdpAddress(text.substr(4), error);
  if (!address) *error = option + " " + text + ": " + *error;
  return address;
}

}  // namespace

// What the stand-in port receives from the fabric goes into the tunnel (on the host's
// thread, which is the only one that touches the tunnel).
class FabricTunnels::SendLink final : public hca::Link {
 public:
  SendLink(FabricTunnels* owner, uint32_t link) : owner_(owner), link_(link) {}
  std::vector<uint8_t> Transmit(std::vector<uint8_t> packet) override {
    owner_->tunnel_->Send(link_, packet);
    packet.clear();
    return packet;  // the buffer, for the next packet
  }

 private:
  FabricTunnels* owner_;
  uint32_t link_;
};

bool FabricTunnels::Prepare(const fabric::Topology& topology, const std::vector<bool>& hosted,
                            fabric::FabricHost& host, const std::string& listen,
                            const std::vector<std::string>& peers, std::string* error) {
  host_ = &host;
  std::vector<std::size_t> crossing;
  for (std::size_t l = 0; l < topology.links().size(); ++l) {
    const fabric::Link& link = topology.links()[l];
    if (hosted[link.a.node] != hosted[link.b.node]) crossing.push_back(l);
  }
  if (crossing.empty() && listen.empty() && peers.empty()) return true;
  if (!crossing.empty() && listen.empty() && peers.empty()) {
    *error = std::to_string(crossing.size()) +
             " cables lead to nodes hosted elsewhere: give --listen and/or --peer";
    return false;
  }
  tunnel_ = std::make_unique<fabric::UdpTunnel>(
      [this](uint32_t link, std::span<const uint8_t> packet) {
        (void)host_->ca_link(links_[link].host_port)
            .Transmit(std::vector<uint8_t>(packet.begin(), packet.end()));
      },
      // Hellos decide the cable's state; both ends' ports hear it as with any flap. (Only
      // from Service, which runs after Attach has filled in the cables.)
      [this](uint32_t link, bool up) {
        const uint32_t cable = links_[link].cable;
        host_->With([&](fabric::Fabric& f) {
          f.SetCableUp(cable, up);
          if (!up || !static_routes_) return;
          if (std::string e = fabric::ReactivateCable(f, cable); !e.empty())
            std::fprintf(stderr, "softibd: tunnel cable %u: %s\n", cable, e.c_str());
        });
      });
  std::optional<fabric::UdpAddress> local =
      ParseUdp("--listen", listen.empty() ? "udp:0.0.0.0:0" : listen, error);
  if (!local || !tunnel_->Bind(*local, error)) {
    if (local) *error = "--listen: " + *error;
    return false;
  }
  for (const std::string& text : peers) {
    const auto peer = ParseUdp("--peer", text, error);
    if (!peer) return false;
    tunnel_->AddPeer(*peer);
  }
  for (std::size_t l : crossing) {
    const fabric::Link& link = topology.links()[l];
    const uint64_t id = fabric::tunnel::LinkId(topology.node(link.a.node).guid, link.a.port,
                                               topology.node(link.b.node).guid, link.b.port);
    const auto index = tunnel_->AddLink(id);
    if (!index) {
      *error = "two cables share tunnel link id " + std::to_string(id) + " (duplicate GUIDs?)";
      return false;
    }
    const uint32_t port = host.AddCaPort();
    host.SetInbound(port, std::make_shared<SendLink>(this, *index));
    links_.push_back({l, port, 0});
    by_topology_[l] = *index;
  }
  return true;
}

fabric::CableEnd FabricTunnels::FarEnd(std::size_t link) const {
  const TunnelLink& t = links_.at(by_topology_.at(link));
  return {fabric::CableEnd::Kind::kCaPort, host_->fabric_port_locked(t.host_port), 0};
}

void FabricTunnels::Attach(const fabric::StaticSubnet& subnet, bool static_routes) {
  if (!tunnel_) return;
  for (uint32_t i = 0; i < links_.size(); ++i) {
    links_[i].cable = static_cast<uint32_t>(subnet.cable.at(links_[i].topology_link));
    by_cable_[links_[i].cable] = i;
  }
  static_routes_ = static_routes;
  fabric::UdpTunnel* tunnel = tunnel_.get();
  host_->AddSource(tunnel->fd(), [tunnel, warned = false](uint64_t now) mutable {
    const uint64_t next = tunnel->Service(now);
    if (!warned && tunnel->drops().conflicts != 0) {
      // Two daemons answer for the far end of one cable: a node hosted twice.
      std::fprintf(stderr,
                   "softibd: warning: two daemons claim the far end of one tunnel cable (a "
                   "node hosted twice?); `softib fabric links` counts the conflicts\n");
      warned = true;
    }
    return next;
  });
}

std::optional<uint32_t> FabricTunnels::LinkOfCable(uint32_t cable) const {
  const auto found = by_cable_.find(cable);
  if (found == by_cable_.end()) return std::nullopt;
  return found->second;
}

}  // namespace softib::softibd
