#include "softib/rings/spin_gate.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <cstring>

namespace softib::rings {

namespace {

uint64_t GateNowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// One sample: true when a CPU is free; true also when /proc/loadavg cannot be read (then the
// callers' bounded spins behave as before this gate existed).
bool SampleSpinPays() {
  static const int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  static const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (fd < 0 || cpus <= 0) return true;
  char text[128];
  const ssize_t n = pread(fd, text, sizeof text - 1, 0);
  if (n <= 0) return true;
  const std::optional<uint32_t> runnable =
      ParseRunnable(std::string_view(text, static_cast<size_t>(n)));
  return !runnable || SpinPays(*runnable, static_cast<uint32_t>(cpus));
}

}  // namespace

std::optional<uint32_t> ParseRunnable(std::string_view text) {
  // Three averages, then "R/T".
  size_t pos = 0;
  for (int field = 0; field < 3; ++field) {
    pos = text.find(' ', pos);
    if (pos == std::string_view::npos) return std::nullopt;
    ++pos;
  }
  uint32_t runnable = 0;
  const char* first = text.data() + pos;
  const char* last = text.data() + text.size();
  auto [end, ec] = std::from_chars(first, last, runnable);
  if (ec != std::errc() || end == first || end == last || *end != '/') return std::nullopt;
  return runnable;
}

SpinMode SpinModeFromEnv(const char* value) {
  if (value == nullptr) return SpinMode::kAuto;
  if (std::strcmp(value, "always") == 0) return SpinMode::kAlways;
  if (std::strcmp(value, "never") == 0) return SpinMode::kNever;
  return SpinMode::kAuto;
}

bool SpinMayPay() {
  static const SpinMode mode = SpinModeFromEnv(std::getenv("SOFTIB_SPIN"));
  if (mode != SpinMode::kAuto) return mode == SpinMode::kAlways;
  static std::atomic<uint64_t> next_sample_ns{0};
  static std::atomic<bool> pays{true};
  const uint64_t now = GateNowNs();
  uint64_t due = next_sample_ns.load(std::memory_order_relaxed);
  // One thread takes each sample; the others use the last one meanwhile.
  if (now >= due && next_sample_ns.compare_exchange_strong(due, now + kSpinGateSampleNs,
                                                           std::memory_order_relaxed)) {
    pays.store(SampleSpinPays(), std::memory_order_relaxed);
  }
  return pays.load(std::memory_order_relaxed);
}

}  // namespace softib::rings
