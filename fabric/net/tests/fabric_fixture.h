// Test fabrics: switches programmed the way an SM would (SubnSet through each switch's SMA:
// SwitchInfo.LinearFDBTop, LinearForwardingTable blocks, PortInfo Init -> Armed -> Active),
// and software HCAs (hca/device) whose ports are cabled into the fabric.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "hca/device/hca.h"
#include "softib/fabric/fabric.h"

namespace softib::fabric::testing {

// The switch's SMA answers `method` on `attribute`/`modifier` with `data` (64 bytes);
// returns the response's data, failing the test on a non-zero status.
std::array<uint8_t, 64> SmaCall(Switch& sw, uint8_t method, uint16_t attribute, uint32_t modifier,
                                const std::array<uint8_t, 64>& data);
// LFT entries lid -> port for every LID in `routes`, LinearFDBTop = the highest LID.
void ProgramLft(Switch& sw, const std::map<uint16_t, uint8_t>& routes);
// Every cabled port of the switch to Active (through Armed), as an SM's last sweep does.
void ActivatePorts(Switch& sw);

// An HCA with one port in the fabric, LID preconfigured (the port is Active on link up).
struct Host {
  hca::Hca hca;
  uint32_t ca_port = 0;
};
std::unique_ptr<Host> AddHost(Fabric& fabric, uint16_t lid);

}  // namespace softib::fabric::testing
