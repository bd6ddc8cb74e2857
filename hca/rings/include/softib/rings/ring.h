// Single-producer/single-consumer rings over shared memory: the speed path's "hardware
// interface". Both sides use these classes; which side is the HCA matters only for trust:
//
//  - Indices run freely modulo 2^32 (slot = index & mask). Each side keeps its own index and
//    the geometry in private memory and never reads them back from the shared block, so no
//    value the other process writes can move an access outside the ring.
//  - The other side's index is validated on every load: (producer - consumer) must lie in
//    [0, num_entries]. A violation puts the ring in the error state (the HCA publishes it in
//    RingStatusLine.error; a client only reports it) and the ring stays there.
//  - A consumer copies an entry out of shared memory before anyone looks at it, so the
//    producer cannot change it between validation and use (no double fetch).
//  - Publication is a seq_cst store of the index on std::atomic_ref over the shared word (a
//    release is enough for the entries; seq_cst orders it before the doorbell check), read
//    with seq_cst loads (plain loads on x86); the producer then rings the doorbell
//    (doorbell.h), which costs one load unless the consumer sleeps.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>

#include "softib/abi/rings.h"
#include "softib/rings/doorbell.h"
#include "softib/rings/ring_layout.h"

namespace softib::rings {

// Which side of the ring this process is: the HCA records errors in the shared status line
// (the client's view of them); a client never writes it.
enum class Side { kHca, kClient };

namespace detail {

inline std::atomic_ref<uint32_t> Word(uint32_t& word) { return std::atomic_ref<uint32_t>(word); }

// Shared state of a ring endpoint: geometry and error, private to this side.
class RingEndpoint {
 public:
  RingEndpoint() = default;
  RingEndpoint(RingControl* control, void* entries, uint32_t num_entries, Side side)
      : control_(control),
        entries_(static_cast<char*>(entries)),
        mask_(num_entries - 1),
        num_entries_(num_entries),
        side_(side) {}

  bool attached() const { return control_ != nullptr; }
  RingControl* control() const { return control_; }
  uint32_t num_entries() const { return num_entries_; }
  // This side's verdict, or the HCA's published one.
  RingError error() const {
    if (error_ != RingError::NONE || control_ == nullptr) return error_;
    return std::atomic_ref<RingError>(control_->status.error).load(std::memory_order_acquire);
  }
  // Puts the ring in the error state (first reason wins).
  void Fail(RingError reason) {
    if (error_ != RingError::NONE) return;
    error_ = reason;
    if (side_ == Side::kHca) {
      RingError none = RingError::NONE;
      std::atomic_ref<RingError>(control_->status.error)
          .compare_exchange_strong(none, reason, std::memory_order_release);
      // A client sleeping on this ring's doorbell must learn about it.
      Word(control_->doorbell.wake_seq).fetch_add(1, std::memory_order_release);
      FutexWakeAll(&control_->doorbell.wake_seq);
    }
  }

 protected:
  RingControl* control_ = nullptr;
  char* entries_ = nullptr;
  uint32_t mask_ = 0;
  uint32_t num_entries_ = 0;
  Side side_ = Side::kClient;
  RingError error_ = RingError::NONE;
};

}  // namespace detail

template <typename Entry>
class RingProducer : public detail::RingEndpoint {
 public:
  RingProducer() = default;
  // `num_entries` and the entry pointer come from this side's own knowledge (the HCA: what
  // it created; a client: a mapping it checked with CheckMapping/CheckHeader).
  RingProducer(RingControl* control, Entry* entries, uint32_t num_entries, Side side)
      : RingEndpoint(control, entries, num_entries, side) {
    producer_ = detail::Word(control->producer.producer_index).load(std::memory_order_relaxed);
    consumer_cache_ = producer_;
  }

  // Free slots, refreshing the consumer's index (0 in the error state).
  uint32_t Free() {
    if (error() != RingError::NONE) return 0;
    uint32_t consumer =
        detail::Word(control_->consumer.consumer_index).load(std::memory_order_acquire);
    uint32_t used = producer_ - consumer;
    if (used > num_entries_) {
      Fail(RingError::BAD_CONSUMER_INDEX);
      return 0;
    }
    consumer_cache_ = consumer;
    return num_entries_ - used;
  }

  // The slot the next entry goes to, or null when full (or in error). Fill it, then Commit.
  Entry* Reserve() {
    if (error() != RingError::NONE) return nullptr;
    if (producer_ - consumer_cache_ >= num_entries_ && Free() == 0) return nullptr;
    return reinterpret_cast<Entry*>(entries_) + (producer_ & mask_);
  }
  // Makes the reserved entry visible to the consumer (not yet rung: see Publish).
  void Commit() { ++producer_; }
  // Copies `entry` in; false when full.
  bool TryPush(const Entry& entry) {
    Entry* slot = Reserve();
    if (slot == nullptr) return false;
    std::memcpy(static_cast<void*>(slot), &entry, sizeof(Entry));
    Commit();
    return true;
  }
  // Publishes every committed entry and wakes the consumer if it sleeps.
  void Publish() {
    detail::Word(control_->producer.producer_index).store(producer_, std::memory_order_seq_cst);
    RingDoorbell(control_);
  }

  uint32_t producer_index() const { return producer_; }

