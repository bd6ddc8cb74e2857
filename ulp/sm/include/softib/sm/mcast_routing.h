// Multicast forwarding (IBA 14.2.5.8, 17.2.2): one spanning tree per MLID over the switches
// that reaches every member port, the way OpenSM builds it — rooted at the switch closest to
// all the members' switches, each switch joined to its parent by one link (parallel links and
// rings never close a loop), branches that lead to no member pruned. A switch forwards a
// packet of the MLID out of every port of its mask except the one it came in on, so a packet
// sent by any member reaches every other member exactly once.
//
// The switches hold the masks in MulticastForwardingTable blocks: 32 MLIDs by 16 ports each,
// AttributeModifier = port mask position (bits 31:28) | block number (bits 8:0). Only the
// blocks whose content changes are written. No I/O in the planning half.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "softib/sm/subnet.h"
#include "softib/sm/transactions.h"

namespace softib::sm {

inline constexpr unsigned kMftBlockMlids = 32;
inline constexpr unsigned kMftPortsPerPosition = 16;

struct McastTree {
  std::string error;                 // "" on success (no member: an empty tree)
  NodeId root = kNoNode;             // the tree's root switch
  std::map<NodeId, PortMask> masks;  // every switch on the tree
  bool ok() const { return error.empty(); }
};

// The tree for one group whose members are `members` (CA ports, or port 0 of a switch).
McastTree ComputeMcastTree(const Subnet& subnet, const std::vector<EndPort>& members);

// The MFT blocks of one switch that must be written to go from `programmed` to `desired`
// (MLID -> ports); `all`: every block a group of `desired` is in (a heavy sweep, when what
// the switch holds is not known).
struct MftBlock {
  uint32_t modifier = 0;  // position << 28 | block
  std::array<uint16_t, kMftBlockMlids> masks{};
};
std::vector<MftBlock> MftBlocksToWrite(uint8_t num_ports,
                                       const std::map<uint16_t, PortMask>& programmed,
                                       const std::map<uint16_t, PortMask>& desired, bool all);

struct McastReport {
  unsigned groups = 0;
  unsigned blocks = 0;  // MFT blocks written
  unsigned failed = 0;
  std::string first_error;
  bool ok() const { return failed == 0; }
};

// Computes the tree of every group (MLID -> members), and writes the blocks that changed at
// each switch (`all`: every block in use). The switches' `mft` records what they now hold.
McastReport ProgramMulticast(Transactions& tx, Subnet& subnet,
                             const std::map<uint16_t, std::vector<EndPort>>& groups, bool all);

}  // namespace softib::sm
