#include "hca/device/cable.h"

namespace softib::hca {

BackToBackCable::BackToBackCable() = default;

std::size_t BackToBackCable::Pump() {
  std::size_t delivered = 0;
  while (queued() != 0) {
    for (int i = 0; i < 2; ++i) {
      End& from = ends_[i];
      if (from.queue_.empty()) continue;
      std::vector<uint8_t> packet = std::move(from.queue_.front());
      from.queue_.pop_front();
      if (tap_) tap_(i, packet);
      if (from.deliver_to_) from.deliver_to_(packet);
      ++delivered;
    }
  }
  return delivered;
}

}  // namespace softib::hca
