#include "hca/device/ah.h"

namespace softib::hca {

abi::Status AhTable::Create(PdId pd, const abi::AddressVector& av, uint8_t num_ports,
                            uint32_t* number) {
  if (av.port_num < 1 || av.port_num > num_ports) return abi::Status::INVALID_PORT;
  if (av.dlid == 0) return abi::Status::INVALID_LID;
  if (av.sl > 15 || av.grh.flow_label > 0xFFFFF) return abi::Status::INVALID_PARAMETER;
  *number = next_++;
  ahs_[*number] = AddressHandle{pd, av};
  return abi::Status::SUCCESS;
}

abi::Status AhTable::Destroy(uint32_t number) {
  const auto it = ahs_.find(number);
  if (it == ahs_.end()) return abi::Status::INVALID_AV_HANDLE;
  if (it->second.handle != 0) by_handle_.erase({it->second.pd, it->second.handle});
  ahs_.erase(it);
  return abi::Status::SUCCESS;
}

abi::Status AhTable::BindHandle(uint32_t number, uint64_t handle) {
  if (handle == 0) return abi::Status::INVALID_PARAMETER;
  const auto it = ahs_.find(number);
  if (it == ahs_.end()) return abi::Status::INVALID_AV_HANDLE;
  AddressHandle& ah = it->second;
  if (ah.handle != 0) by_handle_.erase({ah.pd, ah.handle});
  uint32_t& slot = by_handle_[{ah.pd, handle}];
  if (slot != 0 && slot != number) {
    if (const auto previous = ahs_.find(slot); previous != ahs_.end()) previous->second.handle = 0;
  }
  slot = number;
  ah.handle = handle;
  return abi::Status::SUCCESS;
}

const AddressHandle* AhTable::FindByHandle(PdId pd, uint64_t handle, uint32_t* number) const {
  const auto it = by_handle_.find({pd, handle});
  if (it == by_handle_.end()) return nullptr;
  *number = it->second;
  return Find(it->second);
}

const AddressHandle* AhTable::Find(uint32_t number) const {
  const auto it = ahs_.find(number);
  return it == ahs_.end() ? nullptr : &it->second;
}

}  // namespace softib::hca
