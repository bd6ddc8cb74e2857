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
  return ahs_.erase(number) != 0 ? abi::Status::SUCCESS : abi::Status::INVALID_AV_HANDLE;
}

const AddressHandle* AhTable::Find(uint32_t number) const {
  const auto it = ahs_.find(number);
  return it == ahs_.end() ? nullptr : &it->second;
}

}  // namespace softib::hca
