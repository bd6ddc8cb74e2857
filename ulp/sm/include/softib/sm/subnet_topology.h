// The subnet as the SM found it, as a topology: what `softib-sm --dump-topology` writes in
// ibnetdiscover's format (GUIDs, node descriptions, the LIDs the SM assigned, the active
// width and speed of every link) — the inverse of SubnetFromTopology.
#pragma once

#include "fabric/topology/topology.h"
#include "softib/sm/subnet.h"

namespace softib::sm {

// Nodes in discovery order, named the way ibnetdiscover names them (S-/H-/R- and the GUID).
fabric::Topology TopologyFromSubnet(const Subnet& subnet);

}  // namespace softib::sm
