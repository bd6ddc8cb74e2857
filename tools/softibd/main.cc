// softibd: hosts one node — its emulated kernel, the HCA driver with its software HCAs
// and the Access Layer — and serves the AL device and each CA's device to user processes
// in the run directory (README.md). SIGTERM or SIGINT shuts it down in order: the servers
// close every file (the kernel cleans up what the processes owned), then the node unloads.
// A bad command line gets one "softibd: error: ..." line and exit code 2; a failure to
// start, exit code 1.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "device_servers.h"
#include "fabric_nodes.h"
#include "internal_sm.h"
#include "ipoib_node.h"
#include "options.h"
#include "run_dir.h"
#include "softib/al/access_layer.h"
#include "softib/sm/partitions.h"
#include "softib/stack/node_stack.h"

namespace softib::softibd {
namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "softibd: error: %s\n", message.c_str());
  return 1;
}

stack::NodeConfig ConfigOf(const Options& options) {
  stack::NodeConfig config;
  stack::CaConfig ca;
  ca.num_ports = static_cast<uint8_t>(options.ports);
  config.cas.assign(static_cast<size_t>(options.cas), ca);
  config.cable_pairs = options.cable;
  return config;
}

void SignalReady(const Options& options, const RunDir& run_dir) {
  std::printf("softibd: ready %s\n", run_dir.path().c_str());
  std::fflush(stdout);
  if (options.ready_fd >= 0) {
    static const char kReady[] = "ready\n";
    ssize_t written;
    do {
      written = write(options.ready_fd, kReady, sizeof kReady - 1);
    } while (written < 0 && errno == EINTR);
    close(options.ready_fd);
  }
}

// softibd's IPoIB control for each node (ipoib_node.h): `<dir>/ipoib.ctl`, and with --ipoib
// one interface each. False (with `error`) when a socket or an --ipoib interface fails.
using IpoibNodes = std::vector<std::unique_ptr<IpoibNode>>;
bool StartIpoib(const Options& options, kernel::Node* node, const std::string& label,
                const std::string& dir, IpoibNodes* nodes, std::string* error) {
  auto ipoib = std::make_unique<IpoibNode>();
  if (!ipoib->Start(node, label, dir, error)) return false;
  if (options.ipoib) {
    std::string name;
    if (std::string failed = ipoib->Up(IpoibUp{}, &name); !failed.empty()) {
      *error = "--ipoib: " + label + ": " + failed;
      return false;
    }
    std::printf("softibd: ipoib %s on %s (softib ipoib show --run-dir %s)\n", name.c_str(),
                label.c_str(), dir.c_str());
  }
  nodes->push_back(std::move(ipoib));
  return true;
}

// Every interface down (their TAPs gone), the drivers unloaded: before the nodes stop.
void StopIpoib(IpoibNodes* nodes) {
  for (auto& n : *nodes) n->Stop();
  nodes->clear();
}

// Waits for SIGTERM or SIGINT (blocked in every thread, see Run).
int WaitForStopSignal(const sigset_t& stop_signals) {
  for (;;) {
    int signal_number = 0;
    if (sigwait(&stop_signals, &signal_number) == 0) return signal_number;
  }
}

