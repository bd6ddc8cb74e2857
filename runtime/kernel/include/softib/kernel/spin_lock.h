// KSPIN_LOCK: acquiring raises the thread to DISPATCH, releasing restores the previous IRQL.
// Holders must not block (the verifier checks). Recursive acquisition and release by a
// thread that does not hold the lock are verifier failures.
#pragma once

#include <atomic>
#include <mutex>
#include <thread>

#include "softib/kernel/irql.h"

namespace softib::kernel {

class KSpinLock {
 public:
  KSpinLock() = default;
  KSpinLock(const KSpinLock&) = delete;
  KSpinLock& operator=(const KSpinLock&) = delete;

  // KeAcquireSpinLock: raises to DISPATCH and returns the previous IRQL.
  Irql Acquire();
  // KeReleaseSpinLock: releases and lowers to `previous`.
  void Release(Irql previous);
  // KeAcquireSpinLockAtDpcLevel / KeReleaseSpinLockFromDpcLevel: the caller is at DISPATCH.
  void AcquireAtDpcLevel();
  void ReleaseFromDpcLevel();

  bool HeldByCurrentThread() const {
    return owner_.load(std::memory_order_relaxed) == std::this_thread::get_id();
  }

 private:
  void Lock(const char* what);
  void Unlock(const char* what);

  std::mutex mutex_;  // a sleeping lock underneath: 2 cores are shared by many threads
  std::atomic<std::thread::id> owner_{};
};

// Holds a spin lock for a scope.
class SpinLockGuard {
 public:
  explicit SpinLockGuard(KSpinLock& lock) : lock_(lock), previous_(lock.Acquire()) {}
  ~SpinLockGuard() { lock_.Release(previous_); }
  SpinLockGuard(const SpinLockGuard&) = delete;
  SpinLockGuard& operator=(const SpinLockGuard&) = delete;

 private:
  KSpinLock& lock_;
  Irql previous_;
};

}  // namespace softib::kernel
