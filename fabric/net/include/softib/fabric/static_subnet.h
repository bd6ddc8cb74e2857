// What an SM's first sweep leaves behind, done directly from a topology: switches built
// into a Fabric, LIDs assigned, min-hop LFTs programmed and every cabled port activated
// through each switch's own SMA (SubnSet, as an SM would send them). It lets a fabric carry
// traffic before softib's SM runs on it; the SM (ulp/sm) does the same by discovery.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fabric/topology/topology.h"
#include "softib/fabric/fabric.h"

namespace softib::fabric {

// A SubnSet/SubnGet answered by the switch's SMA; returns the MAD status (0: success)
// and the response data in `data`.
uint16_t SmaSetOrGet(Switch& sw, uint8_t method, uint16_t attribute, uint32_t modifier,
                     std::array<uint8_t, 64>* data);
// LFT entries lid -> port, LinearFDBTop = the highest LID. "" or what the SMA refused.
std::string ProgramLft(Switch& sw, const std::map<uint16_t, uint8_t>& routes);
// Every cabled port Init -> Armed -> Active; ports already Active stay.
std::string ActivatePorts(Switch& sw);
// After a cable came back up without an SM (static routes): its switch ends' ports
// Init -> Active again, as the static subnet left them.
std::string ReactivateCable(Fabric& fabric, uint32_t cable);
// The switch's own LID (PortInfo of port 0).
std::string SetSwitchLid(Switch& sw, uint16_t lid);

struct StaticSubnet {
  // Per topology node: the switch index in the fabric (switches), or -1.
  std::vector<int32_t> switch_index;
  // Per topology node and port: the LID (switch: ports[0]; CA: every port), 0 none.
  std::vector<std::vector<uint16_t>> lid;
  // Per topology node and port: the fabric CA-port index of a CA port, or -1.
  std::vector<std::vector<int32_t>> ca_port;
  // Per topology link: the fabric cable, or -1 when neither end is hosted here.
  std::vector<int64_t> cable;
};

// The part of a topology one softibd hosts; the cables to the rest are tunnel cables.
struct SubnetPart {
  std::vector<bool> owned;  // per topology node
  // The fabric end standing in for the far side of topology link `link`, whose other end
  // is hosted elsewhere (a CA port the caller feeds from a UDP tunnel).
  std::function<CableEnd(std::size_t link)> far_end;
};

// Creates the fabric CA port for `node`/`port` (its LID given): the caller's HCA port.
using CaPortFactory = std::function<uint32_t(NodeIndex node, uint8_t port, uint16_t lid)>;

// Builds `topology` (validated) into `fabric`: its switches, a CA port from `make_ca_port`
// for each cabled CA port, the cables, LIDs 1.. in node order (switch port 0; every port
// of a CA, consecutively), min-hop LFTs (ties spread by destination LID) and active ports. Returns
// "" or what went wrong.
// With `program` false only the switches, CA ports and cables are built: the LIDs are
// still computed (for the caller's records) but nothing is programmed, and every port
// waits in Init for a subnet manager.
// With `part`, only its owned nodes are built (LIDs and routes still come from the whole
// topology, so every daemon computes the same); a link with one owned end becomes a cable
// from that end (side 0) to part->far_end, and starts down: the tunnel brings it up.
std::string BuildStaticSubnet(const Topology& topology, Fabric& fabric,
                              const CaPortFactory& make_ca_port, StaticSubnet* out,
                              bool program = true, const SubnetPart* part = nullptr);

}  // namespace softib::fabric
