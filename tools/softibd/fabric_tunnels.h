// The tunnel cables of a softibd that hosts part of a fabric: every topology link with one
// end hosted here becomes a fabric cable from that end to a stand-in CA port, fed by a UDP
// tunnel (fabric/net udp_tunnel.h) whose socket the FabricHost's thread polls. The link
// comes up when the daemon hosting the far end answers the hellos.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fabric/topology/topology.h"
#include "softib/fabric/fabric_host.h"
#include "softib/fabric/static_subnet.h"
#include "softib/fabric/udp_tunnel.h"

namespace softib::softibd {

class FabricTunnels {
 public:
  // Before the subnet is built: a tunnel link and a stand-in port in `host` for every link
  // of `topology` that crosses `hosted`; binds `listen` ("udp:HOST:PORT", "" for an
  // ephemeral port on every address) and greets `peers` ("udp:HOST:PORT"). False with
  // `error` on a bad address, a failed bind, or tunnel links with neither --listen nor --peer.
  bool Prepare(const fabric::Topology& topology, const std::vector<bool>& hosted,
               fabric::FabricHost& host, const std::string& listen,
               const std::vector<std::string>& peers, std::string* error);
  // The stand-in end of topology link `link` (inside host.With, as SubnetPart::far_end).
  fabric::CableEnd FarEnd(std::size_t link) const;
  // After the subnet is built: learns the cables and hands the socket to the host's thread.
  // `static_routes`: a cable that comes up gets its switch ports activated again.
  void Attach(const fabric::StaticSubnet& subnet, bool static_routes);

  bool active() const { return tunnel_ != nullptr; }
  uint16_t port() const { return tunnel_ ? tunnel_->port() : 0; }
  std::size_t num_links() const { return links_.size(); }
  // The tunnel and its link index for a fabric cable (on the host's thread only).
  const fabric::UdpTunnel* tunnel() const { return tunnel_.get(); }
  std::optional<uint32_t> LinkOfCable(uint32_t cable) const;
  void SetEnabled(uint32_t link, bool enabled) { tunnel_->SetEnabled(link, enabled); }

 private:
  struct TunnelLink {
    std::size_t topology_link = 0;
    uint32_t host_port = 0;  // FabricHost CA-port index of the stand-in
    uint32_t cable = 0;
  };
  class SendLink;
  fabric::FabricHost* host_ = nullptr;
  bool static_routes_ = false;
  std::unique_ptr<fabric::UdpTunnel> tunnel_;
  std::vector<TunnelLink> links_;                // by tunnel link index
  std::map<std::size_t, uint32_t> by_topology_;  // topology link -> tunnel link
  std::map<uint32_t, uint32_t> by_cable_;        // fabric cable -> tunnel link
};

}  // namespace softib::softibd
