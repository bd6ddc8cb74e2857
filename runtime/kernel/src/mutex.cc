#include "softib/kernel/mutex.h"

#include "softib/kernel/verifier.h"

namespace softib::kernel {

void FastMutex::Acquire() {
  VerifyBlockingAllowed("ExAcquireFastMutex");
  if (owner_.load(std::memory_order_relaxed) == std::this_thread::get_id()) {
    VerifierFail("ExAcquireFastMutex: fast mutex %p acquired recursively", this);
  }
  const Irql previous = RaiseIrql(Irql::kApc);
  mutex_.lock();
  owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  previous_ = previous;
}

void FastMutex::Release() {
  if (owner_.load(std::memory_order_relaxed) != std::this_thread::get_id()) {
    VerifierFail("ExReleaseFastMutex: fast mutex %p released by a thread that does not hold it",
                 this);
  }
  const Irql previous = previous_;
  owner_.store(std::thread::id{}, std::memory_order_relaxed);
  mutex_.unlock();
  LowerIrql(previous);
}

}  // namespace softib::kernel
