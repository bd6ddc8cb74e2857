// Programming what the SM decided, the way OpenSM brings a subnet up: PortInfo Set of every
// end port's LID/LMC/MasterSMLID/GIDPrefix (with NeighborMTU and OperationalVLs agreed with
// the peer), SwitchInfo Set (LinearFDBTop, PortStateChange cleared) and the LFT blocks (64
// entries each), then every linked port INIT -> ARMED, then ARMED -> ACTIVE. Ports already
// further along (a fabric configured before) skip the steps they have done.
#pragma once

#include <cstdint>
#include <string>

#include "softib/sm/subnet.h"
#include "softib/sm/transactions.h"

namespace softib::sm {

struct ConfigureReport {
  unsigned lid_sets = 0;
  unsigned switch_info_sets = 0;
  unsigned lft_blocks = 0;
  unsigned lft_blocks_by_lid = 0;  // of lft_blocks, LID-routed
  unsigned armed = 0;
  unsigned activated = 0;
  unsigned failed = 0;  // Sets that timed out or were refused
  std::string first_failure;
  bool ok() const { return failed == 0; }
};

enum class ConfigurePhase : uint8_t { kLids, kForwarding, kArm, kActivate };
const char* ToString(ConfigurePhase phase);

struct ConfigureOptions {
  // softib's own fabric: the LFT blocks (ConfigurePhase::kForwarding), Arm and Activate Sets
  // go LID-routed to nodes with a LID, and a CA port in Init is armed by its LID Set (IBA
  // 14.2.5.6: the SMA applies a PortInfo Set's LID with its PortState; Armed carries no
  // data, so before the LFTs is fine). Real ibsim does not forward LID-routed SMPs through
  // ports that are not Active, so it is softibd's internal SM's choice only.
  bool fast = false;
  // PortInfo:GIDPrefix of every end port (CA ports, switch port 0), host order.
  uint64_t subnet_prefix = kDefaultSubnetPrefix;
};

// One phase; each runs the transactions to completion before returning. ConfigurePhase::kLids
// sets every end port's PortInfo, whatever it holds, so a port whose LID is right but whose
// GIDPrefix or MasterSMLID is another SM's (a handover) is rewritten too.
void ConfigurePhaseRun(Transactions& tx, Subnet& subnet, ConfigurePhase phase,
                       ConfigureReport& report, const ConfigureOptions& options = {});

// Makes `smp`, built directed-routed, LID-routed to port `p` of node `n` (port 0 of a
// switch), for requests sent once the LFTs are in. Unchanged (false) for the SM's own node
// and while the node or the SM has no LID.
bool RouteByLid(const Subnet& subnet, NodeId n, uint8_t p, MadBytes& smp, MadAddress& to);

// Reads every switch's LFT back (LinearFDBTop from SwitchInfo, then the blocks) into
// `readback` (a copy of `subnet`), so that the route checker walks what the switches hold.
unsigned ReadBackLfts(Transactions& tx, const Subnet& subnet, Subnet& readback);

}  // namespace softib::sm
