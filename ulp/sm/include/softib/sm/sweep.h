// What the SM asks between heavy sweeps, over directed routes it already knows: the light
// sweep (SwitchInfo of every switch for PortStateChange, PortInfo of every CA port it
// reached, for state and IsSM changes), the other SMs' SMInfo, a STANDBY's poll of the
// master, and the handover Set. Each runs its transactions to completion.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "softib/sm/sminfo.h"
#include "softib/sm/subnet.h"
#include "softib/sm/transactions.h"

namespace softib::sm {

struct LightSweepReport {
  unsigned state_changes = 0;  // switches with PortStateChange, CA ports whose state moved
  unsigned new_sms = 0;        // ports that now advertise IsSM and did not
  unsigned failures = 0;       // nodes that did not answer (gone: the topology changed)
  bool changed() const { return state_changes || new_sms || failures; }
};
LightSweepReport LightSweep(Transactions& tx, const Subnet& subnet);

// Another SM found on the subnet: where (the port advertising IsSM) and what it says.
struct PeerSm {
  NodeId node = kNoNode;
  uint8_t port = 0;
  std::vector<uint8_t> path;
  SmIdentity info;
};

// SMInfo Get to every port (other than ours) that advertises IsSM; ports that do not answer
// are left out. `sm_key` goes in the requests.
std::vector<PeerSm> QueryPeerSms(Transactions& tx, const Subnet& subnet, uint64_t sm_key);

// SMInfo Get to one SM (a STANDBY polling its master); nullopt when it does not answer.
std::optional<SmIdentity> GetSmInfo(Transactions& tx, const std::vector<uint8_t>& path,
                                    uint64_t sm_key);

// SMInfo Set with `modifier` (HANDOVER, ACKNOWLEDGE...) carrying `self`; true when the
// peer accepted it.
bool SetSmInfo(Transactions& tx, const std::vector<uint8_t>& path, uint32_t modifier,
               const SmIdentity& self, uint64_t sm_key);

}  // namespace softib::sm
