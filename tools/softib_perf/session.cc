#include "session.h"

#include <algorithm>

#include "endpoint.h"
#include "runner.h"

namespace softib::perf {

TestPlan MakePlan(const Options& o) {
  TestPlan plan;
  plan.magic = kPlanMagic;
  plan.test = static_cast<uint32_t>(o.test);
  plan.transport = static_cast<uint32_t>(o.transport);
  plan.atomic_type = static_cast<uint32_t>(o.atomic_type);
  plan.iterations = o.iterations;
  plan.tx_depth = o.tx_depth;
  plan.rx_depth = o.rx_depth;
  plan.inline_size = o.inline_size;
  plan.validate = o.validate ? 1 : 0;
  plan.num_sizes = static_cast<uint32_t>(std::min<size_t>(o.sizes.size(), 32));
  std::copy_n(o.sizes.begin(), plan.num_sizes, plan.sizes);
  return plan;
}

bool PlanIsSane(const TestPlan& plan, std::string* error) {
  if (plan.magic != kPlanMagic) {
    *error = "the client is not a softib_perf of this version";
    return false;
  }
  if (plan.num_sizes < 1 || plan.num_sizes > 32 || plan.iterations < 1 || plan.tx_depth < 1 ||
      plan.rx_depth < 1 || plan.tx_depth > (1u << 14) || plan.rx_depth > (1u << 14) ||
      plan.inline_size > 256 || plan.test > static_cast<uint32_t>(TestKind::kAtomicBw) ||
      plan.transport > static_cast<uint32_t>(Transport::kUd)) {
    *error = "the client's plan is out of range";
    return false;
  }
  for (uint32_t i = 0; i < plan.num_sizes; ++i) {
    if (plan.sizes[i] < 1 || plan.sizes[i] > (1u << 30)) {
      *error = "the client's plan has a bad size";
      return false;
    }
  }
  return true;
}

bool AcceptPlan(const Options& o, const TestPlan& theirs, std::string* error) {
  if (!PlanIsSane(theirs, error)) return false;
  if (theirs.test != static_cast<uint32_t>(o.test) ||
      theirs.transport != static_cast<uint32_t>(o.transport)) {
    *error = std::string("the client asked for ") + Name(static_cast<TestKind>(theirs.test)) +
             " over " + Name(static_cast<Transport>(theirs.transport)) + ", this server runs " +
             Name(o.test) + " over " + Name(o.transport);
    return false;
  }
  return true;
}

void DescribePlan(const TestPlan& plan, bool client, bool kernel, RunReport* report) {
  report->test = static_cast<TestKind>(plan.test);
  report->transport = static_cast<Transport>(plan.transport);
  report->client = client;
  report->kernel = kernel;
  report->tx_depth = plan.tx_depth;
  report->inline_size = plan.inline_size;
  report->validate = plan.validate != 0;
}

bool RunSession(const Options& o, bool client, Backend& backend, OobChannel& oob, RunReport* report,
                std::string* error) {
  const auto limit = std::chrono::seconds(o.timeout_s);
  TestPlan plan = MakePlan(o);
  Token answer;
  if (client) {
    if (!oob.SendValue(plan, error) || !oob.ReceiveValue(&answer, limit, error)) return false;
    if (answer.code != kAccept) {
      *error = "the server runs another test or connection type (" +
               std::string(Name(static_cast<TestKind>(answer.value & 0xFF))) + " over " +
               Name(static_cast<Transport>(answer.value >> 8)) + ")";
      return false;
    }
  } else {
    TestPlan theirs;
    if (!oob.ReceiveValue(&theirs, limit, error)) return false;
    const uint32_t mine = plan.test | (plan.transport << 8);
    if (!AcceptPlan(o, theirs, error)) {
      std::string ignored;
      oob.SendValue(Token{kReject, mine, 0}, &ignored);
      return false;
    }
    plan = theirs;  // sizes, iterations, depths, validation: the client's
    if (!oob.SendValue(Token{kAccept, 0, 0}, error)) return false;
  }

  DescribePlan(plan, client, o.kernel, report);

  // Set-up; whichever side fails tells the other before the QP descriptions cross.
  Endpoint endpoint(&backend);
  std::string setup_error;
  bool ready = backend.OpenCa(o.ca_guid, client ? 1 : 0, &setup_error) == Status::SUCCESS &&
               endpoint.Create(plan, o.port, &setup_error);
  report->ca_guid = backend.ca_guid();
  Token theirs;
  if (!oob.Exchange(Token{ready ? kReady : kFailed, 0, 0}, &theirs, limit, error) || !ready) {
    if (!ready) *error = setup_error;
    endpoint.Destroy();
    backend.Close();
    return false;
  }
  PeerInfo peer;
  bool ok = oob.SendValue(endpoint.LocalInfo(), error) && oob.ReceiveValue(&peer, limit, error) &&
            endpoint.Connect(peer, error);
  if (ok) {
    ok = RunPlan(endpoint, &oob, plan, client, LimitsOf(o), report, error);
  }
  endpoint.Destroy();
  backend.Close();
  return ok;
}

}  // namespace softib::perf
