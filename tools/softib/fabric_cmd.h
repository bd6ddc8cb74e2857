// `softib fabric`: talks to a running softibd's fabric through its control socket
// (<run-dir>/fabric.ctl; tools/softibd/fabric_commands.h lists the requests).
//   softib fabric --run-dir D links
//   softib fabric --run-dir D set CABLE loss=N corrupt=N duplicate=N reorder=N delay_us=N [dir=a-b]
//   softib fabric --run-dir D down|up CABLE
//   softib fabric --run-dir D capture CABLE FILE | capture-stop CABLE
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace softib::fabrictool {

struct FabricCli {
  std::string run_dir;
  std::vector<std::string> request;
  CLI::App* fabric = nullptr;
};

void AddFabricCommand(CLI::App& app, FabricCli& cli);

// 0: the daemon answered ok (its text on stdout); 1: no daemon answered; 2: the request
// was refused (the daemon's reason on stderr).
int RunFabricCommand(const FabricCli& cli);

}  // namespace softib::fabrictool
