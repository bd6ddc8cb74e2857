// Partitions (IBA 10.9): a subset of OpenSM's partitions.conf, and the P_Key tables it gives
// every port. One definition per partition, ended by ';', over as many lines as it likes:
//
//   # comment
//   Name=0xPKEY[,ipoib][,mtu=N][,rate=N][,sl=N][,defmember=full|limited] : member[, member ...] ;
//
// The member list may also hold multicast groups the SM creates at start-up, one per line:
//
//   mgid=GID[,rate=N][,mtu=N][,sl=N][,scope=N]...[,Q_Key=N][,TClass=N][,FlowLabel=N]
//
// GID in IPv6 notation, a multicast GID (ff..). An IP group (signature 401b or 601b in bytes
// 2-3) takes the partition's P_Key into its P_Key bits when they are 0000 (else they must be
// it), Q_Key 0x0b1b unless given, and the partition's rate and MTU (a different one is an
// error); others have Q_Key 0. Each scope= gives one group with that scope nibble; none: the
// GID's own scope. Defaults: rate 3 (10 Gb/s), MTU 4 (2048), SL 0.
//
// PKEY is 15 bits (0x0001..0x7fff; bit 15, the membership, comes from the member). A member is
// ALL, SELF (the SM's port), ALL_CAS, ALL_SWITCHES (each switch's port 0) or a port GUID
// (0x...), optionally `=full`, `=limited` or `=both` (= full); without it, defmember (limited
// unless given). The default partition 0x7fff is always there: when the file does not define
// it, it is `Default=0x7fff,ipoib : ALL=full ;`. The SM's own port is always a full member of
// it (the SA answers on it). P_Key index 0 of every port holds the default partition's key.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "softib/sm/subnet.h"
#include "softib/sm/transactions.h"

namespace softib::sm {

inline constexpr uint16_t kDefaultPKey = 0x7FFF;
inline constexpr uint16_t kFullMember = 0x8000;

struct PartitionMember {
  enum class Kind : uint8_t { kAll, kSelf, kAllCas, kAllSwitches, kGuid } kind = Kind::kAll;
  uint64_t guid = 0;
  bool full = false;
};

// A multicast group a partition file asks for (`mgid=` line), scopes already expanded.
struct PartitionGroup {
  std::array<uint8_t, 16> mgid{};
  uint8_t rate = 3;
  uint8_t mtu = 4;
  uint8_t sl = 0;
  uint32_t qkey = 0;
  uint8_t tclass = 0;
  uint32_t flow_label = 0;  // 20 bits
};

struct Partition {
  std::string name;
  uint16_t pkey = 0;  // 15 bits
  bool ipoib = false;
  uint8_t mtu = 0;   // MTU code for its IPoIB broadcast group, 0 = default (4: 2048)
  uint8_t rate = 0;  // rate code, 0 = default (3: 10 Gb/s)
  uint8_t sl = 0;
  std::vector<PartitionMember> members;
  std::vector<PartitionGroup> groups;
  int line = 0;
};

struct PartitionConfig {
  std::vector<Partition> partitions;  // the default partition first
};

// Parses the text of a partition file; on error false and "line N: what" in `error`.
bool ParsePartitions(std::string_view text, PartitionConfig* out, std::string* error);
bool LoadPartitions(const std::string& path, PartitionConfig* out, std::string* error);
// The configuration without a file: the default partition, ALL full members, IPoIB.
PartitionConfig DefaultPartitionConfig();

// The P_Key table each port gets: CA ports and switch port 0 as members say; a switch's
// external port cabled to a CA port gets that port's table (for enforcement) when the
// switch's PartitionEnforcementCap holds it. Keys: (node, port).
struct PKeyPlan {
  std::map<EndPort, std::vector<uint16_t>> tables;
  std::vector<EndPort> enforce;       // switch external ports to enforce on
  std::vector<std::string> warnings;  // tables cut to the port's capacity
};
PKeyPlan PlanPKeyTables(const Subnet& subnet, const PartitionConfig& config);

// True when `table` holds `pkey` (15 bits) as a member; `full` asks for full membership.
bool HoldsPKey(const std::vector<uint16_t>& table, uint16_t pkey, bool full = false);

struct PKeyReport {
  unsigned blocks = 0;    // P_KeyTable blocks written
  unsigned enforced = 0;  // switch ports whose PortInfo enforcement bits were set
  unsigned failed = 0;
  std::string first_error;
  bool ok() const { return failed == 0; }
};

// Writes the blocks of `plan` that differ from what the ports hold (SmPort::pkeys), and the
// PartitionEnforcementInbound/Outbound bits of the ports in plan.enforce. `fast` (after
// the LFTs, softib's fabric: configure.h): LID-routed, and an enforcing port still in Init
// is armed by the same Set.
PKeyReport ProgramPKeys(Transactions& tx, Subnet& subnet, const PKeyPlan& plan, bool fast = false);

// Reads P_KeyTable block 0 of every CA port and switch port 0 into SmPort::pkeys;
// LID-routed with `lid_routed` (after the LFTs).
unsigned ReadPKeyTables(Transactions& tx, Subnet& subnet, bool lid_routed = false);

// The directed route that reaches port `p` of node `n` (a CA port through its own cable).
std::vector<uint8_t> PathToPort(const Subnet& subnet, NodeId n, uint8_t p);

}  // namespace softib::sm
