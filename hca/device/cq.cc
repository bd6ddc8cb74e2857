#include "hca/device/cq.h"

namespace softib::hca {

bool CompletionQueue::Push(const abi::WorkCompletion& wc, bool solicited) {
  if (overflowed_) return false;
  if (count_ == ring_.size()) {
    overflowed_ = true;
    if (async_events_ != nullptr && *async_events_)
      (*async_events_)(DeviceEvent{abi::AsyncEventType::CQ_OVERFLOW, number_});
    return false;
  }
  ring_[(head_ + count_) % ring_.size()] = wc;
  ++count_;
  const bool satisfies = !armed_solicited_only_ || solicited || wc.status != abi::WcStatus::SUCCESS;
  if (armed_ && satisfies) {
    armed_ = false;
    if (completion_events_ != nullptr && *completion_events_) (*completion_events_)(number_);
  }
  return true;
}

uint32_t CompletionQueue::Poll(std::span<abi::WorkCompletion> out) {
  uint32_t n = 0;
  while (n < out.size() && count_ > 0) {
    out[n++] = ring_[head_];
    head_ = static_cast<uint32_t>((head_ + 1) % ring_.size());
    --count_;
  }
  return n;
}

void CompletionQueue::RequestNotify(abi::CqNotify what) {
  // Arming for NEXT wins over an earlier SOLICITED arming (it asks for more).
  armed_solicited_only_ = armed_ ? armed_solicited_only_ && what == abi::CqNotify::SOLICITED
                                 : what == abi::CqNotify::SOLICITED;
  armed_ = true;
}

abi::Status CompletionQueue::Resize(uint32_t capacity) {
  if (capacity == 0 || capacity < count_) return abi::Status::INVALID_CQ_SIZE;
  std::vector<abi::WorkCompletion> ring(capacity);
  for (uint32_t i = 0; i < count_; ++i) ring[i] = ring_[(head_ + i) % ring_.size()];
  ring_ = std::move(ring);
  head_ = 0;
  return abi::Status::SUCCESS;
}

}  // namespace softib::hca
