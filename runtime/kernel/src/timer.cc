// Timers live in the node's DPC engine, ordered by due time; its thread expires them.
#include "softib/kernel/timer.h"

#include "node_impl.h"

namespace softib::kernel {

void DpcEngine::FireExpiredTimers(std::chrono::steady_clock::time_point now) {
  while (!timers_.empty() && timers_.begin()->first.first <= now) {
    Ktimer* timer = timers_.begin()->second;
    timers_.erase(timers_.begin());
    timer->signalled = true;
    if (timer->period.count() > 0) {
      // A late periodic timer does not fire a burst to catch up.
      timer->due += timer->period;
      if (timer->due <= now) timer->due = now + timer->period;
      timer->key = next_timer_key_++;
      timers_.emplace(std::pair{timer->due, timer->key}, timer);
    } else {
      timer->set = false;
    }
    if (timer->dpc != nullptr) InsertLocked(timer->dpc, nullptr, nullptr);
  }
}

bool DpcEngine::SetTimer(Ktimer* timer, std::chrono::nanoseconds due, Kdpc* dpc,
                         std::chrono::nanoseconds period) {
  std::lock_guard lock(mutex_);
  const bool was_set = timer->set;
  if (was_set) timers_.erase({timer->due, timer->key});
  timer->dpc = dpc;
  timer->period = period;
  timer->due = std::chrono::steady_clock::now() + due;
  timer->key = next_timer_key_++;
  timer->set = true;
  timer->signalled = false;
  timers_.emplace(std::pair{timer->due, timer->key}, timer);
  cv_.notify_all();  // the earliest due time may have changed
  return was_set;
}

bool DpcEngine::CancelTimer(Ktimer* timer) {
  std::lock_guard lock(mutex_);
  if (!timer->set) return false;
  timers_.erase({timer->due, timer->key});
  timer->set = false;
  return true;
}

bool DpcEngine::ReadTimer(Ktimer* timer) {
  std::lock_guard lock(mutex_);
  return timer->signalled;
}

void KeInitializeTimer(Ktimer* timer, Node* node) {
  *timer = Ktimer{};
  timer->node = node;
}

bool KeSetTimer(Ktimer* timer, std::chrono::nanoseconds due_time, Kdpc* dpc,
                std::chrono::nanoseconds period) {
  return timer->node->impl().dpc.SetTimer(timer, due_time, dpc, period);
}

bool KeCancelTimer(Ktimer* timer) { return timer->node->impl().dpc.CancelTimer(timer); }

bool KeReadStateTimer(Ktimer* timer) { return timer->node->impl().dpc.ReadTimer(timer); }

}  // namespace softib::kernel
