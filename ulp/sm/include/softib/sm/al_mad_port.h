// The MadPort backend over softibd's Access Layer: a user process opens the AL of a node
// (its run directory), a CA and a port, takes the port's SMI and GSI aliases and registers
// MAD services on them — SMPs on QP0 (one service: directed-route 0x81 and LID-routed 0x01
// are one class to an AL agent), SubnAdm
// (0x03, version 2) with RMPP on QP1 — as IBAL's ib_reg_mad_svc does. The AL matches
// responses by TID, segments and reassembles RMPP transfers (windows, ACKs, retransmission),
// and its SMI applies the directed-route rules; the port's own SMA (HopCount 0) is asked by
// the LocalMad verb, whose answer comes back as a received MAD. With `issm`, the port's
// CapabilityMask.IsSM is set (ModifyCa) while the port is open — other SMs find this one by
// PortInfo, and the port's SMA tells the master by trap 144 — and cleared on close (the AL
// clears it as well when the process's file closes, if it dies).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "softib/sm/mad_port.h"

namespace softib::sm {

struct AlMadPortOptions {
  std::string run_dir;    // the node's directory ("": the default run directory)
  uint64_t ca_guid = 0;   // host order; 0 = the node's first CA
  int port = 0;           // 0 = the first active port, else port 1
  bool sm_agents = true;  // services for SMPs (Get/Set/Trap received unsolicited)
  bool sa_agent = true;   // a SubnAdm service (RMPP): a server's or a requester's
  bool sa_server = true;  // receive Get/Set/GetTable/Delete/GetMulti requests
  bool issm = true;       // with sm_agents: advertise IsSM on the port while open (an SM)
};

// What the port reports once open: where SA queries go.
struct AlPortInfo {
  uint16_t lid = 0;
  uint16_t sm_lid = 0;
  uint8_t port_num = 0;
  uint8_t link_state = 0;  // 1 Down .. 4 Active
};

// The largest RMPP transfer a user process moves through the channel: MAX_RMPP_DATA, less
// what the channel's 64 KiB frames leave after SendMad's and GetMadEvent's own structures.
std::size_t AlMaxRmppBytes();

// One GetMadEvent answer (GetMadEventOut, then the MAD; `bytes` of `output` filled): kOk
// with `out` filled (`transfer` too when RMPP or not 256 bytes), kTimeout for an event that
// holds no MAD (a send completion) or a runt, kError (and `error`) when the lengths disagree.
PortStatus DecodeMadEvent(std::span<const uint8_t> output, uint32_t bytes, ReceivedMad& out,
                          std::string* error);

// nullptr and a message in `error` when the node, CA or port cannot be opened or a service
// cannot be registered.
std::unique_ptr<MadPort> OpenAlMadPort(const AlMadPortOptions& options, std::string* error,
                                       AlPortInfo* info = nullptr);

}  // namespace softib::sm
