// One side of a softib_perf run from a connected out-of-band channel to the last row: the
// client sends its plan, the server checks it; each side opens its CA, builds its
// Endpoint, they swap QP descriptions, connect and run the plan.
#pragma once

#include <string>

#include "backend.h"
#include "oob.h"
#include "options.h"
#include "results.h"

namespace softib::perf {

TestPlan MakePlan(const Options& options);

// False and `error` when anything fails; the peer is told (kFailed) when it can be.
bool RunSession(const Options& options, bool client, Backend& backend, OobChannel& oob,
                RunReport* report, std::string* error);

}  // namespace softib::perf
