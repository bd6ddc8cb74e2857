// What a run measured, and its perftest-style table and JSON forms.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "options.h"

namespace softib::perf {

struct LatencyRow {
  uint32_t bytes = 0;
  uint32_t iterations = 0;
  // Microseconds: one-way (half the round trip) for send/write, the round trip for
  // read/atomic, as perftest reports them.
  double t_min = 0, t_max = 0, t_typical = 0, t_avg = 0, t_stdev = 0, p99 = 0, p999 = 0;
};

struct BandwidthRow {
  uint32_t bytes = 0;
  uint32_t iterations = 0;
  double bw_peak = 0;     // MB/s, MB = 2^20 bytes as perftest
  double bw_average = 0;  // MB/s
  double msg_rate = 0;    // Mpps
};

struct RunReport {
  TestKind test = TestKind::kSendLat;
  Transport transport = Transport::kRc;
  bool client = true;
  bool kernel = false;
  uint64_t ca_guid = 0;
  uint32_t tx_depth = 0;
  uint32_t inline_size = 0;
  bool validate = false;
  uint64_t validated_messages = 0;  // payloads (or atomic results) checked
  uint64_t received_messages = 0;   // send tests, server side
  std::vector<LatencyRow> latency;
  std::vector<BandwidthRow> bandwidth;
};

// Summary of round-trip or one-way samples in microseconds.
LatencyRow SummarizeLatency(uint32_t bytes, std::vector<double> samples_us);

std::string FormatTable(const RunReport& report);
std::string FormatJson(const RunReport& report);

}  // namespace softib::perf
