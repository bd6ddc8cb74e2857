// A manual-reset event, as the Event of an Overlapped: DeviceIoControl resets it, the
// completion sets it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace softib::user {

class CompletionEvent {
 public:
  void Set() {
    std::lock_guard lock(mutex_);
    signaled_ = true;
    cv_.notify_all();  // under the lock: a waiter may destroy the event once it returns
  }
  void Reset() {
    std::lock_guard lock(mutex_);
    signaled_ = false;
  }
  bool IsSet() const {
    std::lock_guard lock(mutex_);
    return signaled_;
  }
  void Wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [this] { return signaled_; });
  }
  // False on timeout.
  bool WaitFor(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [this] { return signaled_; });
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool signaled_ = false;
};

}  // namespace softib::user
