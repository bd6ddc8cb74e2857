// The SM: a heavy sweep = discovery, the election against the other SMs found (IBA 14.4),
// then as MASTER LID assignment, routing (min-hop, up/down or fat-tree), programming,
// activation and the route check. Run() then keeps the subnet: as MASTER it answers SMInfo,
// light-sweeps on a period, re-sweeps on a trap or a change and hands the subnet over to a
// better SM; as STANDBY it polls the master and takes over when the master stops
// answering or hands over.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>

#include "softib/sm/configure.h"
#include "softib/sm/discovery.h"
#include "softib/sm/lids.h"
#include "softib/sm/mcast_routing.h"
#include "softib/sm/partitions.h"
#include "softib/sm/routing.h"
#include "softib/sm/sa.h"
#include "softib/sm/sminfo.h"
#include "softib/sm/subnet.h"
#include "softib/sm/sweep.h"
#include "softib/sm/transactions.h"

namespace softib::sm {

struct SmOptions {
  TransactionOptions tx;
  uint8_t lmc = 0;
  std::string guid2lid_path;  // "" = do not remember LIDs
  bool verify_lfts = false;   // read the LFTs back from the switches before checking routes
  bool fast_bringup = false;  // softib's fabric: LID-routed SMPs, fewer Arms (configure.h)
  // PortInfo:GIDPrefix of every end port, written in every heavy sweep (host order; see
  // SubnetPrefixError for the legal forms): the prefix of the GIDs the SA answers with.
  uint64_t subnet_prefix = kDefaultSubnetPrefix;
  uint8_t priority = 0;  // SMInfo Priority
  uint64_t sm_key = 0;   // SMInfo SM_Key: given only to requests that carry it
  RoutingOptions routing;
  double sweep_interval_s = 10;  // light sweeps as MASTER; 0 = none (traps still re-sweep)
  double poll_interval_s = 1;    // a STANDBY's SMInfo Get to the master
  unsigned poll_failures = 3;    // unanswered polls before the STANDBY takes over
  std::FILE* log = stderr;       // progress and summary lines; nullptr = silent
  double progress_interval_s = 1.0;
  bool sa = true;        // answer SubnAdm (class 0x03) requests as MASTER
  double resweep_s = 0;  // > 0: sweep again this often while serving (traps 64/65)
  // P_Key tables for every port; each partition with `ipoib` gets its IPoIB broadcast group.
  PartitionConfig partitions = DefaultPartitionConfig();
};

struct SweepReport {
  std::string error;  // "" when the subnet is up (or we are STANDBY)
  SmState role = SmState::kMaster;
  std::vector<PeerSm> peers;  // the other SMs found
  std::string engine;
  DiscoveryReport discovery;   // the last discovery's
  unsigned rediscoveries = 0;  // discoveries run again because SMPs were lost
  LidReport lids;
  RoutingReport routing;
  ConfigureReport configure;
  RouteCheckReport routes;
  PKeyReport pkeys;
  McastReport mcast;
  TxStats tx;
  double seconds = 0;
  bool ok() const { return error.empty(); }
  std::string Summary(const Subnet& subnet) const;  // the one-line summary
};

class SubnetManager {
 public:
  SubnetManager(MadPort& port, SmOptions options);

  // A heavy sweep. `take_over`: become MASTER whatever the other SMs say (a handover).
  // SA requests that come while the model is rebuilt wait for its end (as OpenSM's SA,
  // which answers during sweeps, would have them answered), up to kMaxHeldRequests.
  SweepReport Sweep(bool take_over = false);
  // A heavy sweep, then the SA's Notice reports for the end ports that came or went.
  SweepReport SweepAndNotify(bool take_over);
  // Answers requests (SMInfo, traps) for `seconds`, or until `stop` or a re-sweep is due.
  bool Serve(double seconds, const std::atomic<bool>* stop);
  // The life of an SM after the first sweep, until `stop`: see the file comment. State
  // changes and sweep summaries are printed to `out`. False when the port fails.
  bool Run(const std::atomic<bool>* stop, std::FILE* out);

  // The summary line (or the STANDBY line) of a sweep, and why it ran.
  void Announce(std::FILE* out, const SweepReport& report, const char* why);

  const Subnet& subnet() const { return subnet_; }
  SubnetAdmin& sa() { return sa_; }
  uint64_t guid() const { return guid_; }
  SmState state() const { return state_; }
  unsigned traps() const { return traps_; }
  uint64_t notices_sent() const { return notices_sent_; }

 private:
  // A progress line (at most one per progress_interval_s unless `force`): the phase, what
  // discovery found, and how many of the phase's SMPs are answered ("forwarding 1200/3400").
  void Progress(bool force);
  // Starts a phase; on a long bring-up (past one progress interval) it says so at once.
  void EnterPhase(const char* phase);
  // The IPoIB broadcast group of every partition that asks for one and the partition
  // file's `mgid=` groups (once).
  void CreatePartitionGroups();
  // The MFT blocks that joins and leaves changed, then the SA answers that waited for them.
  void UpdateMulticast(std::FILE* out);
  // An SA answer: one MAD, or an RMPP transfer when the port does RMPP.
  void SendSaReply(const SaOutgoing& reply);
  void AnswerRequest(const ReceivedMad& request);
  // sm_traps.cc: a SubnTrap(Notice) from an SMA: repressed, acted on, forwarded to the SA's
  // subscribers.
  void HandleTrap(const ReceivedMad& trap);
  SmIdentity Self() const;
  // SMInfo Set HANDOVER to `better`; on success we are its STANDBY.
  bool HandOver(const PeerSm& better);
  // As MASTER between heavy sweeps: asks every SM the model shows again (SMInfo Get), hands
  // over to a better one that has settled as STANDBY, and follows a better MASTER.
  enum class Recheck : uint8_t { kMaster, kHandedOver, kFollowing };
  Recheck RecheckPeers();

  MadPort& port_;
  SmOptions options_;
  Transactions tx_;
  Subnet subnet_;
  SubnetAdmin sa_;
  uint64_t notices_sent_ = 0;
  uint64_t guid_ = 0;
  uint16_t lid_ = 0;
  SmState state_ = SmState::kDiscovering;
  PeerSm master_;                  // the SM a STANDBY follows
  std::vector<PeerSm> peers_;      // the other SMs at the last sweep
  bool resweep_ = false;           // a trap came in
  bool sweep_incomplete_ = false;  // the last sweep failed or lost SMPs: sweep again
  static constexpr double kIncompleteResweepS = 1.0;  // at the latest, after an incomplete one
  static constexpr unsigned kDiscoveryAttempts = 3;   // per sweep, while SMPs are lost
  bool take_over_ = false;                            // the master handed the subnet over to us
  bool mcast_dirty_ = false;                          // a join or leave changed a group's members
  bool partition_groups_ = false;                     // CreatePartitionGroups() done
  std::vector<SaOutgoing> held_replies_;  // SA answers sent once the MFTs are programmed
  static constexpr std::size_t kMaxHeldRequests = 4096;
  bool sweeping_ = false;
  std::vector<ReceivedMad> held_requests_;  // SA requests that came during the sweep
  SweepReport SweepModel(bool take_over);   // Sweep's work
  unsigned traps_ = 0;
  double started_ = 0;
  double last_progress_ = 0;
  unsigned progress_calls_ = 0;  // the clock is read every 256th completion, not each one
  const char* phase_ = "";
  uint64_t phase_submitted_ = 0;  // tx_.stats().submitted when the phase began
};

}  // namespace softib::sm
