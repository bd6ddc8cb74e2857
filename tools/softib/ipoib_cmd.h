// `softib ipoib`: IPoIB interfaces held by a running softibd, through the node's control
// socket (<run-dir>/ipoib.ctl; tools/softibd/ipoib_node.h lists the requests).
//   softib ipoib up --run-dir <run-dir>[/<host>] [--port N | --ports 1,2] [--pkey 0x8001]
//                   [--mode datagram|connected] [--lbfo active-standby|balance] [--failback on|off]
//                   [--name IF] [--netns NS] [--addr A/LEN]...
//   softib ipoib down --run-dir D NAME
//   softib ipoib show --run-dir D [NAME]
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace softib::ipoibtool {

struct IpoibCli {
  CLI::App* ipoib = nullptr;
  CLI::App* up = nullptr;
  CLI::App* down = nullptr;
  CLI::App* show = nullptr;
  std::string run_dir;
  int port = 0;
  std::vector<int> ports;
  std::string pkey, mode, name, netns;
  std::string lbfo, failback;  // with --ports: active-standby|balance, on|off
  std::vector<std::string> addrs;
};

void AddIpoibCommand(CLI::App& app, IpoibCli& cli);

// 0: done (the daemon's text on stdout); 1: no daemon answered; 2: bad input or refused.
int RunIpoibCommand(const IpoibCli& cli);

}  // namespace softib::ipoibtool
