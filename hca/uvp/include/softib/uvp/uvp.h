// The user-mode verbs provider: the speed-path verbs (PostSend, PostRecv, PostSrqRecv,
// PollCq, PeekCq, RearmCq, RearmNCq) run here, in the calling process, on the rings the
// HCA shares through MapQpRings / MapSrqRing / MapCqRing. Nothing here crosses the
// channel; the HCA finds posted work through the rings' doorbells (hca/rings).
//
// Each object is single-threaded, like the queue it drives (one poster per QP, one poller per
// CQ); callers that share one serialize. Statuses are the ones the IDL lists for each verb.
#pragma once

#include <cstdint>
#include <span>

#include "softib/abi/runtime_ioctls.h"
#include "softib/abi/types.h"
#include "softib/rings/ring.h"

namespace softib::uvp {

using abi::Status;

// A QP's send ring and, unless it receives from an SRQ, its receive ring.
class QueuePair {
 public:
  // `base`/`region_size`: the mapped shared memory object of the MapQpRings reply.
  // INVALID_PARAMETER when a mapping does not describe a formatted ring inside the object.
  Status Attach(void* base, uint64_t region_size, const abi::RingMapping& send_ring,
                const abi::RingMapping& recv_ring);

  // Accepts requests in order until one is refused (its status is returned) or the ring is
  // full (INSUFFICIENT_RESOURCES); rings the doorbell once for the batch.
  Status PostSend(std::span<const abi::SendWorkRequest> wrs, uint32_t* num_posted);
  // INVALID_SETTING when the QP receives from an SRQ.
  Status PostRecv(std::span<const abi::RecvWorkRequest> wrs, uint32_t* num_posted);

 private:
  rings::RingProducer<abi::SendWorkRequest> send_;
  rings::RingProducer<abi::RecvWorkRequest> recv_;
};

class SharedReceiveQueue {
 public:
  Status Attach(void* base, uint64_t region_size, const abi::RingMapping& ring);
  Status PostSrqRecv(std::span<const abi::RecvWorkRequest> wrs, uint32_t* num_posted);

 private:
  rings::RingProducer<abi::RecvWorkRequest> ring_;
};

// How a poller waits for its next completion (CompletionQueue::Wait): spin, then sleep.
struct WaitPolicy {
  // How long to poll the ring before sleeping (each poll a load of the producer index).
  uint32_t spin_ns = 50000;
  // sched_yield() between polls: lets a process sharing this CPU run (see README.md).
  bool yield_while_spinning = false;
  // Then sleep on the CQ's doorbell futex for at most this long; < 0: no limit.
  int64_t sleep_timeout_ns = -1;
  // Spin only while a CPU is free for the spinner (hca/rings/spin_gate.h); with every CPU
  // busy, sleep on the doorbell at once.
  bool adaptive = false;
};

class CompletionQueue {
 public:
  Status Attach(void* base, uint64_t region_size, const abi::RingMapping& ring);

  // Takes up to wcs.size() completions. NOT_FOUND: none; OVERFLOW: the CQ overflowed and
  // every completion before the overflow has been taken.
  Status PollCq(std::span<abi::WorkCompletion> wcs, uint32_t* num_wcs);
  Status PeekCq(uint32_t* num_entries);
  // Asks the HCA for one completion event (GetCompletionEvent) at the next completion
  // (NEXT) or the next solicited or error one (SOLICITED). Poll once more after arming:
  // a completion that arrived before the arm does not fire it.
  Status RearmCq(abi::CqNotify notify);
  // An event once the CQ holds `num_entries` completions. INVALID_SETTING: 0 or more than
  // the CQ holds.
  Status RearmNCq(uint32_t num_entries);

  // Spin, then sleep on the doorbell, until a completion is ready (or the CQ fails or the
  // sleep times out). True if PollCq would find something or the CQ is in error.
  bool Wait(const WaitPolicy& policy);

  uint32_t capacity() const { return ring_.num_entries(); }

 private:
  rings::RingConsumer<abi::WorkCompletion> ring_;
  uint32_t arm_sequence_ = 0;
  uint32_t arm_count_sequence_ = 0;
};

}  // namespace softib::uvp
