// KTIMER: a one-shot or periodic timer on a node. When it expires it becomes signalled and
// queues its DPC (if any). The node's DPC thread keeps the timers.
#pragma once

#include <chrono>
#include <cstdint>

namespace softib::kernel {

class Node;
struct Kdpc;

// Initialize with KeInitializeTimer; every field belongs to the node.
struct Ktimer {
  Node* node = nullptr;
  Kdpc* dpc = nullptr;
  std::chrono::steady_clock::time_point due{};
  std::chrono::nanoseconds period{0};
  uint64_t key = 0;  // orders timers with equal due times
  bool set = false;
  bool signalled = false;
};

void KeInitializeTimer(Ktimer* timer, Node* node);

// Arms `timer` to expire `due_time` from now (relative), then every `period` if non-zero,
// queueing `dpc` (may be null) each time. Re-arming an armed timer replaces its settings.
// Returns true when the timer was already armed (as KeSetTimerEx does).
bool KeSetTimer(Ktimer* timer, std::chrono::nanoseconds due_time, Kdpc* dpc,
                std::chrono::nanoseconds period = std::chrono::nanoseconds{0});

// Disarms `timer`; true when it was armed. A DPC it already queued may still run (see
// KeFlushQueuedDpcs).
bool KeCancelTimer(Ktimer* timer);

// KeReadStateTimer: true once the timer expired since it was last armed.
bool KeReadStateTimer(Ktimer* timer);

}  // namespace softib::kernel
