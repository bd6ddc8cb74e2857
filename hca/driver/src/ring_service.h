// The ring service: one passive-level thread per HCA driver (per node) that consumes the
// send, receive and SRQ rings of every ring-mapped QP/SRQ of the driver's CAs and delivers
// the packets that work produces between the node's cabled ports inline, with no DPC per
// packet. It is the "hardware" behind the user-mode verbs provider (hca/uvp).
//
// One pass: each CA serves its rings under its own lock (SoftCa::ServeRings), then the
// node's packet wire is drained on this thread (PacketWire::DeliverQueued), which may
// produce completions and more packets (ACKs), until nothing moves. Idle, the thread polls
// the rings' producer indices without any lock for a bounded time (spin_ns), then sleeps on
// their doorbells (futex_waitv, hca/rings/doorbell.h) and on its own kick word, which CAs
// ring when a new ring appears.
//
// Two CPUs (the machines softib targets): the thread spins at most `spin_ns` (50 us) before
// sleeping, and yields the CPU while spinning, so a poller sharing its CPU gets it at once;
// see hca/driver/README.md. SOFTIB_HCA_CPU=<n> pins the thread to CPU n.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "softib/abi/rings.h"
#include "softib/kernel/node.h"

namespace softib::hca {

class SoftCa;
class PacketWire;

// What the idle thread watches of one ring: its control block (kept mapped by `keep`), and
// the consumer index the CA had reached when it last served it. Work = the producer moved,
// or the ring failed (shutdown).
struct RingWatch {
  abi::RingControl* control = nullptr;
  uint32_t consumed = 0;
  std::shared_ptr<void> keep;
};

struct RingServiceOptions {
  int64_t spin_ns = 50'000;
  // Bounded sleep when more rings are watched than one futex_waitv can hold (128): the
  // rest are then looked at every `overflow_poll_ns`.
  int64_t overflow_poll_ns = 1'000'000;
};

class RingService {
 public:
  RingService(kernel::Node* node, PacketWire* wire, RingServiceOptions options = {});
  ~RingService();  // Stop()
  RingService(const RingService&) = delete;
  RingService& operator=(const RingService&) = delete;

  // `ca` has rings now: served from now on (the thread starts on first use). Takes a
  // reference on the CA until Forget or Stop. Idempotent. Any IRQL (no blocking beyond a
  // short mutex), but never with the CA's lock held.
  void Serve(SoftCa* ca);
  // `ca` is going away: not served after this returns (waits for a pass in progress).
  // PASSIVE; never from the service thread.
  void Forget(SoftCa* ca);
  // Something changed that the sleeping thread cannot see in a ring (a new ring): re-scan.
  void Kick();
  // Ends the thread. PASSIVE.
  void Stop();

  // True on the service thread (the packet wire then leaves delivery to it).
  static bool OnServiceThread();

 private:
  void Run();
  bool Pass(std::vector<RingWatch>* watches);
  bool AnyWork(const std::vector<RingWatch>& watches) const;
  void Sleep(const std::vector<RingWatch>& watches, uint32_t kick_seen);

  kernel::Node* const node_;
  PacketWire* const wire_;
  const RingServiceOptions options_;
  std::mutex mutex_;  // cas_, thread_; held across a pass (Forget waits for it)
  std::vector<SoftCa*> cas_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  abi::RingControl kick_{};  // private memory; only its doorbell's wake_seq is used
};

}  // namespace softib::hca
