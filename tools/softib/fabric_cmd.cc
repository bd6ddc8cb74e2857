#include "fabric_cmd.h"

#include <filesystem>

#include "control_client.h"

namespace softib::fabrictool {

namespace {

constexpr int kTimeoutMs = 30000;  // a host's removal waits for its node's clients

}  // namespace

void AddFabricCommand(CLI::App& app, FabricCli& cli) {
  cli.fabric = app.add_subcommand(
      "fabric",
      "a running softibd's fabric: links | set CABLE key=value... | down CABLE | up CABLE | "
      "capture CABLE FILE | capture-stop CABLE | remove HOST | add HOST (CABLE: NODE:PORT or "
      "the index links prints; HOST: a full host's name, its CA pulled out or put back)");
  cli.fabric->add_option("--run-dir", cli.run_dir, "the softibd's run directory")->required();
  cli.fabric->add_option("request", cli.request, "the request and its arguments")->required();
}

int RunFabricCommand(const FabricCli& cli) {
  std::vector<std::string> request = cli.request;
  // The daemon writes the capture; a relative name means the caller's directory.
  if (request.size() == 3 && request[0] == "capture")
    request[2] = std::filesystem::absolute(request[2]).lexically_normal().string();
  return tool::ControlRequest(cli.run_dir + "/fabric.ctl", request, "softibd --fabric", kTimeoutMs);
}

}  // namespace softib::fabrictool
