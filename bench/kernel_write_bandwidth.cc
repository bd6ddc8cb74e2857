// softib_bench_kernel_write: RDMA WRITE bandwidth between two kernel clients of an
// in-process node (two CAs back to back; the HCA moves the bytes with memcpy), against
// memcpy of the same sizes measured in the same run (goal: >= 0.6 x memcpy).
//
// Rows, 4 KiB ... 4 MiB (or one size with -s): softib_perf's write_bw loop (RC, tx depth
// -t, default 16) as ib_write_bw -a prints it, the memcpy floor (best of 3 rounds of the
// same number of bytes) and the ratio of the averages.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_util.h"
#include "kernel_backend.h"
#include "results.h"

namespace {

using softib::bench::NowNs;
namespace perf = softib::perf;

constexpr const char* kProgram = "softib_bench_kernel_write";
[[noreturn]] void Die(const std::string& what) { softib::bench::Die(kProgram, what); }

struct Options {
  uint32_t size = 0;                    // 0: 4 KiB ... 4 MiB
  uint64_t bytes_per_size = 64u << 20;  // what each size moves
  uint32_t tx_depth = 16;
  bool csv = false;
};

double MemcpyGbs(uint32_t size, uint32_t iterations) {
  std::vector<char> from(size, 1), to(size, 2);
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    const uint64_t start = NowNs();
    for (uint32_t i = 0; i < iterations; ++i) {
      std::memcpy(to.data(), from.data(), size);
      asm volatile("" ::"r"(to.data()) : "memory");
    }
    best = std::max(best, static_cast<double>(size) * iterations / (NowNs() - start));
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> uint64_t {
      if (i + 1 >= argc) Die(arg + " needs a value");
      char* end = nullptr;
      const unsigned long long v = std::strtoull(argv[++i], &end, 10);
      if (*end != '\0' || v == 0) Die("bad value for " + arg);
      return v;
    };
    if (arg == "-s" || arg == "--size") {
      o.size = static_cast<uint32_t>(value());
      if (o.size > (4u << 20)) Die("--size: at most 4 MiB");
    } else if (arg == "--bytes") {
      o.bytes_per_size = value();
    } else if (arg == "-t" || arg == "--tx-depth") {
      o.tx_depth = static_cast<uint32_t>(std::min<uint64_t>(value(), 1024));
    } else if (arg == "--csv") {
      o.csv = true;
    } else {
      std::printf(
          "usage: softib_bench_kernel_write [-s BYTES] [--bytes N] [-t DEPTH] [--csv]\n"
          "  -s, --size BYTES  one size (default: 4 KiB ... 4 MiB)\n"
          "  --bytes N         bytes each size moves (default 64 MiB; at least 4 messages)\n"
          "  -t, --tx-depth N  RDMA WRITEs in flight (default 16)\n"
          "  --csv             comma-separated rows\n");
      return arg == "-h" || arg == "--help" ? 0 : 2;
    }
  }
  std::vector<uint32_t> sizes;
  if (o.size) {
    sizes.push_back(o.size);
  } else {
    for (uint32_t s = 4096; s <= (4u << 20); s *= 2) sizes.push_back(s);
  }

  std::string error;
  auto node = perf::InProcessNode::Boot("bench_kernel_write", &error);
  if (node == nullptr) Die(error);

  const char* rule =
      "---------------------------------------------------------------------------------------";
  if (o.csv) {
    std::printf("bytes,iterations,rdma_write_gbs,rdma_write_peak_gbs,memcpy_gbs,ratio\n");
  } else {
    std::printf("%s\n", rule);
    std::printf(
        "   RDMA WRITE between kernel clients (in-process node, RC, tx depth %u) vs memcpy\n",
        o.tx_depth);
    std::printf(" GB/s = 10^9 bytes per second; ratio = RDMA WRITE average / memcpy\n");
    std::printf("%s\n", rule);
    std::printf(" %-9s %-11s %-15s %-15s %-13s %-8s\n", "#bytes", "#iterations", "write avg[GB/s]",
                "write peak[GB/s]", "memcpy[GB/s]", "ratio");
  }
  for (uint32_t size : sizes) {
    const uint32_t iterations =
        static_cast<uint32_t>(std::max<uint64_t>(4, o.bytes_per_size / size));
    perf::Options p;
    p.test = perf::TestKind::kWriteBw;
    p.sizes = {size};
    p.iterations = iterations;
    p.tx_depth = o.tx_depth;
    p.kernel = true;
    p.timeout_s = 60;
    perf::RunReport report, server;
    if (!perf::RunInProcess(*node, p, &report, &server, &error)) Die(error);
    const perf::BandwidthRow& row = report.bandwidth.at(0);
    const double write_gbs = row.bw_average * (1 << 20) / 1e9;
    const double peak_gbs = row.bw_peak * (1 << 20) / 1e9;
    const double memcpy_gbs = MemcpyGbs(size, iterations);
    std::printf(
        o.csv ? "%u,%u,%.4f,%.4f,%.3f,%.5f\n" : " %-9u %-11u %-15.4f %-16.4f %-13.2f %-8.5f\n",
        size, iterations, write_gbs, peak_gbs, memcpy_gbs, write_gbs / memcpy_gbs);
    std::fflush(stdout);
  }
  if (!o.csv) std::printf("%s\n", rule);
  return 0;
}
