#include "softib/kernel/spin_lock.h"

#include "softib/kernel/verifier.h"

namespace softib::kernel {

void KSpinLock::Lock(const char* what) {
  if (HeldByCurrentThread()) VerifierFail("%s: spin lock %p acquired recursively", what, this);
  mutex_.lock();
  owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
}

void KSpinLock::Unlock(const char* what) {
  if (!HeldByCurrentThread()) {
    VerifierFail("%s: spin lock %p released by a thread that does not hold it", what, this);
  }
  owner_.store(std::thread::id{}, std::memory_order_relaxed);
  mutex_.unlock();
}

Irql KSpinLock::Acquire() {
  const Irql previous = RaiseIrql(Irql::kDispatch);
  Lock("KeAcquireSpinLock");
  return previous;
}

void KSpinLock::Release(Irql previous) {
  Unlock("KeReleaseSpinLock");
  LowerIrql(previous);
}

void KSpinLock::AcquireAtDpcLevel() {
  if (CurrentIrql() != Irql::kDispatch) {
    VerifierFail("IRQL violation: KeAcquireSpinLockAtDpcLevel called at %s",
                 IrqlName(CurrentIrql()));
  }
  Lock("KeAcquireSpinLockAtDpcLevel");
}

void KSpinLock::ReleaseFromDpcLevel() { Unlock("KeReleaseSpinLockFromDpcLevel"); }

}  // namespace softib::kernel
