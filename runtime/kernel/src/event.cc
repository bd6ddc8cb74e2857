#include "softib/kernel/event.h"

#include <thread>
#include <utility>

#include "softib/kernel/irql.h"

namespace softib::kernel {

bool KEvent::Set() {
  // Notified under the lock: a waiter may destroy the event as soon as it sees it set.
  std::lock_guard lock(mutex_);
  const bool previous = signalled_;
  signalled_ = true;
  if (type_ == EventType::kNotification) {
    cv_.notify_all();
  } else {
    cv_.notify_one();
  }
  return previous;
}

bool KEvent::Reset() {
  std::lock_guard lock(mutex_);
  return std::exchange(signalled_, false);
}

bool KEvent::IsSet() const {
  std::lock_guard lock(mutex_);
  return signalled_;
}

Status KeWaitForSingleObject(KEvent* event, std::optional<std::chrono::nanoseconds> timeout) {
  if (!timeout || timeout->count() != 0) VerifyBlockingAllowed("KeWaitForSingleObject");
  std::unique_lock lock(event->mutex_);
  const auto signalled = [event] { return event->signalled_; };
  if (!timeout) {
    event->cv_.wait(lock, signalled);
  } else if (!event->cv_.wait_for(lock, *timeout, signalled)) {
    return Status::TIMEOUT;
  }
  if (event->type_ == EventType::kSynchronization) event->signalled_ = false;
  return Status::SUCCESS;
}

void KeDelayExecutionThread(std::chrono::nanoseconds interval) {
  VerifyBlockingAllowed("KeDelayExecutionThread");
  std::this_thread::sleep_for(interval);
}

}  // namespace softib::kernel
