// perftest's table layout (ib_*_lat / ib_*_bw) and a JSON form for scripts and benches.
#include "results.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace softib::perf {

namespace {

constexpr const char* kRule =
    "---------------------------------------------------------------------------------------";

std::string Format(const char* format, auto... args) {
  char text[512];
  std::snprintf(text, sizeof text, format, args...);
  return text;
}

const char* Title(TestKind kind) {
  switch (kind) {
    case TestKind::kSendLat:
      return "Send Latency Test";
    case TestKind::kWriteLat:
      return "RDMA_Write Latency Test";
    case TestKind::kReadLat:
      return "RDMA_Read Latency Test";
    case TestKind::kAtomicLat:
      return "Atomic Latency Test";
    case TestKind::kSendBw:
      return "Send BW Test";
    case TestKind::kWriteBw:
      return "RDMA_Write BW Test";
    case TestKind::kReadBw:
      return "RDMA_Read BW Test";
    case TestKind::kAtomicBw:
      return "Atomic BW Test";
  }
  return "?";
}

}  // namespace

LatencyRow SummarizeLatency(uint32_t bytes, std::vector<double> samples) {
  LatencyRow row;
  row.bytes = bytes;
  row.iterations = static_cast<uint32_t>(samples.size());
  if (samples.empty()) return row;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  double sum = 0;
  for (double v : samples) sum += v;
  row.t_min = samples.front();
  row.t_max = samples.back();
  row.t_typical = samples[n / 2];
  row.t_avg = sum / static_cast<double>(n);
  double squares = 0;
  for (double v : samples) squares += (v - row.t_avg) * (v - row.t_avg);
  row.t_stdev = std::sqrt(squares / static_cast<double>(n));
  row.p99 = samples[std::min(n - 1, static_cast<size_t>(std::ceil(n * 0.99)) - 1)];
  row.p999 = samples[std::min(n - 1, static_cast<size_t>(std::ceil(n * 0.999)) - 1)];
  return row;
}

std::string FormatTable(const RunReport& r) {
  std::string out;
  out += std::string(kRule) + "\n";
  out += Format("                    %s\n", Title(r.test));
  out += Format(" Connection type : %-8s Side           : %s\n", Name(r.transport),
                r.client ? "client" : "server");
  out += Format(" Device (CA GUID): %016llx  Path           : %s\n",
                static_cast<unsigned long long>(r.ca_guid),
                r.kernel ? "kernel clients, in-process node" : "user process, softibd");
  out += Format(" TX depth        : %-8u Max inline data: %u[B]\n", r.tx_depth, r.inline_size);
  if (r.validate) {
    out += Format(" Validation      : ON (%llu checked)\n",
                  static_cast<unsigned long long>(r.validated_messages));
  }
  out += std::string(kRule) + "\n";
  if (!r.client) {
    if (IsSend(r.test)) {
      out +=
          Format(" received %llu messages\n", static_cast<unsigned long long>(r.received_messages));
    }
    out += " (results are printed by the client)\n";
    out += std::string(kRule) + "\n";
    return out;
  }
  if (IsLatency(r.test)) {
    out +=
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
        "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]\n";
    for (const LatencyRow& row : r.latency) {
      out += Format(
          " %-7u %-10u    %-7.2f        %-7.2f      %-7.2f            %-7.2f        "
          "%-7.2f         %-7.2f                %-7.2f\n",
          row.bytes, row.iterations, row.t_min, row.t_max, row.t_typical, row.t_avg, row.t_stdev,
          row.p99, row.p999);
    }
  } else {
    out += " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n";
    for (const BandwidthRow& row : r.bandwidth) {
      out += Format(" %-10u %-10u     %-14.2f     %-14.2f       %.6f\n", row.bytes, row.iterations,
                    row.bw_peak, row.bw_average, row.msg_rate);
    }
  }
  out += std::string(kRule) + "\n";
  return out;
}

std::string FormatJson(const RunReport& r) {
  nlohmann::json j;
  j["test"] = Name(r.test);
  j["connection"] = Name(r.transport);
  j["side"] = r.client ? "client" : "server";
  j["path"] = r.kernel ? "kernel" : "user";
  j["ca_guid"] = Format("%016llx", static_cast<unsigned long long>(r.ca_guid));
  j["tx_depth"] = r.tx_depth;
  j["inline_size"] = r.inline_size;
  j["validate"] = r.validate;
  j["validated_messages"] = r.validated_messages;
  if (!r.client && IsSend(r.test)) j["received_messages"] = r.received_messages;
  nlohmann::json rows = nlohmann::json::array();
  for (const LatencyRow& row : r.latency) {
    rows.push_back({{"bytes", row.bytes},
                    {"iterations", row.iterations},
                    {"t_min_us", row.t_min},
                    {"t_max_us", row.t_max},
                    {"t_typical_us", row.t_typical},
                    {"t_avg_us", row.t_avg},
                    {"t_stdev_us", row.t_stdev},
                    {"p99_us", row.p99},
                    {"p99_9_us", row.p999}});
  }
  for (const BandwidthRow& row : r.bandwidth) {
    rows.push_back({{"bytes", row.bytes},
                    {"iterations", row.iterations},
                    {"bw_peak_mb_s", row.bw_peak},
                    {"bw_average_mb_s", row.bw_average},
                    {"msg_rate_mpps", row.msg_rate}});
  }
  j["results"] = rows;
  return j.dump() + "\n";
}

}  // namespace softib::perf
