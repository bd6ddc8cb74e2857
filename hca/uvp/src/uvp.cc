#include "softib/uvp/uvp.h"

#include <sched.h>
#include <time.h>

#include <atomic>

#include "softib/rings/entry_checks.h"
#include "softib/rings/spin_gate.h"

namespace softib::uvp {
namespace {

using rings::RingControl;
using rings::RingKind;

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Checks a mapping (geometry within the object, header the HCA wrote) and finds its parts.
bool Locate(void* base, uint64_t region_size, const abi::RingMapping& mapping, RingKind kind,
            RingControl** control) {
  if (base == nullptr || !rings::CheckMapping(mapping, region_size, kind)) return false;
  *control = rings::ControlAt(base, mapping);
  return rings::CheckHeader(*(*control), mapping, kind);
}

template <typename Entry>
Status AttachProducer(void* base, uint64_t region_size, const abi::RingMapping& mapping,
                      RingKind kind, rings::RingProducer<Entry>* ring) {
  RingControl* control = nullptr;
  if (!Locate(base, region_size, mapping, kind, &control)) return Status::INVALID_PARAMETER;
  *ring = rings::RingProducer<Entry>(control, rings::EntriesAt<Entry>(base, mapping),
                                     mapping.num_entries, rings::Side::kClient);
  return Status::SUCCESS;
}

// Copies what fits, stopping at the first refused request; one doorbell for the batch.
template <typename Entry, typename Check>
Status Post(rings::RingProducer<Entry>& ring, std::span<const Entry> wrs, uint32_t* num_posted,
            Check check, Status in_error) {
  *num_posted = 0;
  if (ring.error() != rings::RingError::NONE) return in_error;
  Status status = Status::SUCCESS;
  uint32_t posted = 0;
  for (const Entry& wr : wrs) {
    status = check(wr);
    if (status != Status::SUCCESS) break;
    if (!ring.TryPush(wr)) {
      status = ring.error() != rings::RingError::NONE ? in_error : Status::INSUFFICIENT_RESOURCES;
      break;
    }
    ++posted;
  }
  if (posted != 0) ring.Publish();
  *num_posted = posted;
  return status;
}

}  // namespace

Status QueuePair::Attach(void* base, uint64_t region_size, const abi::RingMapping& send_ring,
                         const abi::RingMapping& recv_ring) {
  Status s = AttachProducer(base, region_size, send_ring, RingKind::SEND, &send_);
  if (s != Status::SUCCESS || recv_ring.num_entries == 0) return s;
  return AttachProducer(base, region_size, recv_ring, RingKind::RECV, &recv_);
}

Status QueuePair::PostSend(std::span<const abi::SendWorkRequest> wrs, uint32_t* num_posted) {
  if (!send_.attached()) return Status::INVALID_QP_HANDLE;
  return Post(send_, wrs, num_posted, rings::CheckSendWorkRequest, Status::INVALID_QP_STATE);
}

Status QueuePair::PostRecv(std::span<const abi::RecvWorkRequest> wrs, uint32_t* num_posted) {
  *num_posted = 0;
  if (!send_.attached()) return Status::INVALID_QP_HANDLE;
  if (!recv_.attached()) return Status::INVALID_SETTING;
  return Post(recv_, wrs, num_posted, rings::CheckRecvWorkRequest, Status::INVALID_QP_STATE);
}

Status SharedReceiveQueue::Attach(void* base, uint64_t region_size, const abi::RingMapping& ring) {
  return AttachProducer(base, region_size, ring, RingKind::SRQ, &ring_);
}

Status SharedReceiveQueue::PostSrqRecv(std::span<const abi::RecvWorkRequest> wrs,
                                       uint32_t* num_posted) {
  *num_posted = 0;
  if (!ring_.attached()) return Status::INVALID_SRQ_HANDLE;
  // A failed SRQ cannot take work; the verb has no state status, so it is out of resources.
  return Post(ring_, wrs, num_posted, rings::CheckRecvWorkRequest, Status::INSUFFICIENT_RESOURCES);
}

Status CompletionQueue::Attach(void* base, uint64_t region_size, const abi::RingMapping& ring) {
  RingControl* control = nullptr;
  if (!Locate(base, region_size, ring, RingKind::CQ, &control)) return Status::INVALID_PARAMETER;
  ring_ = rings::RingConsumer<abi::WorkCompletion>(
      control, rings::EntriesAt<abi::WorkCompletion>(base, ring), ring.num_entries,
      rings::Side::kClient);
  // Continue the sequences where a previous attachment left them.
  arm_sequence_ = std::atomic_ref<uint32_t>(control->arm.arm_request).load() >> 2;
  arm_count_sequence_ = std::atomic_ref<uint32_t>(control->arm.arm_count_seq).load();
  return Status::SUCCESS;
}

Status CompletionQueue::PollCq(std::span<abi::WorkCompletion> wcs, uint32_t* num_wcs) {
  *num_wcs = 0;
  if (!ring_.attached()) return Status::INVALID_CQ_HANDLE;
  uint32_t taken = 0;
  while (taken < wcs.size() &&
         ring_.Pop(&wcs[taken], /*defer_release=*/true) == rings::PopResult::kEntry) {
    ++taken;
  }
  if (taken != 0) {
    ring_.Release();
    *num_wcs = taken;
    return Status::SUCCESS;
  }
  switch (ring_.error()) {
    case rings::RingError::NONE:
      return Status::NOT_FOUND;
    case rings::RingError::OVERFLOW:
      return Status::OVERFLOW;
    default:
      return Status::INVALID_CQ_HANDLE;  // the CQ is unusable (destroyed or corrupt)
  }
}

Status CompletionQueue::PeekCq(uint32_t* num_entries) {
  *num_entries = 0;
  if (!ring_.attached()) return Status::INVALID_CQ_HANDLE;
  *num_entries = ring_.Available();
  return Status::SUCCESS;
}

Status CompletionQueue::RearmCq(abi::CqNotify notify) {
  if (!ring_.attached()) return Status::INVALID_CQ_HANDLE;
  if (!abi::IsValid(notify)) return Status::INVALID_PARAMETER;
  uint32_t mode = notify == abi::CqNotify::NEXT ? 1 : 2;
  ++arm_sequence_;
  std::atomic_ref<uint32_t>(ring_.control()->arm.arm_request)
      .store((arm_sequence_ << 2) | mode, std::memory_order_seq_cst);
  // seq_cst against the HCA's push: either the caller's next poll sees the completion or the
  // HCA sees the arm.
  return Status::SUCCESS;
}

Status CompletionQueue::RearmNCq(uint32_t num_entries) {
  if (!ring_.attached()) return Status::INVALID_CQ_HANDLE;
  if (num_entries == 0 || num_entries > ring_.num_entries()) return Status::INVALID_SETTING;
  RingControl* control = ring_.control();
  std::atomic_ref<uint32_t>(control->arm.arm_count).store(num_entries, std::memory_order_relaxed);
  std::atomic_ref<uint32_t>(control->arm.arm_count_seq)
      .store(++arm_count_sequence_, std::memory_order_seq_cst);
  return Status::SUCCESS;
}

bool CompletionQueue::Wait(const WaitPolicy& policy) {
  if (!ring_.attached()) return false;
  auto ready = [this] { return ring_.Available() != 0 || ring_.error() != rings::RingError::NONE; };
  if (ready()) return true;
  if (policy.spin_ns != 0 && (!policy.adaptive || rings::SpinMayPay())) {
    const uint64_t deadline = MonotonicNs() + policy.spin_ns;
    for (uint32_t polls = 1;; ++polls) {
      if (policy.yield_while_spinning) {
        sched_yield();
      } else {
        __builtin_ia32_pause();
      }
      if (ready()) return true;
      // A clock read costs about as much as a few polls: look at it every 16th.
      if ((policy.yield_while_spinning || polls % 16 == 0) && MonotonicNs() >= deadline) break;
    }
  }
  return ring_.Sleep(policy.sleep_timeout_ns);
}

}  // namespace softib::uvp
