// softibd's command line, with CLI11.
#include "options.h"

#include <fcntl.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "softib/user/access_layer.h"

namespace softib::softibd {

ParseResult ParseCommandLine(int argc, const char* const* argv) {
  ParseResult result;
  Options& options = result.options;
  CLI::App app{
      "softibd: hosts one softib node (its kernel and software HCAs) and serves its "
      "devices to user processes over Unix sockets in the run directory"};
  app.name("softibd");
  app.add_option("--run-dir", options.run_dir,
                 "directory of the devices' sockets (default: $SOFTIB_RUN_DIR, "
                 "$XDG_RUNTIME_DIR/softib or /tmp/softib-$UID)");
  app.add_option("--cas", options.cas, "software HCAs of the node")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  app.add_option("--ports", options.ports, "ports per HCA")
      ->check(CLI::Range(1, 2))
      ->capture_default_str();
  app.add_flag("!--no-cable", options.cable,
               "leave the ports unconnected (default: HCAs cabled back to back in pairs)");
  app.add_option("--ready-fd", options.ready_fd,
                 "file descriptor that gets \"ready\\n\" (then is closed) once every device "
                 "listens")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--pidfile", options.pidfile, "write the daemon's pid to this file");
  app.add_option("--fabric", options.fabric,
                 "host a fabric: \"default\", a topology preset (ft36, ...) or an ibnetdiscover "
                 "file; every CA is a node served in <run-dir>/<host name>, switches routed "
                 "with min-hop LFTs");
  app.add_option("--ibsim", options.ibsim,
                 "with --fabric: serve the fabric to programs run under ibsim-run, on the "
                 "sockets IBSIM_SOCKNAME=NAME names");
  app.add_option(
         "--sm", options.sm,
         "with --fabric: static (LIDs and min-hop routes set at start), external "
         "(ports wait in Init for a subnet manager: softib-sm --run-dir <run-dir>/<host>, or "
         "ibsim-run softib-sm with --ibsim) or internal (softib's SM runs inside softibd, at "
         "the --sm-host's port 1)")
      ->check(CLI::IsMember({"static", "external", "internal"}))
      ->capture_default_str();
  app.add_option("--sm-host", options.sm_host,
                 "with --sm internal: the host whose port 1 the SM uses (made a light host; "
                 "default: the first host)");
  app.add_flag("--sm-verify", options.sm_verify,
               "with --sm internal: read every LFT back from the switches before checking "
               "the routes (softib-sm --verify)");
  app.add_option("--sm-partitions", options.sm_partitions,
                 "with --sm internal: the SM's partition file (softib-sm --Pconfig's syntax): "
                 "P_Key tables and each ipoib partition's broadcast group");
  app.add_option("--hosts", options.hosts,
                 "with --fabric: host only these nodes (NodeDescription, its first word or node "
                 "id, comma-separated); cables to the rest are UDP tunnels to other softibds");
  app.add_option("--part", options.part,
                 "with --fabric: host part I of N (I/N): the switches in node order cut into N "
                 "runs, each CA with its switch")
      ->excludes("--hosts");
  app.add_option("--listen", options.listen,
                 "with --hosts/--part: the tunnel's UDP address, udp:HOST:PORT (port 0: any; "
                 "the port is written to <run-dir>/tunnel.port)");
  app.add_option("--peer", options.peers,
                 "with --hosts/--part: another softibd's tunnel address, udp:HOST:PORT "
                 "(repeatable; a daemon heard from is answered without one)");
  app.add_flag("--light-hosts", options.light_hosts,
               "with --fabric: hosts are light (their ports answer SMPs and PerfMgt MADs; no "
               "node, no devices served); automatic above " +
                   std::to_string(kAutoLightHosts) + " hosts");
  app.add_option("--full-hosts", options.full_hosts,
                 "with light hosts: these hosts (NAME,...) stay full nodes served in "
                 "<run-dir>/<NAME>")
      ->delimiter(',');
  app.add_flag("--ipoib", options.ipoib,
               "an IPoIB interface (TAP ib<N>, default partition, datagram mode) per node: the "
               "node, or each full host of --fabric; more with softib ipoib up --run-dir DIR");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return {ParseResult::Kind::kExit, 0, {}};
  } catch (const CLI::ParseError& e) {
    std::cerr << "softibd: error: " << e.what() << "\n";
    return {ParseResult::Kind::kExit, 2, {}};
  }
  if (options.ready_fd >= 0 && fcntl(options.ready_fd, F_GETFD) < 0) {
    std::cerr << "softibd: error: --ready-fd: " << options.ready_fd << " is not an open file\n";
    return {ParseResult::Kind::kExit, 2, {}};
  }
  if (options.sm != "static" && options.fabric.empty()) {
    std::cerr << "softibd: error: --sm " << options.sm << " needs --fabric\n";
    return {ParseResult::Kind::kExit, 2, {}};
  }
  if ((!options.sm_host.empty() || options.sm_verify || !options.sm_partitions.empty()) &&
      options.sm != "internal") {
    std::cerr << "softibd: error: --sm-host, --sm-verify and --sm-partitions need --sm "
                 "internal\n";
    return {ParseResult::Kind::kExit, 2, {}};
  }
  if (!options.ibsim.empty() && options.fabric.empty()) {
    std::cerr << "softibd: error: --ibsim needs --fabric\n";
    return {ParseResult::Kind::kExit, 2, {}};
  }
  const bool split = !options.hosts.empty() || !options.part.empty();
  if (split && options.fabric.empty()) {
    std::cerr << "softibd: error: --hosts/--part need --fabric\n";
    return {ParseResult::Kind::kExit, 2, {}};
  }
  if ((!options.listen.empty() || !options.peers.empty()) && !split) {
    std::cerr << "softibd: error: --listen/--peer need --hosts or --part (the nodes hosted here)\n";
    return {ParseResult::Kind::kExit, 2, {}};
  }
  if ((options.light_hosts || !options.full_hosts.empty()) && options.fabric.empty()) {
    std::cerr << "softibd: error: --light-hosts and --full-hosts need --fabric\n";
    return {ParseResult::Kind::kExit, 2, {}};
  }
  if (options.run_dir.empty()) options.run_dir = user::DefaultRunDir();
  return result;
}

}  // namespace softib::softibd
