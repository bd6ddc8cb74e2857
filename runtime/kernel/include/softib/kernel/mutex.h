// FAST_MUTEX: a sleeping lock for code below DISPATCH. Acquiring blocks, so it requires
// IRQL below DISPATCH (verifier), and raises to APC while held, as on Windows.
#pragma once

#include <atomic>
#include <mutex>
#include <thread>

#include "softib/kernel/irql.h"

namespace softib::kernel {

class FastMutex {
 public:
  FastMutex() = default;
  FastMutex(const FastMutex&) = delete;
  FastMutex& operator=(const FastMutex&) = delete;

  void Acquire();  // ExAcquireFastMutex
  void Release();  // ExReleaseFastMutex

 private:
  std::mutex mutex_;
  std::atomic<std::thread::id> owner_{};
  Irql previous_ = Irql::kPassive;  // written by the holder only
};

}  // namespace softib::kernel
