// Address handles: where a UD send goes. A UD work request names its AH by number (the
// driver turns the consumer's handle into it), so the device can check that the AH and
// the QP share a PD, as hardware does.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>

#include "hca/device/pd.h"
#include "softib/abi/types.h"

namespace softib::hca {

struct AddressHandle {
  PdId pd = 0;
  abi::AddressVector av{};
  // The consumer's name for it (a user file's AV handle), 0 for none: a work request taken
  // from a user process's send ring carries that name, never the AH number (BindHandle).
  uint64_t handle = 0;
};

class AhTable {
 public:
  // INVALID_PORT for a port number outside 1..num_ports; INVALID_LID for LID 0.
  abi::Status Create(PdId pd, const abi::AddressVector& av, uint8_t num_ports, uint32_t* number);
  abi::Status Destroy(uint32_t number);
  const AddressHandle* Find(uint32_t number) const;
  // Names AH `number` `handle` within its PD (the PD is the translation domain: a PD and
  // every handle in it belong to one consumer, so equal handle values of two consumers
  // never meet). A name moves: binding it to a new AH (ModifyAv) unbinds it from the old,
  // and an AH that gets a new name loses its old one. Destroying the AH drops its name.
  // INVALID_AV_HANDLE for an unknown AH, INVALID_PARAMETER for handle 0.
  abi::Status BindHandle(uint32_t number, uint64_t handle);
  // The AH named `handle` in `pd`, or nullptr (unknown, stale, or another PD's).
  const AddressHandle* FindByHandle(PdId pd, uint64_t handle, uint32_t* number) const;
  std::size_t size() const { return ahs_.size(); }
  bool AnyInPd(PdId pd) const {
    for (const auto& [number, ah] : ahs_)
      if (ah.pd == pd) return true;
    return false;
  }

 private:
  uint32_t next_ = 1;
  std::unordered_map<uint32_t, AddressHandle> ahs_;
  std::map<std::pair<PdId, uint64_t>, uint32_t> by_handle_;  // (pd, handle) -> AH number
};

}  // namespace softib::hca
