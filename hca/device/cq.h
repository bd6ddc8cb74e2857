// A completion queue: a ring of abi::WorkCompletion entries (the same struct PollCq and the
// user-mode CQ ring carry). When a completion finds the ring full, the CQ is in error: the
// completion is lost, later ones are refused, and CQ_OVERFLOW goes out as an async event
// (a CQ overrun is an affiliated asynchronous error, IBA 11.6.3; the IDL gives it its own
// code rather than the catch-all CQ_ERROR).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hca/device/events.h"
#include "softib/abi/types.h"

namespace softib::hca {

class CompletionQueue {
 public:
  CompletionQueue(uint32_t number, uint32_t capacity, AsyncEventSink* async_events,
                  CompletionEventSink* completion_events)
      : number_(number),
        ring_(capacity),
        async_events_(async_events),
        completion_events_(completion_events) {}

  uint32_t number() const { return number_; }
  uint32_t capacity() const { return static_cast<uint32_t>(ring_.size()); }
  uint32_t count() const { return count_; }
  bool in_error() const { return overflowed_; }

  // Adds a completion; false (and the CQ goes to error, once) when the ring is full.
  // `solicited`: the completion answers a packet with BTH:SE set.
  bool Push(const abi::WorkCompletion& wc, bool solicited = false);

  // Moves up to out.size() completions out, oldest first; returns how many.
  uint32_t Poll(std::span<abi::WorkCompletion> out);

  // Arms the CQ: the next completion (NEXT) or the next solicited or error completion
  // (SOLICITED) raises one completion event.
  void RequestNotify(abi::CqNotify what);

  // INVALID_CQ_SIZE when `capacity` is zero or smaller than the completions held.
  abi::Status Resize(uint32_t capacity);

 private:
  uint32_t number_;
  std::vector<abi::WorkCompletion> ring_;
  uint32_t head_ = 0;  // oldest entry
  uint32_t count_ = 0;
  bool overflowed_ = false;
  bool armed_ = false;
  bool armed_solicited_only_ = false;
  AsyncEventSink* async_events_;
  CompletionEventSink* completion_events_;
};

}  // namespace softib::hca
