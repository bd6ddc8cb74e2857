// Test fabrics: switches programmed as an SM would (static_subnet.h: SubnSet through each
// switch's SMA), and software HCAs (hca/device) whose ports are cabled into the fabric.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "hca/device/hca.h"
#include "softib/fabric/fabric.h"

namespace softib::fabric::testing {

// static_subnet.h's programming, failing the test on a refusal.
void ProgramLft(Switch& sw, const std::map<uint16_t, uint8_t>& routes);
void ActivatePorts(Switch& sw);

// An HCA with one port in the fabric, LID preconfigured (the port is Active on link up).
struct Host {
  hca::Hca hca;
  uint32_t ca_port = 0;
};
std::unique_ptr<Host> AddHost(Fabric& fabric, uint16_t lid);

// A UD SEND from LID `slid` to `dlid` with 32 bytes of `fill` (the HCA's packet builder).
std::vector<uint8_t> UdPacket(uint16_t slid, uint16_t dlid, uint8_t fill);

}  // namespace softib::fabric::testing
