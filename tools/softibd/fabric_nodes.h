// softibd --fabric: a whole fabric in one daemon — the switches of a topology in a
// FabricHost (fabric/net), one node (runtime/stack) per CA with its ports plugged into the
// fabric's cables (following their link state: a flap takes the port Down), LIDs and
// min-hop LFTs programmed through the switches' SMAs (static_subnet.h) until softib's SM
// runs on it, and each node's devices served in
// <run_dir>/<host name>.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "control_socket.h"
#include "device_servers.h"
#include "fabric/topology/topology.h"
#include "fabric_commands.h"
#include "fabric_tunnels.h"
#include "softib/fabric/fabric_host.h"
#include "softib/fabric/ibsim_server.h"
#include "softib/fabric/light_host.h"
#include "softib/stack/node_stack.h"

namespace softib::softibd {

class FabricNodes {
 public:
  // A fabric spread over several daemons: what this one hosts and where the others are
  // (softibd --hosts/--part/--listen/--peer). Before Start; default: everything here.
  struct Split {
    std::string hosts, part, listen;
    std::vector<std::string> peers;
  };
  void SetSplit(Split split) { split_ = std::move(split); }

  // Loads `spec` ("default", a preset or a file), builds and starts everything, serves
  // the nodes; false with `error` set on failure. `static_routes`: LIDs, LFTs and active
  // ports set at once through the switches' SMAs; otherwise every port waits in Init for
  // a subnet manager (softib-sm or OpenSM under ibsim-run, see ServeIbsim).
  bool Start(const std::string& spec, const std::string& run_dir, bool static_routes,
             std::string* error);
  // Before Start: hosts are light (fabric/net light_host.h: ports only, no node, nothing
  // served) when `light` or the fabric has more than kAutoLightHosts hosts, except those
  // named in `full` (host names: the node directories).
  void SetLightHosts(bool light, std::vector<std::string> full) {
    light_ = light;
    full_ = std::move(full);
  }
  // Before Start: an SM inside softibd will use port 1 of host `name` ("": the first
  // host), which is therefore a light host whatever SetLightHosts says.
  void SetSmHost(std::string name) {
    want_sm_host_ = true;
    sm_host_name_ = std::move(name);
  }
  // After Start with SetSmHost: that host.
  fabric::LightHost* sm_host() const { return sm_host_; }
  // Serves the fabric to ibsim clients on the sockets `base_name` names (after Start).
  bool ServeIbsim(const std::string& base_name, std::string* error);
  // Servers first (the kernels clean up after the processes), then the fabric's thread,
  // then the nodes.
  void Stop();
  ~FabricNodes() { Stop(); }

  // The fabric as ibnetdiscover prints it, with the LIDs assigned.
  std::string Describe() const;
  struct HostNode {
    std::string name;  // directory under the run dir
    uint64_t guid = 0;
    uint16_t lid = 0;                          // port 1
    std::unique_ptr<stack::NodeStack> stack;   // a full node
    std::unique_ptr<fabric::LightHost> light;  // or a light host
    fabric::NodeIndex node = 0;
    stack::CaConfig ca;                                 // a full node's CA, as booted
    std::vector<std::pair<uint8_t, uint32_t>> plugged;  // port, FabricHost CA-port index
    bool removed = false;                               // the CA is out (RemoveHost)
  };
  std::size_t num_light_hosts() const;
  const std::vector<HostNode>& hosts() const { return hosts_; }
  std::size_t num_switches() const;  // hosted here
  // The UDP tunnel to the other daemons (0 and 0 without one).
  uint16_t tunnel_port() const { return tunnels_.port(); }
  std::size_t num_tunnel_links() const { return tunnels_.num_links(); }
  // The control socket (softib fabric --run-dir ...).
  static constexpr const char* kControlName = "fabric.ctl";

  // A full host's CA pulled out at run time (fabric_nodes_hotplug.cc): a surprise removal
  // in its node (CA_REMOVE to its clients, their calls fail with CA_REMOVED), then its
  // cables go down, so the switches and the SM see it go. AddHost puts the same CA back:
  // CA arrival, ports plugged again, cables up (the ports wait in Init for the SM, or come
  // up Active with their LIDs under static routes). PASSIVE, not on the fabric's thread.
  // The control socket's answer: "ok\n..." or "error: ...\n".
  std::string RemoveHost(const std::string& name);
  std::string AddHost(const std::string& name);

 private:
  // Makes `h` a light host of `node` (its LIDs from `first_lid`), cabled as the fabric says.
  void StartLight(const fabric::Node& node, fabric::NodeIndex index, uint16_t first_lid,
                  const std::map<std::pair<fabric::NodeIndex, uint8_t>, uint32_t>& host_port,
                  HostNode* h);
  struct CaPortRef {
    fabric::NodeIndex node;
    uint8_t port;
    uint32_t host_port;  // FabricHost CA-port index
    uint16_t lid;
  };
  // The control socket and the tunnel's port file (fabric_nodes_control.cc).
  bool StartControl(const std::string& run_dir, std::string* error);
  // Runs `request` on the fabric's thread and returns its answer (an error after 5 s).
  std::string OnFabricThread(std::function<std::string()> request);
  // Plugs a full host's CA port into the fabric and lets it follow its cable.
  kernel::Status PlugPort(HostNode& h, uint8_t port, uint32_t index);
  HostNode* FindHost(const std::string& name, std::string* error);

  fabric::Topology topology_;
  Split split_;
  std::vector<bool> hosted_;  // per topology node
  std::vector<CaPortRef> ca_ports_;
  std::unique_ptr<fabric::ibsim::SimServer> ibsim_;
  std::unique_ptr<fabric::FabricHost> host_;
  FabricTunnels tunnels_;
  std::unique_ptr<FabricCommands> commands_;
  ControlSocket control_;
  std::vector<HostNode> hosts_;
  DeviceServers servers_;
  bool started_ = false;
  bool light_ = false;
  std::vector<std::string> full_;
  bool want_sm_host_ = false;
  std::string sm_host_name_;
  fabric::LightHost* sm_host_ = nullptr;
};

}  // namespace softib::softibd
