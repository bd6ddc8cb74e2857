#include "hca/device/write_combiner.h"

namespace softib::hca {

bool WriteCombiner::Write(uint32_t owner, const std::shared_ptr<DmaAccessor>& dma, uint64_t addr,
                          std::span<const uint8_t> data) {
  const bool continues = !staged_.empty() && owner == owner_ && dma == dma_ &&
                         addr == addr_ + staged_.size() &&
                         staged_.size() + data.size() <= kCapacity;
  if (!continues && !staged_.empty()) {
    uint32_t failed = 0;
    if (!Flush(&failed) && failed == owner) return false;
    // Another QP's run that failed: that QP learns of it when it flushes its own last
    // packet (the responder marks it from Flush's caller).
  }
  if (!dma->CombinesWrites() || data.size() > kCapacity) return dma->Write(addr, data);
  if (staged_.empty()) {
    if (staged_.capacity() < kCapacity) staged_.reserve(kCapacity);
    dma_ = dma;
    owner_ = owner;
    addr_ = addr;
  }
  staged_.insert(staged_.end(), data.begin(), data.end());
  return true;
}

bool WriteCombiner::Flush(uint32_t* failed_owner) {
  *failed_owner = 0;
  if (staged_.empty()) return true;
  const bool placed = dma_->Write(addr_, staged_);
  ++runs_placed_;
  if (!placed) *failed_owner = owner_;
  staged_.clear();
  dma_.reset();
  return placed;
}

}  // namespace softib::hca
