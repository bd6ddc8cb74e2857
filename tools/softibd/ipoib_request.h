// The requests of softibd's IPoIB control socket (ipoib_node.h), parsed and checked: what
// `softib ipoib up` sends as key=value arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "softib/ipoib/ipoib.h"

namespace softib::softibd {

// An `up` request, parsed and checked.
struct IpoibUp {
  std::string name;  // "": the first free ib<N>
  std::vector<uint8_t> ports = {1};
  uint16_t pkey = 0xFFFF;  // full-membership bit set
  ipoib::Mode mode = ipoib::Mode::kDatagram;
  ipoib::LbfoMode lbfo = ipoib::LbfoMode::kActiveStandby;  // with two ports
  bool failback = true;
  std::string netns;
  std::vector<std::string> addrs;
};
// key=value arguments (after "up") into `up`: "" when valid, else why not.
std::string ParseIpoibUp(const std::vector<std::string>& args, IpoibUp* up);
// "0x8001", "32769": the P_Key with the full-membership bit set; "" or the error.
std::string ParsePkey(const std::string& text, uint16_t* pkey);

}  // namespace softib::softibd
