// One side of a softib_perf run connected the IB way, with no out-of-band channel
// (--service-id, perftest's -R in spirit): the server registers a ServiceRecord (with a
// lease the AL renews) and listens on the CM; the client finds the ServiceRecord through
// the SA (GetTable by ServiceID), asks the SA for a PathRecord to its GID (through the AL's
// path cache) and sends a REQ carrying its plan (cm_private_data.h). Both QPs go to RTR and
// RTS with the attributes the CM derived; barriers travel on the QP (control_qp.h); the
// client disconnects with DREQ, both wait for time-wait to end. User processes only.
#pragma once

#include <string>

#include "options.h"
#include "results.h"

namespace softib::perf {

// What it finds on its way (the ServiceRecord's GID, the path's LIDs, the connection's
// steps) goes to stderr as "softib_perf: server|client: ..." lines. False and `error`: no
// ServiceRecord, a REJ (with its reason), a timeout, a failed run.
bool RunServiceSession(const Options& options, RunReport* report, std::string* error);

}  // namespace softib::perf
