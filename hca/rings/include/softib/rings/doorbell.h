// Doorbells: how a ring's consumer sleeps when the ring is empty and how its producer
// wakes it, without a system call on the hot path. Each ring's RingDoorbellLine holds a
// futex word (`wake_seq`) and a `sleeping` flag. The consumer announces `sleeping`, then
// re-checks the ring, then sleeps on `wake_seq`; the producer publishes its index, then
// looks at `sleeping` and, only if it is set, bumps `wake_seq` and wakes. Both the index
// store and the `sleeping` store are seq_cst (an xchg on x86), and so are the loads after
// them (Dekker): the two sides cannot both miss each other. (seq_cst operations rather
// than fences, which ThreadSanitizer does not model.)
//
// The futex is a shared (not PRIVATE) futex: the word lives in a memfd mapped by two
// processes. Everything here tolerates any value the other process writes: the worst it
// can cause is a spurious wake-up or a sleep that ends at its timeout.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>

#include "softib/abi/rings.h"

namespace softib::rings {

// futex(2) on a shared word. Wait returns when woken, when *word != expected, on a signal
// or after `timeout_ns` (< 0: no timeout).
void FutexWait(uint32_t* word, uint32_t expected, int64_t timeout_ns);
void FutexWakeAll(uint32_t* word);

// Producer side, after publishing its index with a seq_cst store: wakes the consumer if it
// sleeps. Costs one load when nobody sleeps.
inline void RingDoorbell(abi::RingControl* control) {
  if (std::atomic_ref<uint32_t>(control->doorbell.sleeping).load(std::memory_order_seq_cst)) {
    std::atomic_ref<uint32_t>(control->doorbell.wake_seq).fetch_add(1, std::memory_order_release);
    FutexWakeAll(&control->doorbell.wake_seq);
  }
}

// Consumer side: `has_work()` re-reads the ring (it must load the producer index seq_cst). Sleeps
// until woken or `timeout_ns`; returns has_work()'s last value without sleeping if there is work
// after announcing the sleep.
template <typename HasWork>
bool SleepUntilRung(abi::RingControl* control, HasWork has_work, int64_t timeout_ns) {
  std::atomic_ref<uint32_t> seq(control->doorbell.wake_seq);
  std::atomic_ref<uint32_t> sleeping(control->doorbell.sleeping);
  uint32_t observed = seq.load(std::memory_order_acquire);
  sleeping.store(1, std::memory_order_seq_cst);
  bool work = has_work();
  if (!work) {
    FutexWait(&control->doorbell.wake_seq, observed, timeout_ns);
    work = has_work();
  }
  sleeping.store(0, std::memory_order_relaxed);
  return work;
}

// The HCA thread's idle wait over many rings (one per QP/SRQ it serves): announces
// `sleeping` on every ring, re-checks them with `has_work(i)`, then sleeps until any
// doorbell rings (futex_waitv; where that is missing, a sleep on the first ring bounded by
// `fallback_slice_ns`) or `timeout_ns`. Returns true if some ring had or got work.
template <typename HasWork>
bool SleepUntilAnyRung(std::span<abi::RingControl* const> controls, HasWork has_work,
                       int64_t timeout_ns);

// Internal: futex_waitv over the rings' wake_seq words.
bool FutexWaitAny(std::span<abi::RingControl* const> controls, std::span<const uint32_t> observed,
                  int64_t timeout_ns);

template <typename HasWork>
bool SleepUntilAnyRung(std::span<abi::RingControl* const> controls, HasWork has_work,
                       int64_t timeout_ns) {
  constexpr std::size_t kMax = 128;  // FUTEX_WAITV_MAX
  if (controls.empty() || controls.size() > kMax) return false;
  uint32_t observed[kMax];
  for (std::size_t i = 0; i < controls.size(); ++i) {
    observed[i] =
        std::atomic_ref<uint32_t>(controls[i]->doorbell.wake_seq).load(std::memory_order_acquire);
    std::atomic_ref<uint32_t>(controls[i]->doorbell.sleeping).store(1, std::memory_order_seq_cst);
  }
  bool work = false;
  for (std::size_t i = 0; i < controls.size() && !work; ++i) work = has_work(i);
  if (!work) {
    FutexWaitAny(controls, std::span<const uint32_t>(observed, controls.size()), timeout_ns);
    for (std::size_t i = 0; i < controls.size() && !work; ++i) work = has_work(i);
  }
  for (abi::RingControl* control : controls) {
    std::atomic_ref<uint32_t>(control->doorbell.sleeping).store(0, std::memory_order_relaxed);
  }
  return work;
}

}  // namespace softib::rings