// --fabric: every CA of the topology a node, served in <run_dir>/<host>.
int RunFabric(const Options& options, const RunDir& run_dir, const sigset_t& stop_signals) {
  FabricNodes fabric;
  std::string error;
  const bool static_routes = options.sm == "static";
  sm::PartitionConfig partitions = sm::DefaultPartitionConfig();
  if (!options.sm_partitions.empty() &&
      !sm::LoadPartitions(options.sm_partitions, &partitions, &error)) {
    return Fail("--sm-partitions " + options.sm_partitions + ": " + error);
  }
  if (options.sm == "internal") fabric.SetSmHost(options.sm_host);
  fabric.SetSplit({options.hosts, options.part, options.listen, options.peers});
  fabric.SetLightHosts(options.light_hosts, options.full_hosts);
  if (!fabric.Start(options.fabric, run_dir.path(), static_routes, &error)) return Fail(error);
  if (!options.ibsim.empty()) {
    if (!fabric.ServeIbsim(options.ibsim, &error)) return Fail("--ibsim: " + error);
    std::printf("softibd: ibsim clients: IBSIM_SOCKNAME=%s ibsim-run <program>\n",
                options.ibsim.c_str());
  }
  std::printf("softibd: fabric %s: %zu switches, %zu hosts, %zu of them light (%s)\n",
              options.fabric.c_str(), fabric.num_switches(), fabric.hosts().size(),
              fabric.num_light_hosts(),
              static_routes      ? "LIDs and min-hop routes set through the switches' SMAs"
              : fabric.sm_host() ? "ports in Init, softib's SM inside softibd brings them up"
                                 : "ports in Init, waiting for a subnet manager");
  for (const FabricNodes::HostNode& h : fabric.hosts()) {
    if (!h.stack) continue;  // a light host: no node to attach to
    std::printf("softibd: node %s at %s/%s: CA %016" PRIx64 ", port 1 LID %u\n", h.name.c_str(),
                run_dir.path().c_str(), h.name.c_str(), h.guid, h.lid);
  }
  if (fabric.tunnel_port() != 0) {
    std::printf("softibd: tunnel udp port %u: %zu cables to other daemons (%s/tunnel.port)\n",
                fabric.tunnel_port(), fabric.num_tunnel_links(), run_dir.path().c_str());
  }
  std::printf("softibd: fabric control: softib fabric --run-dir %s links\n",
              run_dir.path().c_str());
  std::printf("%s", fabric.Describe().c_str());
  IpoibNodes ipoib;
  for (const FabricNodes::HostNode& h : fabric.hosts()) {
    if (!h.stack) continue;
    if (!StartIpoib(options, h.stack->node(), h.name, run_dir.path() + "/" + h.name, &ipoib,
                    &error)) {
      StopIpoib(&ipoib);
      return Fail(error);
    }
  }
  std::unique_ptr<InternalSm> sm;
  if (fabric.sm_host()) {
    const std::string summary = run_dir.path() + "/sm.summary";
    std::printf("softibd: internal SM at port 1 of %016" PRIx64 ", sweep summary in %s\n",
                fabric.sm_host()->guid(), summary.c_str());
    InternalSm::Options sm_options;
    sm_options.verify_lfts = options.sm_verify;
    sm_options.summary_path = summary;
    sm_options.partitions = partitions;
    sm = std::make_unique<InternalSm>(fabric.sm_host(), std::move(sm_options));
    sm->Start();
  }
  SignalReady(options, run_dir);
  const int signal_number = WaitForStopSignal(stop_signals);
  std::printf("softibd: %s, shutting down\n", strsignal(signal_number));
  std::fflush(stdout);
  StopIpoib(&ipoib);
  if (sm) sm->Stop();  // before the fabric: its port is a light host's
  fabric.Stop();
  std::printf("softibd: stopped\n");
  return 0;
}

int Run(const Options& options) {
  // Before any thread starts, so that every thread inherits the mask and only sigwait
  // sees the stop signals.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  RunDir run_dir;
  std::string error;
  if (!run_dir.Acquire(options.run_dir, &error)) return Fail(error);
  if (!options.pidfile.empty() && !run_dir.WritePidFile(options.pidfile, &error)) {
    return Fail(error);
  }

  if (!options.fabric.empty()) return RunFabric(options, run_dir, stop_signals);

  kernel::Status boot_status = kernel::Status::SUCCESS;
  std::unique_ptr<stack::NodeStack> node = stack::NodeStack::Boot(ConfigOf(options), &boot_status);
  if (!node) {
    return Fail("the node did not boot (status " +
                std::to_string(static_cast<uint32_t>(boot_status)) + ")");
  }
  {
    DeviceServers servers;
    if (!servers.Serve(node->node(), run_dir.path(), al::kAlDeviceName, &error)) {
      return Fail(error);
    }
    for (uint64_t guid : node->ca_guids()) {
      const std::string device = node->ca_device_name(guid);
      if (!servers.Serve(node->node(), run_dir.path(), device, &error)) return Fail(error);
      std::printf("softibd: CA %016" PRIx64 " at %s/%s\n", guid, run_dir.path().c_str(),
                  device.c_str());
    }
    IpoibNodes ipoib;
    if (!StartIpoib(options, node->node(), "node", run_dir.path(), &ipoib, &error)) {
      StopIpoib(&ipoib);
      servers.Stop();
      return Fail(error);
    }
    SignalReady(options, run_dir);

    const int signal_number = WaitForStopSignal(stop_signals);
    std::printf("softibd: %s, shutting down\n", strsignal(signal_number));
    std::fflush(stdout);
    StopIpoib(&ipoib);
    servers.Stop();
  }
  node.reset();
  std::printf("softibd: stopped\n");
  return 0;
}

}  // namespace
}  // namespace softib::softibd

int main(int argc, char** argv) {
  const softib::softibd::ParseResult parsed = softib::softibd::ParseCommandLine(argc, argv);
  if (parsed.kind == softib::softibd::ParseResult::Kind::kExit) return parsed.exit_code;
  return softib::softibd::Run(parsed.options);
}
