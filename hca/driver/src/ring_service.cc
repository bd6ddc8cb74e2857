#include "hca/driver/src/ring_service.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "hca/driver/src/port_link.h"
#include "hca/driver/src/soft_ca.h"
#include "softib/rings/doorbell.h"
#include "softib/rings/spin_gate.h"
#include "steady_now.h"

namespace softib::hca {

namespace {

thread_local bool t_on_service_thread = false;

constexpr std::size_t kMaxWatched = 128;  // FUTEX_WAITV_MAX, the kick word included
constexpr uint32_t kYieldEvery = 16;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

uint32_t Load(uint32_t& word) {
  return std::atomic_ref<uint32_t>(word).load(std::memory_order_seq_cst);
}

bool RingHasWork(const RingWatch& watch) {
  return Load(watch.control->producer.producer_index) != watch.consumed ||
         std::atomic_ref<abi::RingError>(watch.control->status.error)
                 .load(std::memory_order_acquire) != abi::RingError::NONE;
}

// SOFTIB_HCA_CPU=<n>: pin the service thread (see the README's two-CPU notes).
void MaybePin() {
  const char* cpu = std::getenv("SOFTIB_HCA_CPU");
  if (cpu == nullptr || *cpu == '\0') return;
  const int n = std::atoi(cpu);
  if (n < 0 || n >= CPU_SETSIZE) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(n, &set);
  sched_setaffinity(0, sizeof(set), &set);  // best effort: a CPU outside our mask is refused
}

}  // namespace

RingService::RingService(kernel::Node* node, PacketWire* wire, RingServiceOptions options)
    : node_(node), wire_(wire), options_(options) {}

RingService::~RingService() { Stop(); }

bool RingService::OnServiceThread() { return t_on_service_thread; }

void RingService::Serve(SoftCa* ca) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_.load()) return;
    if (std::find(cas_.begin(), cas_.end(), ca) == cas_.end()) {
      ca->Reference();
      cas_.push_back(ca);
    }
    if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  }
  Kick();
}

void RingService::Forget(SoftCa* ca) {
  SoftCa* found = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);  // a pass in progress ends first
    auto it = std::find(cas_.begin(), cas_.end(), ca);
    if (it != cas_.end()) {
      found = *it;
      cas_.erase(it);
    }
  }
  if (found != nullptr) found->Dereference();
  Kick();
}

void RingService::Kick() {
  std::atomic_ref<uint32_t>(kick_.doorbell.wake_seq).fetch_add(1, std::memory_order_seq_cst);
  if (std::atomic_ref<uint32_t>(kick_.doorbell.sleeping).load(std::memory_order_seq_cst) != 0) {
    rings::FutexWakeAll(&kick_.doorbell.wake_seq);
  }
}

void RingService::Stop() {
  std::thread thread;
  std::vector<SoftCa*> cas;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
    thread = std::move(thread_);
    cas.swap(cas_);
  }
  Kick();
  if (thread.joinable()) thread.join();
  for (SoftCa* ca : cas) ca->Dereference();
}

bool RingService::Pass(std::vector<RingWatch>* watches) {
  watches->clear();
  bool worked = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (SoftCa* ca : cas_) worked |= ca->ServeRings(watches);
  }
  // Packets the work produced, and what they produce in turn (ACKs, completions), are
  // delivered here, not by a DPC per packet.
  while (wire_->DeliverQueued()) worked = true;
  return worked;
}

bool RingService::AnyWork(const std::vector<RingWatch>& watches) const {
  for (const RingWatch& watch : watches) {
    if (RingHasWork(watch)) return true;
  }
  return false;
}

void RingService::Sleep(const std::vector<RingWatch>& watches, uint32_t kick_seen) {
  abi::RingControl* controls[kMaxWatched];
  uint32_t consumed[kMaxWatched];
  std::size_t n = 0;
  controls[n] = &kick_;
  consumed[n++] = 0;  // unused: the kick word only wakes
  for (const RingWatch& watch : watches) {
    if (n == kMaxWatched) break;
    controls[n] = watch.control;
    consumed[n++] = watch.consumed;
  }
  const int64_t timeout = watches.size() + 1 > kMaxWatched ? options_.overflow_poll_ns : -1;
  rings::SleepUntilAnyRung(
      std::span<abi::RingControl* const>(controls, n),
      [&](std::size_t i) {
        if (i == 0) return Load(kick_.doorbell.wake_seq) != kick_seen || stop_.load();
        return RingHasWork(RingWatch{controls[i], consumed[i], nullptr});
      },
      timeout);
}

void RingService::Run() {
  t_on_service_thread = true;
  kernel::NodeScope scope(node_);
  MaybePin();
  std::vector<RingWatch> watches;
  bool slept = false;
  while (!stop_.load()) {
    if (Pass(&watches)) {
      slept = false;
      continue;
    }
    // Idle: watch the rings without locks for a while, then sleep on their doorbells. A
    // wake-up that found nothing (a timeout) goes back to sleep at once.
    const uint32_t kick_seen = Load(kick_.doorbell.wake_seq);
    // No spinning at all while every CPU is busy (rings/spin_gate.h): a spinner would
    // keep the CPU from the threads it waits for, and a yield costs a time slice.
    const bool spin = !slept && rings::SpinMayPay();
    const uint64_t spin_until = SteadyNowNs() + (spin ? options_.spin_ns : 0);
    bool work = false;
    for (uint32_t round = 1; !stop_.load() && SteadyNowNs() < spin_until; ++round) {
      if (AnyWork(watches) || Load(kick_.doorbell.wake_seq) != kick_seen) {
        work = true;
        break;
      }
      // Mostly `pause`; now and then a yield, so that a poller sharing this CPU runs.
      if (round % kYieldEvery == 0) {
        sched_yield();
      } else {
        CpuRelax();
      }
    }
    if (work || stop_.load()) {
      slept = false;
      continue;
    }
    Sleep(watches, kick_seen);
    slept = true;
    // Drop the mappings kept alive for the sleep before the next pass retakes them.
    watches.clear();
  }
  watches.clear();
}

}  // namespace softib::hca
