// Adaptive waiting (DESIGN.md, "Where the engine runs"): whether a waiter should spin before
// it sleeps on a futex. Spinning pays only while a CPU is free for the spinner. With every CPU
// taken (busy processes beside the data path, or more spinners than CPUs), a spinner holds a
// CPU that the thread it waits for could use, and each sched_yield puts it behind the busy
// tasks for a whole time slice (milliseconds), while a sleeper woken by FUTEX_WAKE runs at
// once. So: spin (briefly, bounded by the caller) when the machine has a free CPU, else go
// straight to the futex.
//
// "Free" is judged from the kernel's count of runnable tasks (the fourth field of
// /proc/loadavg, "R/T": tasks running or waiting for a CPU right now, the reader included),
// sampled at most every kSampleNs per process (one pread of an fd kept open; a system call
// costs microseconds in the VMs softib targets, a sample per wait would cost more than the
// spin it saves). SOFTIB_SPIN=always|never overrides the sample (benchmarks, experiments).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace softib::rings {

// The rule: a spinner (the caller, counted in `runnable`) has a CPU of its own.
constexpr bool SpinPays(uint32_t runnable_including_caller, uint32_t cpus) {
  return runnable_including_caller <= cpus;
}

// The runnable count of a /proc/loadavg text ("0.52 0.58 0.59 3/467 12345"); nullopt if the
// text is not in that form.
std::optional<uint32_t> ParseRunnable(std::string_view loadavg);

enum class SpinMode { kAuto, kAlways, kNever };
// SOFTIB_SPIN: "always", "never", anything else (or unset) auto.
SpinMode SpinModeFromEnv(const char* value);

// True when a waiter should spin now (per SOFTIB_SPIN and the latest sample). Thread-safe;
// costs two relaxed loads and a clock read between samples.
bool SpinMayPay();

constexpr uint64_t kSpinGateSampleNs = 2'000'000;

}  // namespace softib::rings
