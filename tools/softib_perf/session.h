// One side of a softib_perf run from a connected out-of-band channel to the last row: the
// client sends its plan, the server checks it; each side opens its CA, builds its
// Endpoint, they swap QP descriptions, connect and run the plan.
#pragma once

#include <string>

#include "backend.h"
#include "oob.h"
#include "options.h"
#include "results.h"
#include "runner.h"

namespace softib::perf {

TestPlan MakePlan(const Options& options);
// The plan must be one this side could have parsed itself.
bool PlanIsSane(const TestPlan& plan, std::string* error);
// A server takes the client's plan when it is sane and of its own test and transport.
bool AcceptPlan(const Options& options, const TestPlan& theirs, std::string* error);
// The report's header fields from the plan being run.
void DescribePlan(const TestPlan& plan, bool client, bool kernel, RunReport* report);
inline RunLimits LimitsOf(const Options& o) {
  return RunLimits{std::chrono::seconds(o.timeout_s), o.busy_poll};
}

// False and `error` when anything fails; the peer is told (kFailed) when it can be.
bool RunSession(const Options& options, bool client, Backend& backend, OobChannel& oob,
                RunReport* report, std::string* error);

}  // namespace softib::perf
