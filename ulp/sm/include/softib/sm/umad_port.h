// The libibumad backend of MadPort: umad_open_port on a CA port, one agent for directed-route
// SMPs (class 0x81) and one for LID-routed SMPs (class 0x01), one for SubnAdm (0x03), and the
// port's issm device held open so that the port advertises IsSM. Under ibsim-run (libumad2sim
// preloaded) the same calls reach ibsim's fabric.
#pragma once

#include <memory>
#include <string>

#include "softib/sm/mad_port.h"

namespace softib::sm {

struct UmadPortOptions {
  std::string ca;    // "" = the first CA
  int port = 0;      // 0 = the first active (or any) port
  bool issm = true;  // open the issm device (sets CapabilityMask.IsSM while held)
  // Agents for SMPs (classes 0x81, 0x01) receiving Get/Set/Trap: the SM's.
  bool sm_agents = true;
  // An agent for class 0x03 (SubnAdm, version 2): receiving Get/Set/GetTable/Delete/GetMulti
  // requests when `sa_server` (the SA), or only the answers to its own requests.
  bool sa_agent = true;
  bool sa_server = true;
};

// The port's SM LID as the device reports it (0 if unknown): where SA queries go.
uint16_t UmadSmLid(const UmadPortOptions& options);

// nullptr and a message in `error` when the port cannot be opened.
std::unique_ptr<MadPort> OpenUmadPort(const UmadPortOptions& options, std::string* error);

}  // namespace softib::sm
