// Discovery by directed-route SMPs, breadth-first with many SMPs in flight: NodeInfo on
// every path, then NodeDescription, SwitchInfo (PortStateChange cleared when set) and
// PortInfo of every switch port (and of each CA port the walk enters through); every linked
// switch port not yet explained leads one hop further. Nodes are identified by GUID, so
// parallel links and loops are recognised.
#pragma once

#include <cstdint>
#include <string>

#include "softib/sm/subnet.h"
#include "softib/sm/transactions.h"

namespace softib::sm {

struct DiscoveryReport {
  std::string error;             // "" unless the local node itself could not be read
  unsigned failed_requests = 0;  // SMPs that timed out or came back with a bad status
  bool ok() const { return error.empty(); }
};

DiscoveryReport Discover(Transactions& tx, Subnet& subnet);

}  // namespace softib::sm