 private:
  uint32_t producer_ = 0;
  uint32_t consumer_cache_ = 0;  // last validated consumer index
};

enum class PopResult { kEntry, kEmpty, kError };

template <typename Entry>
class RingConsumer : public detail::RingEndpoint {
 public:
  RingConsumer() = default;
  RingConsumer(RingControl* control, const Entry* entries, uint32_t num_entries, Side side)
      : RingEndpoint(control, const_cast<Entry*>(entries), num_entries, side) {
    consumer_ = detail::Word(control->consumer.consumer_index).load(std::memory_order_relaxed);
    producer_cache_ = consumer_;
  }

  // Entries ready, refreshing the producer's index (0 in the error state).
  uint32_t Available() {
    if (error_ != RingError::NONE) return 0;
    uint32_t producer =
        detail::Word(control_->producer.producer_index).load(std::memory_order_seq_cst);
    uint32_t ready = producer - consumer_;
    if (ready > num_entries_) {
      Fail(RingError::BAD_PRODUCER_INDEX);
      return 0;
    }
    producer_cache_ = producer;
    return ready;
  }
  bool Empty() { return producer_cache_ == consumer_ && Available() == 0; }

  // Copies the next entry out into `*out` and frees its slot (published at once unless
  // `defer_release`: then call Release() after a batch).
  PopResult Pop(Entry* out, bool defer_release = false) {
    if (error_ != RingError::NONE) return PopResult::kError;
    if (producer_cache_ == consumer_ && Available() == 0) {
      return error_ != RingError::NONE ? PopResult::kError : PopResult::kEmpty;
    }
    std::memcpy(static_cast<void*>(out), entries_ + sizeof(Entry) * (consumer_ & mask_),
                sizeof(Entry));
    ++consumer_;
    if (!defer_release) Release();
    return PopResult::kEntry;
  }
  // Hands the slots consumed so far back to the producer.
  void Release() {
    detail::Word(control_->consumer.consumer_index).store(consumer_, std::memory_order_release);
  }

  // Sleeps until the producer rings (or `timeout_ns`); true if there is work.
  bool Sleep(int64_t timeout_ns) {
    return SleepUntilRung(
        control_, [this] { return Available() != 0 || error() != RingError::NONE; }, timeout_ns);
  }

  uint32_t consumer_index() const { return consumer_; }

 private:
  uint32_t consumer_ = 0;
  uint32_t producer_cache_ = 0;  // last validated producer index
};

// The HCA's side of a CQ: pushes completions, detects overflow, evaluates the poller's
// arm requests. Overflow is the CQ's error state (the driver raises the CQ error async
// event); the completion that did not fit is dropped.
class CqProducer {
 public:
  enum class PushResult { kPushed, kOverflow, kError };

  CqProducer() = default;
  CqProducer(RingControl* control, abi::WorkCompletion* entries, uint32_t num_entries)
      : ring_(control, entries, num_entries, Side::kHca) {
    fired_request_ = detail::Word(control->status.fired_request).load(std::memory_order_relaxed);
    fired_count_seq_ =
        detail::Word(control->status.fired_count_seq).load(std::memory_order_relaxed);
  }

  // Appends `wc` (solicited: the completion of a solicited receive, or an error; both satisfy a
  // SOLICITED arm). `*notify` says whether a completion event is due now (the arm is then
  // consumed). Call Publish() after a batch, or pass publish=true.
  PushResult Push(const abi::WorkCompletion& wc, bool solicited, bool* notify,
                  bool publish = true) {
    *notify = false;
    if (ring_.error() != RingError::NONE) return PushResult::kError;
    if (!ring_.TryPush(wc)) {
      if (ring_.error() != RingError::NONE) return PushResult::kError;
      ring_.Fail(RingError::OVERFLOW);
      return PushResult::kOverflow;
    }
    if (publish) ring_.Publish();
    *notify = CheckArm(solicited);
    return PushResult::kPushed;
  }
  void Publish() { ring_.Publish(); }
  RingError error() const { return ring_.error(); }
  void Fail(RingError reason) { ring_.Fail(reason); }
  RingControl* control() const { return ring_.control(); }

 private:
  bool CheckArm(bool solicited) {
    RingControl* c = ring_.control();
    bool fire = false;
    // seq_cst: against the poller's arm store and its next poll (see uvp RearmCq).
    uint32_t request = detail::Word(c->arm.arm_request).load(std::memory_order_seq_cst);
    uint32_t mode = request & 3;
    if (request != fired_request_ && (mode == 1 || (mode == 2 && solicited))) {
      fired_request_ = request;
      detail::Word(c->status.fired_request).store(request, std::memory_order_release);
      fire = true;
    }
    uint32_t count_seq = detail::Word(c->arm.arm_count_seq).load(std::memory_order_seq_cst);
    if (count_seq != fired_count_seq_) {
      uint32_t threshold = detail::Word(c->arm.arm_count).load(std::memory_order_relaxed);
      // The number of completions waiting, as the HCA sees it (a lying consumer index only
      // changes when the poller gets its event).
      uint32_t waiting = ring_.num_entries() - ring_.Free();
      if (threshold != 0 && waiting >= threshold) {
        fired_count_seq_ = count_seq;
        detail::Word(c->status.fired_count_seq).store(count_seq, std::memory_order_release);
        fire = true;
      }
    }
    return fire;
  }

  RingProducer<abi::WorkCompletion> ring_;
  uint32_t fired_request_ = 0;
  uint32_t fired_count_seq_ = 0;
};

}  // namespace softib::rings
