// `softib ibat`: the IPoIB driver's address translation (IBAT) of a running softibd's node,
// through its IBAT device (<run-dir>/ibat; softib/user/ibat.h).
//   softib ibat ips --run-dir D [--port-guid G]      the interfaces' addresses
//   softib ibat resolve --run-dir D [--src IP] IP      how to reach IP: GIDs, P_Key, QPN, MAC
//                                                      and the path (asks again while the
//                                                      driver resolves, up to --wait-ms)
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace softib::ibattool {

struct IbatCli {
  CLI::App* ibat = nullptr;
  CLI::App* ips = nullptr;
  CLI::App* resolve = nullptr;
  std::string run_dir;
  uint64_t port_guid = 0;
  std::string src;
  std::string dst;
  int wait_ms = 5000;
};

void AddIbatCommand(CLI::App& app, IbatCli& cli);

// 0: done; 1: no IBAT device at the run directory, or a request failed; 2: bad input;
// 3: the address did not resolve (NOT_FOUND, TIMEOUT, still pending at the deadline).
int RunIbatCommand(const IbatCli& cli);

}  // namespace softib::ibattool
