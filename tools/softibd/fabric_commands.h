// The requests of softibd's control socket (run_dir/fabric.ctl, `softib fabric`), carried
// out on the fabric's thread: list the cables with their state and counters, change a
// cable's faults, flap it, capture it.
//   links                          every cable: ends, state, counters, tunnel drops
//   set CABLE key=value ...        loss corrupt duplicate reorder (per mille), delay_us,
//                                  dir=both|a-b|b-a (default both)
//   down CABLE | up CABLE          a flap (a tunnel cable: the far daemon hears it too)
//   capture CABLE FILE             record what the cable carries ...
//   capture-stop CABLE             ... and write it to FILE (ERF, record type InfiniBand)
// (`remove HOST` and `add HOST` are FabricNodes', fabric_nodes_hotplug.cc.)
// CABLE: "NODE:PORT" for either end (NODE as fabric_part.h FindNode takes it) or the index
// `links` prints.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fabric/topology/topology.h"
#include "fabric_tunnels.h"
#include "softib/fabric/fabric_host.h"

namespace softib::softibd {

class FabricCommands {
 public:
  // `cable_of_link`: StaticSubnet::cable; `hosted`: per node, hosted by this daemon.
  FabricCommands(const fabric::Topology& topology, const std::vector<int64_t>& cable_of_link,
                 const std::vector<bool>& hosted, fabric::FabricHost& host, FabricTunnels& tunnels,
                 bool static_routes);
  // One request, on the host's thread: the whole answer, first line "ok" or "error: ...".
  std::string Execute(const std::vector<std::string>& args);
  // The cable of a hosted CA port whose CA was removed (down; a request to bring it up is
  // refused until then) or put back (up). On the host's thread; the answer as Execute's.
  std::string SetCaPresent(fabric::PortRef port, bool present);

 private:
  struct CableInfo {
    std::string end[2];  // "node:port"; end[1] of a tunnel cable is in the other daemon
    fabric::PortRef port[2];
  };
  std::optional<uint32_t> FindCable(const std::string& name, std::string* error) const;
  std::string Links() const;
  std::string Set(uint32_t cable, const std::vector<std::string>& settings);
  std::string Flap(uint32_t cable, bool up);
  std::string Capture(uint32_t cable, const std::string& file);
  std::string CaptureStop(uint32_t cable);

  const fabric::Topology& topology_;
  fabric::FabricHost& host_;
  FabricTunnels& tunnels_;
  bool static_routes_;
  std::vector<CableInfo> cables_;  // by fabric cable
  std::map<uint32_t, std::string> capture_files_;
  std::vector<uint32_t> absent_;  // cables of removed CAs
};

}  // namespace softib::softibd
