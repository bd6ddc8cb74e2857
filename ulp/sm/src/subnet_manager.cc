// One sweep from discovery to an ACTIVE subnet, and the MASTER's SMInfo answers.
#include "softib/sm/subnet_manager.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <future>
#include <utility>

#include "softib/sm/smp.h"
#include "softib/sm/sweep.h"

namespace softib::sm {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

SubnetManager::SubnetManager(MadPort& port, SmOptions options)
    : port_(port), options_(std::move(options)), tx_(port, options_.tx) {
  tx_.set_request_handler([this](const ReceivedMad& m) { AnswerRequest(m); });
  sa_.set_rmpp_limit(port_.MaxRmppBytes());
  sa_.set_subnet_prefix(options_.subnet_prefix);
  tx_.set_progress([this] { Progress(false); });
}

void SubnetManager::Progress(bool force) {
  // Heavy sweeps only: a STANDBY's polls and a MASTER's light sweeps are no phase's SMPs (a
  // STANDBY polling every 0.3 s read as "sminfo 122/122 answered, 38 s", a crawl).
  if (!options_.log || !sweeping_ || (!force && (++progress_calls_ & 255) != 0)) return;
  const double now = Now();
  if (!force && now - last_progress_ < options_.progress_interval_s) return;
  last_progress_ = now;
  const uint64_t phase_smps = tx_.stats().submitted - phase_submitted_;
  std::fprintf(options_.log,
               "softib-sm: %-10s %zu nodes (%zu switches), SMPs of this phase %" PRIu64 "/%" PRIu64
               " answered, %" PRIu64 " sent in all, %.2f s\n",
               phase_, subnet_.nodes().size(), subnet_.Count(fabric::NodeType::kSwitch),
               phase_smps - tx_.pending(), phase_smps, tx_.stats().sent, now - started_);
  std::fflush(options_.log);
}

void SubnetManager::EnterPhase(const char* phase) {
  phase_ = phase;
  phase_submitted_ = tx_.stats().submitted;
  if (Now() - started_ >= options_.progress_interval_s) Progress(true);
}

SweepReport SubnetManager::Sweep(bool take_over) {
  sweeping_ = true;
  SweepReport report = SweepModel(take_over);
  sweeping_ = false;
  // A sweep that failed, or whose discovery lost SMPs (a node that did not answer in time on
  // a loaded host is missing from the model, as are the SMs behind it), is swept again soon
  // (as OpenSM re-sweeps after an initialization error): a light sweep of a partial model
  // finds nothing to change.
  sweep_incomplete_ =
      state_ != SmState::kStandby && (!report.ok() || report.discovery.failed_requests > 0);
  // The requests that waited, answered from the new model (or refused if there is none).
  for (const ReceivedMad& request : std::exchange(held_requests_, {})) AnswerRequest(request);
  return report;
}

SweepReport SubnetManager::SweepModel(bool take_over) {
  SweepReport report;
  report.engine = ToString(options_.routing.engine);
  started_ = last_progress_ = Now();
  sa_.set_subnet(nullptr);  // SA requests wait while the model is rebuilt
  subnet_ = Subnet{};
  if (state_ != SmState::kMaster) state_ = SmState::kDiscovering;

  EnterPhase("discovery");
  report.discovery = Discover(tx_, subnet_);
  // SMPs lost in discovery leave nodes out of the model, and a sweep of a partial model
  // writes LFTs without their LIDs (the traffic to them stops until the next sweep): discover
  // again first (OpenSM restarts a sweep after an initialization error), a few times.
  for (unsigned again = 0; again < kDiscoveryAttempts - 1 && report.discovery.ok() &&
                           report.discovery.failed_requests > 0;
       ++again) {
    ++report.rediscoveries;
    subnet_ = Subnet{};
    report.discovery = Discover(tx_, subnet_);
  }
  if (!report.discovery.ok()) {
    report.error = "discovery: " + report.discovery.error;
    report.tx = tx_.stats();
    return report;
  }
  guid_ = subnet_.node(subnet_.sm_node).guid;
  if (!subnet_.node(subnet_.sm_node).is_switch())
    guid_ = subnet_.node(subnet_.sm_node).ports[subnet_.sm_port].guid;

  // The other SMs: follow a master that is there, or a better SM that will be.
  EnterPhase("sminfo");
  report.peers = QueryPeerSms(tx_, subnet_, options_.sm_key);
  std::vector<SmIdentity> others;
  for (const PeerSm& p : report.peers) others.push_back(p.info);
  const Election election = take_over ? Election{SmState::kMaster, {}, {}} : Elect(Self(), others);
  if (election.role == SmState::kStandby) {
    state_ = SmState::kStandby;
    master_ = report.peers[*election.master];
    report.role = SmState::kStandby;
    report.tx = tx_.stats();
    report.seconds = Now() - started_;
    return report;
  }

  EnterPhase("lids");
  Guid2Lid remembered;
  std::string error;
  if (!options_.guid2lid_path.empty() && !remembered.Load(options_.guid2lid_path, &error)) {
    report.error = "guid2lid: " + error;
    return report;
  }
  report.lids =
      AssignLids(subnet_, options_.lmc, options_.guid2lid_path.empty() ? nullptr : &remembered);
  if (!report.lids.ok()) {
    report.error = "LID assignment: " + report.lids.error;
    return report;
  }
  lid_ = subnet_.node(subnet_.sm_node).ports[subnet_.sm_port].lid;

  EnterPhase("routing");
  report.routing = ComputeRoutes(subnet_, options_.routing);
  if (!report.routing.ok()) {
    report.error = "routing: " + report.routing.error;
    return report;
  }
  // The check of the model reads links, LIDs and LFTs only, which the phases below leave
  // alone: it runs beside them, on a CPU the SM's and the fabric's threads leave idle.
  std::future<RouteCheckReport> model_check;
  if (!options_.verify_lfts)
    model_check = std::async(std::launch::async, [this] { return CheckRoutes(subnet_); });

  for (ConfigurePhase phase : {ConfigurePhase::kLids, ConfigurePhase::kForwarding,
                               ConfigurePhase::kArm, ConfigurePhase::kActivate}) {
    if (phase == ConfigurePhase::kArm) {
      // Partitions before the ports carry data: what they hold, then what they lack.
      EnterPhase("partitions");
      if (const unsigned failures = ReadPKeyTables(tx_, subnet_, options_.fast_bringup)) {
        report.pkeys.failed += failures;
        report.pkeys.first_error = std::to_string(failures) + " P_KeyTable Gets failed";
      }
      const PKeyPlan plan = PlanPKeyTables(subnet_, options_.partitions);
      const PKeyReport written = ProgramPKeys(tx_, subnet_, plan, options_.fast_bringup);
      report.pkeys.blocks = written.blocks;
      report.pkeys.enforced = written.enforced;
      report.pkeys.failed += written.failed;
      if (report.pkeys.first_error.empty()) report.pkeys.first_error = written.first_error;
      if (options_.log)
        for (const std::string& w : plan.warnings)
          std::fprintf(options_.log, "softib-sm: partitions: %s\n", w.c_str());
    }
    EnterPhase(ToString(phase));
    ConfigurePhaseRun(tx_, subnet_, phase, report.configure,
                      {options_.fast_bringup, options_.subnet_prefix});
  }

  EnterPhase("check");
  if (options_.verify_lfts) {
    Subnet readback;
    if (const unsigned failures = ReadBackLfts(tx_, subnet_, readback)) {
      report.error = "reading the LFTs back: " + std::to_string(failures) + " requests failed";
    }
    report.routes = CheckRoutes(readback);
  } else {
    report.routes = model_check.get();
  }
  if (options_.sa) {
    sa_.set_subnet(&subnet_);
    // Every group's tree from scratch: what the switches held before is not known.
    EnterPhase("multicast");
    CreatePartitionGroups();
    held_replies_.clear();  // answered "no resources" while the model was rebuilt
    mcast_dirty_ = false;
    report.mcast = ProgramMulticast(tx_, subnet_, sa_.McastMembers(), true);
  }
  report.tx = tx_.stats();
  report.seconds = Now() - started_;

  if (!options_.guid2lid_path.empty() && !remembered.Save(options_.guid2lid_path, &error) &&
      report.error.empty())
    report.error = "guid2lid: " + error;
  if (report.error.empty() && !report.configure.ok())
    report.error = std::to_string(report.configure.failed) +
                   " Sets failed; first: " + report.configure.first_failure;
  if (report.error.empty() && !report.pkeys.ok())
    report.error = "partitions: " + report.pkeys.first_error;
  if (report.error.empty() && !report.mcast.ok())
    report.error = "multicast: " + report.mcast.first_error;
  if (report.error.empty() && !report.routes.ok())
    report.error = "route check: " + std::to_string(report.routes.holes) + " broken pairs, " +
                   std::to_string(report.routes.loops) + " loops" +
                   (report.routes.problems.empty() ? "" : "; " + report.routes.problems[0]);
  if (report.ok()) state_ = SmState::kMaster;
  peers_ = report.peers;
  // A better SM is there (it came up after us): give it the subnet.
  if (report.ok() && election.hand_over && HandOver(report.peers[*election.hand_over]))
    report.role = SmState::kStandby;
  return report;
}

bool SubnetManager::HandOver(const PeerSm& better) {
  if (!SetSmInfo(tx_, better.path, kSmInfoHandover, Self(), options_.sm_key)) return false;
  state_ = SmState::kStandby;
  master_ = better;
  return true;
}

SubnetManager::Recheck SubnetManager::RecheckPeers() {
  // Every SM the model shows (each port advertising IsSM), on every light sweep (IBA 14.4.1:
  // the master keeps polling the SMs it knows of). Not only those that were discovering: one
  // whose SMInfo went unanswered once (a loaded host) is in no list of peers, one that had
  // settled as STANDBY when a Set failed, a sweep failed or the HANDOVER went unanswered is
  // still to be handed over to, and another MASTER (our SMInfo Get to it was lost in its
  // first sweep, so it took the subnet too) is one of two.
  peers_ = QueryPeerSms(tx_, subnet_, options_.sm_key);
  std::vector<SmIdentity> others;
  for (const PeerSm& p : peers_) others.push_back(p.info);
  const Election election = Elect(Self(), others);
  if (election.role == SmState::kStandby && election.master) {
    // A better MASTER: follow it (it keeps the subnet; we poll it as its STANDBY).
    state_ = SmState::kStandby;
    master_ = peers_[*election.master];
    return Recheck::kFollowing;
  }
  if (election.hand_over && HandOver(peers_[*election.hand_over])) return Recheck::kHandedOver;
  return Recheck::kMaster;
}

std::string SweepReport::Summary(const Subnet& subnet) const {
  char line[512];
  std::snprintf(
      line, sizeof line,
      "softib-sm: %s: %zu switches, %zu CAs, %zu links, %u LIDs (%u kept, %u from guid2lid, "
      "%u new), %u LFT blocks (%s, %u LID-routed), %u P_Key blocks, %u MFT blocks, %u ports "
      "ACTIVE, %" PRIu64 " SMPs (%" PRIu64 " retries, %" PRIu64 " timeouts), routes %" PRIu64
      " pairs ok=%s max %u hops, %.3f s",
      !ok()                      ? "FAILED"
      : role == SmState::kMaster ? "MASTER, subnet up"
                                 : "STANDBY",
      subnet.Count(fabric::NodeType::kSwitch), subnet.Count(fabric::NodeType::kCa),
      subnet.LinkCount(), lids.end_ports, lids.kept, lids.from_file, lids.assigned,
      configure.lft_blocks, engine.c_str(), configure.lft_blocks_by_lid, pkeys.blocks, mcast.blocks,
      configure.activated, tx.sent, tx.retries, tx.timeouts, routes.pairs,
      routes.ok() ? "yes" : "no", routes.max_hops, seconds);
  return line;
}

SmIdentity SubnetManager::Self() const {
  SmIdentity self;
  self.guid = guid_;
  self.priority = options_.priority;
  self.state = state_;
  // ActCount moves with the SM's activity: the SMPs it has sent.
  self.act_count = static_cast<uint32_t>(tx_.stats().sent);
  return self;
}

void SubnetManager::SendSaReply(const SaOutgoing& reply) {
  if (reply.transfer.empty())
    port_.Send(reply.mad, reply.to, 0);
  else
    port_.SendRmpp(reply.transfer, reply.to);
}

void SubnetManager::AnswerRequest(const ReceivedMad& request) {
  if (request.mad[1] == kClassSubnAdm) {
    if (!options_.sa) return;
    if (sweeping_ && held_requests_.size() < kMaxHeldRequests) {
      held_requests_.push_back(request);
      return;
    }
    const uint64_t changes = sa_.mcast_changes();
    std::vector<SaOutgoing> replies = sa_.Handle(request.mad, request.from, Now());
    if (sa_.mcast_changes() != changes && state_ == SmState::kMaster) {
      // A join or leave: the member hears back once the switches forward for it.
      mcast_dirty_ = true;
      held_replies_.insert(held_replies_.end(), replies.begin(), replies.end());
      return;
    }
    for (const SaOutgoing& reply : replies) SendSaReply(reply);
    return;
  }
  const uint8_t method = SmpMethod(request.mad);
  if (method == kMethodTrap) return HandleTrap(request);
  if (SmpAttribute(request.mad) != kAttrSmInfo) return;  // our node's SMA answers the rest
  if (method != kMethodGet && method != kMethodSet) return;
  uint64_t key = 0;
  const SmIdentity asker = ReadSmInfo(request.mad, &key);
  (void)asker;
  if (method == kMethodSet) {
    const uint32_t modifier = SmpModifier(request.mad);
    // HANDOVER to a STANDBY: the master gives us the subnet (IBA 14.4.2).
    if (modifier == kSmInfoHandover && state_ == SmState::kStandby) take_over_ = true;
  }
  MadBytes response = request.mad;
  response[3] = kMethodGetResp;
  if (SmpClass(response) == kClassSubnDr) response[4] |= 0x80;  // D: returning
  // The SM_Key only to those who know it (IBA 14.4.4).
  PackSmInfo(Self(), key == options_.sm_key ? options_.sm_key : 0, response);
  MadAddress to = request.from;
  if (SmpClass(response) == kClassSubnDr) to.lid = kDirectedRouteLid;
  port_.Send(response, to, 0);
}

SweepReport SubnetManager::SweepAndNotify(bool take_over) {
  // The SA's subscribers hear of end ports that came or went (traps 64/65).
  const Subnet before = subnet_;
  const SweepReport report = Sweep(take_over);
  if (report.ok() && state_ == SmState::kMaster) {
    for (const SaOutgoing& notice : sa_.NoticesForChanges(before)) {
      port_.Send(notice.mad, notice.to, 0);
      ++notices_sent_;
    }
  }
  return report;
}

bool SubnetManager::Serve(double seconds, const std::atomic<bool>* stop) {
  const double until = Now() + seconds;
  while (!(stop && *stop) && (seconds < 0 || Now() < until) && !resweep_ && !take_over_ &&
         !mcast_dirty_) {
    // Up to 100 ms at a time, and not past `until` (a light sweep due in 5 ms waits 5 ms).
    const int ms =
        seconds < 0 ? 100 : static_cast<int>(std::clamp((until - Now()) * 1e3 + 1, 0.0, 100.0));
    if (!tx_.Poll(ms)) return false;
  }
  return true;
}

void SubnetManager::Announce(std::FILE* out, const SweepReport& report, const char* why) {
  if (!out) return;
  if (report.role == SmState::kStandby && report.ok()) {
    std::fprintf(out,
                 "softib-sm: STANDBY (%s), following MASTER 0x%016" PRIx64
                 " priority %u; we are 0x%016" PRIx64 " priority %u\n",
                 why, master_.info.guid, master_.info.priority, guid_, options_.priority);
  } else {
    std::fprintf(out, "%s [%s]\n", report.Summary(subnet_).c_str(), why);
    if (!report.ok()) std::fprintf(out, "softib-sm: %s\n", report.error.c_str());
  }
  std::fflush(out);
}

bool SubnetManager::Run(const std::atomic<bool>* stop, std::FILE* out) {
  double next_light = Now() + options_.sweep_interval_s;
  double next_resweep = Now() + options_.resweep_s;
  unsigned missed_polls = 0;
  while (!(stop && *stop)) {
    if (state_ == SmState::kMaster) {
      // -1: until a trap or a request. A light sweep already due waits 0, not -1: a heavy
      // sweep or a recheck longer than the interval (a loaded host) must not end the light
      // sweeps, and with them the rechecks of the other SMs and the handover.
      double wait = options_.sweep_interval_s > 0 ? std::max(0.0, next_light - Now()) : -1;
      if (options_.resweep_s > 0)
        wait =
            std::max(0.0, wait < 0 ? next_resweep - Now() : std::min(wait, next_resweep - Now()));
      if (sweep_incomplete_)
        wait = wait < 0 ? kIncompleteResweepS : std::min(wait, kIncompleteResweepS);
      if (!Serve(wait, stop)) return false;
      if (stop && *stop) break;
      if (mcast_dirty_ && !resweep_) {
        UpdateMulticast(out);
        continue;
      }
      const char* why = nullptr;
      if (resweep_) {
        why = "trap";
      } else if (sweep_incomplete_) {
        why = "the last sweep was incomplete";
      } else if (options_.resweep_s > 0 && Now() >= next_resweep) {
        why = "periodic re-sweep";
      } else {
        const LightSweepReport light = LightSweep(tx_, subnet_);
        if (light.changed())
          why = light.new_sms ? "light sweep: a new SM" : "light sweep: a change";
      }
      resweep_ = false;
      next_light = Now() + options_.sweep_interval_s;
      if (options_.resweep_s > 0 && Now() >= next_resweep)
        next_resweep = Now() + options_.resweep_s;
      if (!why) {
        const Recheck recheck = RecheckPeers();
        if (recheck != Recheck::kMaster) {
          SweepReport standby;
          standby.role = SmState::kStandby;
          Announce(out, standby,
                   recheck == Recheck::kHandedOver ? "handed over" : "a better master is there");
          continue;
        }
      }
      if (!why) continue;
      Announce(out, SweepAndNotify(false), why);
      continue;
    }
    // STANDBY: poll the master; take over on a handover or when it stops answering.
    if (!Serve(options_.poll_interval_s, stop)) return false;
    if (stop && *stop) break;
    if (state_ == SmState::kDiscovering) {
      // Our last sweep failed before an election (a take-over's, or the first): sweep again.
      Announce(out, SweepAndNotify(false), "the last sweep failed");
      continue;
    }
    if (take_over_) {
      take_over_ = false;
      missed_polls = 0;
      Announce(out, SweepAndNotify(true), "handover");
      continue;
    }
    const auto master = GetSmInfo(tx_, master_.path, options_.sm_key);
    if (master && master->guid == master_.info.guid &&
        (master->state == SmState::kMaster || master->state == SmState::kDiscovering)) {
      missed_polls = 0;
      continue;
    }
    if (master && master->guid == master_.info.guid && master->state != SmState::kMaster) {
      missed_polls = options_.poll_failures;  // it stepped down: elect again at once
    } else {
      ++missed_polls;
    }
    if (missed_polls < options_.poll_failures) continue;
    missed_polls = 0;
    Announce(out, SweepAndNotify(false), "the master stopped answering");
  }
  return true;
}

void SubnetManager::CreatePartitionGroups() {
  if (partition_groups_) return;
  partition_groups_ = true;
  for (const Partition& p : options_.partitions.partitions) {
    if (!p.ipoib) continue;
    // The IPv4 broadcast group of IPoIB (RFC 4391): ff12:401b:<P_Key>::ffff:ffff, Q_Key
    // 0x0B1B, as OpenSM creates it for an `ipoib` partition.
    mad::MCMemberRecord g;
    const uint16_t pkey = static_cast<uint16_t>(p.pkey | kFullMember);
    g.MGID = MakeGid(0xff12401b00000000ull | (uint64_t{pkey} << 16), 0x00000000ffffffffull);
    g.Q_Key = 0x0B1B;
    g.P_Key = pkey;
    g.MTUSelector = 2;
    g.MTU = p.mtu ? p.mtu : 4;  // 2048
    g.RateSelector = 2;
    g.Rate = p.rate ? p.rate : 3;  // 10 Gb/s
    g.PacketLifeTimeSelector = 2;
    g.PacketLifeTime = 18;
    g.SL = p.sl;
    g.Scope = 2;  // link-local
    sa_.AddGroup(g);
  }
  // The partition file's `mgid=` groups, created empty like the broadcast groups.
  for (const Partition& p : options_.partitions.partitions) {
    for (const PartitionGroup& pg : p.groups) {
      mad::MCMemberRecord g;
      g.MGID = pg.mgid;
      g.Q_Key = pg.qkey;
      g.P_Key = static_cast<uint16_t>(p.pkey | kFullMember);
      g.MTUSelector = 2;
      g.MTU = pg.mtu;
      g.RateSelector = 2;
      g.Rate = pg.rate;
      g.PacketLifeTimeSelector = 2;
      g.PacketLifeTime = 18;
      g.SL = pg.sl;
      g.FlowLabel = pg.flow_label;
      g.TClass = pg.tclass;
      g.Scope = pg.mgid[1] & 0x0F;
      sa_.AddGroup(g);
    }
  }
}

void SubnetManager::UpdateMulticast(std::FILE* out) {
  mcast_dirty_ = false;
  // Joins that arrive while these blocks are written wait for the next round.
  const std::vector<SaOutgoing> replies = std::exchange(held_replies_, {});
  const McastReport report = ProgramMulticast(tx_, subnet_, sa_.McastMembers(), false);
  if (!report.ok() && out) {
    std::fprintf(out, "softib-sm: multicast: %s\n", report.first_error.c_str());
    std::fflush(out);
  }
  for (const SaOutgoing& reply : replies) SendSaReply(reply);
}

}  // namespace softib::sm
