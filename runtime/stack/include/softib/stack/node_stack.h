// A booted node: the emulated kernel with the HCA driver and its software HCAs, the bus
// driver (one IPoIB PDO per port and one IOU PDO per CA; with NodeConfig::iou_driver, an IOU
// FDO over each IOU PDO and an IOC PDO per I/O controller) and the Access Layer, in the
// order a real host loads them (HCA driver first; unloaded in reverse). The composition root
// that softibd and the tests use (CONTRACT written by the lead; runtime/stack implements it
// and may add to it).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "softib/kernel/node.h"
#include "softib/kernel/status.h"

namespace softib::al {
class AccessLayer;
}
namespace softib::bus {
struct BusDriver;
}
namespace softib::hca {
class Link;
}

namespace softib::stack {

struct CaConfig {
  CaConfig() = default;
  CaConfig(uint64_t guid, uint8_t ports) : node_guid(guid), num_ports(ports) {}
  uint64_t node_guid = 0;  // host order; 0: derived from the node and the CA's index
  uint8_t num_ports = 1;
  uint16_t first_lid = 0;        // port p gets first_lid + p - 1; 0: derived from the CA's index
  std::string description;       // NodeDescription; "": the HCA's default
  bool sm_assigns_lids = false;  // no LIDs: the ports wait in Init for a subnet manager
};

struct NodeConfig {
  std::string name = "node0";
  std::vector<CaConfig> cas = {CaConfig{}, CaConfig{}};
  // Port 1 of CA i cabled to port 1 of CA i+1 (i even): the default node of the main job,
  // two HCAs back to back. The link comes up ACTIVE with LIDs assigned (no SM yet).
  bool cable_pairs = true;
  // The bus's IOU driver: an FDO over each CA's IOU PDO that registers with the AL for IOC
  // PnP events and enumerates an IOC PDO per I/O controller reached through that CA. Off by
  // default: its registration makes the AL sweep the subnet for I/O units (SA queries, trap
  // subscriptions, a poll every 10 s) and its AL file counts among the node's objects, which
  // the nodes that do not want IOCs need not carry.
  bool iou_driver = false;
};

class NodeStack {
 public:
  // Boots the node; nullptr and `status` on failure (nothing left running).
  static std::unique_ptr<NodeStack> Boot(const NodeConfig& config, kernel::Status* status);
  ~NodeStack();  // orderly shutdown: bus (and the ULPs over its PDOs), AL, HCAs, node

  kernel::Node* node();
  al::AccessLayer* access_layer();
  bus::BusDriver* bus();
  std::vector<uint64_t> ca_guids() const;  // host order
  // The device name a user process opens for the CA (the OpenCa redirect target).
  std::string ca_device_name(uint64_t ca_guid) const;

  // Surprise removal of a CA, as if the hardware vanished: its users' calls fail with
  // CA_REMOVED, they get the removal events, its bus PDOs are gone on return, nothing
  // leaks. PASSIVE.
  kernel::Status RemoveCa(uint64_t ca_guid);
  // Cables port_a of CA guid_a to port_b of CA guid_b (both ends ACTIVE: PORT_ACTIVE
  // events), or unplugs a port's cable (both ends DOWN: PORT_DOWN events). PASSIVE.
  kernel::Status CablePorts(uint64_t guid_a, uint8_t port_a, uint64_t guid_b, uint8_t port_b);
  kernel::Status UncablePort(uint64_t guid, uint8_t port);
  // The port's own SMA/PMA on a 256-byte MAD (hca_driver.h HcaLocalMad). Any thread.
  kernel::Status LocalMad(uint64_t guid, uint8_t port, std::span<const uint8_t, 256> request,
                          std::span<uint8_t, 256> response);
  // Plugs a port into a cable outside the node (a fabric's): it transmits into `out`, and
  // the fabric delivers into `*inbound` (hca_driver.h HcaPlugExternal). PASSIVE.
  kernel::Status PlugExternal(uint64_t guid, uint8_t port, hca::Link* out,
                              std::shared_ptr<hca::Link>* inbound);
  // That cable's link went down or trained again: the port goes DOWN (PORT_DOWN) or comes
  // back in INIT for the SM, or ACTIVE with its configured LID (hca_driver.h
  // HcaSetExternalLinkUp). PASSIVE, any thread.
  kernel::Status SetExternalLinkUp(uint64_t guid, uint8_t port, bool up);
  // Adds a CA at run time (arrival events; its bus PDOs exist on return). PASSIVE.
  kernel::Status AddCa(const CaConfig& config, uint64_t* ca_guid);

 private:
  NodeStack() = default;
  kernel::Status AddCaToDriver(const CaConfig& ca, const std::string& node_name, uint64_t* guid);
  // Until both the bus and the AL have taken CA `guid` in (or let it go).
  kernel::Status WaitForCa(uint64_t guid, bool present);
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace softib::stack
