#include "hca/device/cable.h"

#include "hca/device/packet.h"

namespace softib::hca {

std::vector<uint8_t> Link::TransmitUnsealed(std::vector<uint8_t> packet) {
  SealPacket(packet);
  return Transmit(std::move(packet));
}

BackToBackCable::BackToBackCable() = default;

bool BackToBackCable::SurvivesFaults(End& from) {
  if (drop_exactly_.erase(handled_++) != 0) {
    ++fault_counters_.dropped;
    from.queue_.pop_front();
    return false;
  }
  if (faults_.drop_per_mille == 0 && faults_.duplicate_per_mille == 0 &&
      faults_.reorder_per_mille == 0)
    return true;
  // Three draws per packet whatever happens, so one decision never shifts the others.
  const uint32_t drop = rng_() % 1000, dup = rng_() % 1000, reorder = rng_() % 1000;
  if (drop < faults_.drop_per_mille) {
    ++fault_counters_.dropped;
    from.queue_.pop_front();
    return false;
  }
  if (reorder < faults_.reorder_per_mille && from.queue_.size() > 1) {
    ++fault_counters_.reordered;
    std::vector<uint8_t> packet = std::move(from.queue_.front());
    from.queue_.pop_front();
    from.queue_.insert(from.queue_.begin() + 1, std::move(packet));
    return false;
  }
  if (dup < faults_.duplicate_per_mille) {
    ++fault_counters_.duplicated;
    from.queue_.push_back(from.queue_.front());
  }
  return true;
}

std::size_t BackToBackCable::Pump() {
  std::size_t delivered = 0;
  while (queued() != 0) {
    for (int i = 0; i < 2; ++i) {
      End& from = ends_[i];
      if (from.queue_.empty() || !SurvivesFaults(from)) continue;
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
