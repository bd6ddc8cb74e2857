#include "ipoib_cmd.h"

#include <sys/stat.h>
#include <unistd.h>

#include <iostream>

#include "control_client.h"
#include "softib/ipoib/link_config.h"

namespace softib::ipoibtool {

namespace {

constexpr int kTimeoutMs = 30000;  // up waits for the driver's QP and buffers, and ip

int BadInput(const std::string& message) {
  std::cerr << "softib: error: " << message << "\n";
  return 2;
}

// The P_Key as the user wrote it, checked as the daemon will (16 bits, partition number
// not 0): "" or why not.
std::string CheckPkey(const std::string& text) {
  try {
    size_t used = 0;
    const unsigned long value = std::stoul(text, &used, 0);
    if (used == text.size() && value <= 0xFFFF && (value & 0x7FFF) != 0) return "";
  } catch (const std::exception&) {
  }
  return "bad --pkey \"" + text +
         "\" (16 bits with a partition number other than 0, e.g. 0x8001; 0xffff: the default "
         "partition)";
}

}  // namespace

void AddIpoibCommand(CLI::App& app, IpoibCli& cli) {
  cli.ipoib = app.add_subcommand(
      "ipoib", "IPoIB interfaces (TAP devices) of a running softibd's node: up | down | show");
  cli.ipoib->require_subcommand(1);
  const char* run_dir_help =
      "the node's directory: softibd's run directory, or <run-dir>/<host> of softibd --fabric";
  cli.up = cli.ipoib->add_subcommand("up", "create an interface (needs root)");
  cli.up->add_option("--run-dir", cli.run_dir, run_dir_help)->required();
  auto* port =
      cli.up->add_option("--port", cli.port, "the port (default 1)")->check(CLI::Range(1, 2));
  cli.up->add_option("--ports", cli.ports, "two ports: one interface over both (LBFO), e.g. 1,2")
      ->delimiter(',')
      ->check(CLI::Range(1, 2))
      ->excludes(port);
  cli.up->add_option("--pkey", cli.pkey, "the partition (default 0xffff)");
  cli.up->add_option("--mode", cli.mode, "datagram (default) or connected")
      ->check(CLI::IsMember({"datagram", "connected"}));
  cli.up
      ->add_option("--lbfo", cli.lbfo,
                   "with --ports: active-standby (default) or balance (transmit spread by flow)")
      ->check(CLI::IsMember({"active-standby", "balance"}));
  cli.up
      ->add_option("--failback", cli.failback,
                   "with --ports: on (default: back to the first port when it returns) or off")
      ->check(CLI::IsMember({"on", "off"}));
  cli.up->add_option("--name", cli.name, "the interface's name (default: the first free ib<N>)");
  cli.up->add_option("--netns", cli.netns, "move it into this network namespace (ip netns add)");
  cli.up->add_option("--addr", cli.addrs, "an address A/LEN, IPv4 or IPv6 (repeatable)");
  cli.down = cli.ipoib->add_subcommand("down", "destroy an interface (its TAP goes)");
  cli.down->add_option("--run-dir", cli.run_dir, run_dir_help)->required();
  cli.down->add_option("name", cli.name, "the interface")->required();
  cli.show = cli.ipoib->add_subcommand(
      "show", "mode, MTU, QPN, GID, MAC, LID, carrier, groups, neighbours, counters");
  cli.show->add_option("--run-dir", cli.run_dir, run_dir_help)->required();
  cli.show->add_option("name", cli.name, "one interface (default: all of the node)");
}

int RunIpoibCommand(const IpoibCli& cli) {
  if ((cli.up->parsed() || cli.down->parsed()) && geteuid() != 0) {
    return BadInput(std::string("softib ipoib ") + (cli.up->parsed() ? "up" : "down") +
                    " needs root (TAP devices and network namespaces)");
  }
  struct stat st {};
  if (stat(cli.run_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return BadInput("no such node directory " + cli.run_dir +
                    " (softibd's run directory, or <run-dir>/<host> with --fabric)");
  std::vector<std::string> request;
  if (cli.up->parsed()) {
    request = {"up"};
    if (!cli.name.empty()) request.push_back("name=" + cli.name);
    if (cli.port != 0) request.push_back("ports=" + std::to_string(cli.port));
    if (!cli.ports.empty()) {
      std::string list;
      for (int p : cli.ports) list += (list.empty() ? "" : ",") + std::to_string(p);
      request.push_back("ports=" + list);
    }
    if (!cli.pkey.empty()) {
      if (std::string bad = CheckPkey(cli.pkey); !bad.empty()) return BadInput(bad);
      request.push_back("pkey=" + cli.pkey);
    }
    if (!cli.mode.empty()) request.push_back("mode=" + cli.mode);
    if (!cli.lbfo.empty()) request.push_back("lbfo=" + cli.lbfo);
    if (!cli.failback.empty()) request.push_back("failback=" + cli.failback);
    if (!cli.netns.empty()) {
      if (!ipoib::link::NetnsExists(cli.netns))
        return BadInput("network namespace \"" + cli.netns + "\" does not exist (ip netns add " +
                        cli.netns + ")");
      request.push_back("netns=" + cli.netns);
    }
    for (const std::string& a : cli.addrs) {
      if (std::string bad = ipoib::link::CheckCidr(a); !bad.empty())
        return BadInput("--addr: " + bad);
      request.push_back("addr=" + a);
    }
  } else if (cli.down->parsed()) {
    request = {"down", cli.name};
  } else {
    request = {"show"};
    if (!cli.name.empty()) request.push_back(cli.name);
  }
  return tool::ControlRequest(cli.run_dir + "/ipoib.ctl", request, "softibd", kTimeoutMs);
}

}  // namespace softib::ipoibtool
