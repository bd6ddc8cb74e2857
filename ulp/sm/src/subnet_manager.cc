// One sweep from discovery to an ACTIVE subnet, and the MASTER's SMInfo answers.
#include "softib/sm/subnet_manager.h"

#include <chrono>
#include <cinttypes>

#include "softib/sm/smp.h"

namespace softib::sm {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

constexpr uint8_t kSmStateMaster = 3;

}  // namespace

SubnetManager::SubnetManager(MadPort& port, SmOptions options)
    : port_(port), options_(std::move(options)), tx_(port, options_.tx) {
  tx_.set_request_handler([this](const ReceivedMad& m) { AnswerRequest(m); });
  tx_.set_progress([this] { Progress(phase_, false); });
}

void SubnetManager::Progress(const char* phase, bool force) {
  if (!options_.log) return;
  const double now = Now();
  if (!force && now - last_progress_ < options_.progress_interval_s) return;
  last_progress_ = now;
  std::fprintf(options_.log,
               "softib-sm: %-10s %zu nodes, %" PRIu64 " SMPs sent, %zu in flight, %.2f s\n", phase,
               subnet_.nodes().size(), tx_.stats().sent, tx_.in_flight(), now - started_);
  std::fflush(options_.log);
}

SweepReport SubnetManager::Sweep() {
  SweepReport report;
  started_ = last_progress_ = Now();
  sa_.set_subnet(nullptr);  // the SA answers "no resources" while the model is rebuilt
  subnet_ = Subnet{};

  phase_ = "discovery";
  report.discovery = Discover(tx_, subnet_);
  if (!report.discovery.ok()) {
    report.error = "discovery: " + report.discovery.error;
    report.tx = tx_.stats();
    return report;
  }
  guid_ = subnet_.node(subnet_.sm_node).guid;
  if (!subnet_.node(subnet_.sm_node).is_switch())
    guid_ = subnet_.node(subnet_.sm_node).ports[subnet_.sm_port].guid;

  phase_ = "lids";
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

  phase_ = "routing";
  report.routing = ComputeMinHopRoutes(subnet_);
  if (!report.routing.ok()) {
    report.error = "routing: " + report.routing.error;
    return report;
  }

  for (ConfigurePhase phase : {ConfigurePhase::kLids, ConfigurePhase::kForwarding,
                               ConfigurePhase::kArm, ConfigurePhase::kActivate}) {
    phase_ = ToString(phase);
    ConfigurePhaseRun(tx_, subnet_, phase, report.configure);
  }

  phase_ = "check";
  if (options_.verify_lfts) {
    Subnet readback;
    if (const unsigned failures = ReadBackLfts(tx_, subnet_, readback)) {
      report.error = "reading the LFTs back: " + std::to_string(failures) + " requests failed";
    }
    report.routes = CheckRoutes(readback);
  } else {
    report.routes = CheckRoutes(subnet_);
  }
  report.tx = tx_.stats();
  report.seconds = Now() - started_;
  if (options_.sa) sa_.set_subnet(&subnet_);

  if (!options_.guid2lid_path.empty() && !remembered.Save(options_.guid2lid_path, &error) &&
      report.error.empty())
    report.error = "guid2lid: " + error;
  if (report.error.empty() && !report.configure.ok())
    report.error = std::to_string(report.configure.failed) +
                   " Sets failed; first: " + report.configure.first_failure;
  if (report.error.empty() && !report.routes.ok())
    report.error = "route check: " + std::to_string(report.routes.holes) + " broken pairs, " +
                   std::to_string(report.routes.loops) + " loops" +
                   (report.routes.problems.empty() ? "" : "; " + report.routes.problems[0]);
  return report;
}

std::string SweepReport::Summary(const Subnet& subnet) const {
  char line[512];
  std::snprintf(
      line, sizeof line,
      "softib-sm: %s: %zu switches, %zu CAs, %zu links, %u LIDs (%u kept, %u from guid2lid, "
      "%u new), %u LFT blocks, %u ports ACTIVE, %" PRIu64 " SMPs (%" PRIu64 " retries, %" PRIu64
      " timeouts), routes %" PRIu64 " pairs ok=%s max %u hops, %.3f s",
      ok() ? "MASTER, subnet up" : "FAILED", subnet.Count(fabric::NodeType::kSwitch),
      subnet.Count(fabric::NodeType::kCa), subnet.LinkCount(), lids.end_ports, lids.kept,
      lids.from_file, lids.assigned, configure.lft_blocks, configure.activated, tx.sent, tx.retries,
      tx.timeouts, routes.pairs, routes.ok() ? "yes" : "no", routes.max_hops, seconds);
  return line;
}

void SubnetManager::AnswerRequest(const ReceivedMad& request) {
  if (request.mad[1] == kClassSubnAdm) {
    if (!options_.sa) return;
    for (const SaOutgoing& reply : sa_.Handle(request.mad, request.from, Now()))
      port_.Send(reply.mad, reply.to, 0);
    return;
  }
  // Only SMInfo Get is ours to answer here; the SMA of our node answers the rest.
  if (SmpAttribute(request.mad) != kAttrSmInfo || SmpMethod(request.mad) != kMethodGet) return;
  MadBytes response = request.mad;
  response[3] = kMethodGetResp;
  if (SmpClass(response) == kClassSubnDr) response[4] |= 0x80;  // D: returning
  mad::SMInfo info;
  info.GUID = guid_;
  info.SM_Key = 0;
  info.ActCount = ++sm_activity_;
  info.Priority = options_.priority;
  info.SMState = kSmStateMaster;
  auto data = MutableSmpData(response);
  std::fill(data.begin(), data.end(), 0);
  info.Pack(data.first(mad::SMInfo::kSize));
  MadAddress to = request.from;
  if (SmpClass(response) == kClassSubnDr) to.lid = kDirectedRouteLid;
  port_.Send(response, to, 0);
}

bool SubnetManager::Serve(double seconds, const volatile bool* stop) {
  const double until = Now() + seconds;
  double next_sweep = Now() + options_.resweep_s;
  while (!(stop && *stop) && (seconds < 0 || Now() < until)) {
    if (!tx_.Poll(200)) return false;
    if (options_.resweep_s > 0 && Now() >= next_sweep) {
      // A full sweep again (ports keep their LIDs), then the subscribers hear of end ports
      // that came or went: traps 64/65.
      const Subnet before = subnet_;
      const SweepReport report = Sweep();
      if (options_.log) std::fprintf(options_.log, "%s\n", report.Summary(subnet_).c_str());
      if (report.ok())
        for (const SaOutgoing& notice : sa_.NoticesForChanges(before)) {
          port_.Send(notice.mad, notice.to, 0);
          ++notices_sent_;
        }
      next_sweep = Now() + options_.resweep_s;
    }
  }
  return true;
}

}  // namespace softib::sm
