// KEVENT, waits and sleeps. Waiting with a non-zero timeout and sleeping block, so both
// require IRQL below DISPATCH (verifier); setting an event is allowed up to DISPATCH.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>

#include "softib/kernel/status.h"

namespace softib::kernel {

enum class EventType : uint8_t {
  kNotification,     // stays signalled until reset; releases every waiter
  kSynchronization,  // auto-reset: releases one waiter
};

class KEvent {
 public:
  explicit KEvent(EventType type, bool signalled = false) : type_(type), signalled_(signalled) {}
  KEvent(const KEvent&) = delete;
  KEvent& operator=(const KEvent&) = delete;

  // KeSetEvent; returns the previous state.
  bool Set();
  // KeResetEvent; returns the previous state.
  bool Reset();
  // KeReadStateEvent.
  bool IsSet() const;

 private:
  friend Status KeWaitForSingleObject(KEvent* event,
                                      std::optional<std::chrono::nanoseconds> timeout);
  const EventType type_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool signalled_;
};

inline bool KeSetEvent(KEvent* event) { return event->Set(); }
inline bool KeResetEvent(KEvent* event) { return event->Reset(); }

// Waits until `event` is signalled: SUCCESS, or TIMEOUT after `timeout` (none: forever). A
// zero timeout only polls and is allowed at DISPATCH.
Status KeWaitForSingleObject(KEvent* event,
                             std::optional<std::chrono::nanoseconds> timeout = std::nullopt);

// Sleeps the calling thread (PASSIVE/APC only).
void KeDelayExecutionThread(std::chrono::nanoseconds interval);

}  // namespace softib::kernel
