// softibd's command line.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace softib::softibd {

struct Options {
  std::string run_dir;  // where the devices' sockets go
  int cas = 2;          // software HCAs of the node
  int ports = 1;        // ports per CA
  bool cable = true;    // port 1 of CA 2i cabled to port 1 of CA 2i+1
  int ready_fd = -1;    // gets "ready\n" once every device listens
  std::string pidfile;
  // Non-empty: host a whole fabric instead of one node — "default", a preset name
  // (softib topology preset) or an ibnetdiscover file; one node per CA, each in
  // <run_dir>/<host name>.
  std::string fabric;
  // With --fabric: also serve the fabric to ibsim clients (programs under ibsim-run) on
  // the abstract sockets "<ibsim>:ctl", "<ibsim>:out0".. (what IBSIM_SOCKNAME names).
  std::string ibsim;
  // With --fabric: "static" (LIDs and min-hop LFTs set at start), "external" (every
  // port waits in Init for a subnet manager run under ibsim-run) or "internal" (softib's
  // SM runs inside softibd at port 1 of `sm_host`, a light host: internal_sm.h).
  std::string sm = "static";
  std::string sm_host;     // "": the first host
  bool sm_verify = false;  // the internal SM reads the LFTs back before checking routes
  // With --sm internal: the SM's partition file (softib-sm --Pconfig's syntax, ulp/sm
  // README); "": every port gets only the default partition.
  std::string sm_partitions;
  // With --fabric, when the fabric spans several daemons: the nodes this one hosts
  // (--hosts NAME,... or --part I/N), its UDP tunnel address (--listen udp:HOST:PORT) and
  // the daemons it greets (--peer udp:HOST:PORT, repeatable). fabric_part.h, fabric_tunnels.h.
  std::string hosts;
  std::string part;
  std::string listen;
  std::vector<std::string> peers;
  // With --fabric: hosts are light (hca/device ports answering SMPs and PerfMgt MADs, no
  // node: fabric/net light_host.h) instead of full nodes; automatic above
  // kAutoLightHosts hosts. `full_hosts` keeps the hosts named there full nodes.
  bool light_hosts = false;
  std::vector<std::string> full_hosts;
  // An IPoIB interface (ib<N>, the default partition, datagram mode, in softibd's network
  // namespace) per node: the node, or each full host of --fabric (ipoib_node.h).
  bool ipoib = false;
};

// Fabrics with more hosts than this get light hosts without --light-hosts: a full node
// per host (kernel, AL, DPC thread, device servers) does not scale to thousands.
inline constexpr std::size_t kAutoLightHosts = 1024;

struct ParseResult {
  enum class Kind { kRun, kExit } kind = Kind::kRun;
  int exit_code = 0;  // for kExit: 0 after --help, 2 after a bad command line
  Options options;
};

// Parses argv. --help prints the usage to stdout; a bad command line prints one
// "softibd: error: ..." line to stderr. Both then ask to exit.
ParseResult ParseCommandLine(int argc, const char* const* argv);

}  // namespace softib::softibd
