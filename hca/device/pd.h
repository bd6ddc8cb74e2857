// Protection domains: a number that ties QPs, MRs, MWs and AHs together. Hardware keeps no
// more than that per PD, and neither does this device.
#pragma once

#include <cstdint>
#include <unordered_set>

namespace softib::hca {

using PdId = uint32_t;

class PdTable {
 public:
  PdId Allocate() {
    const PdId id = next_++;
    live_.insert(id);
    return id;
  }
  // False when `id` is not a live PD.
  bool Free(PdId id) { return live_.erase(id) != 0; }
  bool Contains(PdId id) const { return live_.count(id) != 0; }
  std::size_t size() const { return live_.size(); }

 private:
  PdId next_ = 1;  // 0 never names a PD
  std::unordered_set<PdId> live_;
};

}  // namespace softib::hca
