// Address handles: where a UD send goes. A UD work request names its AH by number (the
// driver turns the consumer's handle into it), so the device can check that the AH and
// the QP share a PD, as hardware does.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "hca/device/pd.h"
#include "softib/abi/types.h"

namespace softib::hca {

struct AddressHandle {
  PdId pd = 0;
  abi::AddressVector av{};
};

class AhTable {
 public:
  // INVALID_PORT for a port number outside 1..num_ports; INVALID_LID for LID 0.
  abi::Status Create(PdId pd, const abi::AddressVector& av, uint8_t num_ports, uint32_t* number);
  abi::Status Destroy(uint32_t number);
  const AddressHandle* Find(uint32_t number) const;
  std::size_t size() const { return ahs_.size(); }
  bool AnyInPd(PdId pd) const {
    for (const auto& [number, ah] : ahs_)
      if (ah.pd == pd) return true;
    return false;
  }

 private:
  uint32_t next_ = 1;
  std::unordered_map<uint32_t, AddressHandle> ahs_;
};

}  // namespace softib::hca
