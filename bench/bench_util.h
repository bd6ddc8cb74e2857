// Small helpers shared by the speed-path benchmarks: summaries, CPU pinning, timing.
#pragma once

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace softib::bench {

[[noreturn]] inline void Die(const char* program, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", program, what.c_str());
  std::exit(1);
}

inline uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

struct Summary {
  double min = 0, typical = 0, avg = 0, p99 = 0, max = 0;
};

inline Summary Summarize(std::vector<double> samples) {
  Summary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  double sum = 0;
  for (double v : samples) sum += v;
  size_t n = samples.size();
  s.min = samples.front();
  s.typical = samples[n / 2];
  s.avg = sum / static_cast<double>(n);
  s.p99 = samples[std::min(n - 1, n * 99 / 100)];
  s.max = samples.back();
  return s;
}

// Pins the calling process to one CPU (< 0: leaves it free). False if the CPU is not
// available (then it stays free).
inline bool PinToCpu(int cpu) {
  if (cpu < 0) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

inline void CpuRelax() { __builtin_ia32_pause(); }

}  // namespace softib::bench
