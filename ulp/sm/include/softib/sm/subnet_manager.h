// The SM: one sweep = discovery, LID assignment, min-hop routing, programming, activation,
// and the route check; then (unless run once) it stays MASTER and answers SMInfo.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "softib/sm/configure.h"
#include "softib/sm/discovery.h"
#include "softib/sm/lids.h"
#include "softib/sm/routing.h"
#include "softib/sm/sa.h"
#include "softib/sm/subnet.h"
#include "softib/sm/transactions.h"

namespace softib::sm {

struct SmOptions {
  TransactionOptions tx;
  uint8_t lmc = 0;
  std::string guid2lid_path;  // "" = do not remember LIDs
  bool verify_lfts = false;   // read the LFTs back from the switches before checking routes
  uint8_t priority = 0;       // SMInfo Priority
  std::FILE* log = stderr;    // progress and summary lines; nullptr = silent
  double progress_interval_s = 1.0;
  bool sa = true;        // answer SubnAdm (class 0x03) requests as MASTER
  double resweep_s = 0;  // > 0: sweep again this often while serving (traps 64/65)
};

struct SweepReport {
  std::string error;  // "" when the subnet is up
  DiscoveryReport discovery;
  LidReport lids;
  RoutingReport routing;
  ConfigureReport configure;
  RouteCheckReport routes;
  TxStats tx;
  double seconds = 0;
  bool ok() const { return error.empty(); }
  std::string Summary(const Subnet& subnet) const;  // the one-line summary
};

class SubnetManager {
 public:
  SubnetManager(MadPort& port, SmOptions options);

  SweepReport Sweep();
  // As MASTER: answers SMInfo Get (and ignores what it does not serve) for `seconds`
  // (negative: until `stop` becomes true).
  bool Serve(double seconds, const volatile bool* stop);

  const Subnet& subnet() const { return subnet_; }
  SubnetAdmin& sa() { return sa_; }
  uint64_t guid() const { return guid_; }

 private:
  void Progress(const char* phase, bool force);
  void AnswerRequest(const ReceivedMad& request);

  MadPort& port_;
  SmOptions options_;
  Transactions tx_;
  Subnet subnet_;
  SubnetAdmin sa_;
  uint64_t notices_sent_ = 0;
  uint64_t guid_ = 0;
  uint16_t lid_ = 0;
  uint32_t sm_activity_ = 0;
  double started_ = 0;
  double last_progress_ = 0;
  const char* phase_ = "";
};

}  // namespace softib::sm
