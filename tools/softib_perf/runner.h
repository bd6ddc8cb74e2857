// The measured loops of every test, run on one side of a connected Endpoint pair, with
// barriers around each size (the server follows the plan the client sent): over the
// out-of-band channel, or (connected by the CM, no such channel) as control messages on
// the test's own QP. Latency: ping-pong (send, write) or request/response (read, atomic);
// bandwidth: up to tx_depth requests in flight, completions polled in batches.
#pragma once

#include <chrono>
#include <string>

#include "endpoint.h"
#include "oob.h"
#include "results.h"

namespace softib::perf {

struct RunLimits {
  std::chrono::milliseconds timeout{30000};  // without progress
  bool busy_poll = false;
};

// Runs every size of `plan` on `endpoint` (connected) as the client or the server side,
// filling `report` (rows on the client, counts on both). `oob` null: the barriers and the
// closing exchanges are zero-byte SENDs with immediate data on the QP (control_qp.h).
// False and `error` on a failed completion, a validation mismatch, a timeout or a peer
// that failed.
bool RunPlan(Endpoint& endpoint, OobChannel* oob, const TestPlan& plan, bool client,
             const RunLimits& limits, RunReport* report, std::string* error);

// The payload byte at `index` of a message of `size` bytes (what --validate checks).
inline uint8_t PatternByte(uint32_t size, uint64_t index) {
  return static_cast<uint8_t>((index * 7 + size * 13 + 1) & 0xFF);
}

}  // namespace softib::perf
