#include "hca/device/port.h"

namespace softib::hca {

uint32_t MtuBytes(abi::PathMtu mtu) {
  const auto code = static_cast<uint32_t>(mtu);
  return code >= 1 && code <= 5 ? 128u << code : 0;
}

abi::Gid Port::Gid(uint8_t index) const {
  abi::Gid gid{};
  const uint64_t guid = index == 0                   ? port_guid
                        : index < alias_guids.size() ? alias_guids[index]
                                                     : 0;
  if (index != 0 && guid == 0) return gid;
  for (int i = 0; i < 8; ++i) {
    gid.raw[i] = static_cast<uint8_t>(subnet_prefix >> (56 - 8 * i));
    gid.raw[8 + i] = static_cast<uint8_t>(guid >> (56 - 8 * i));
  }
  return gid;
}

bool Port::AcceptsDlid(uint16_t dlid) const {
  const uint16_t mask = static_cast<uint16_t>(~((1u << lmc) - 1));
  return (dlid & mask) == (lid & mask);
}

bool PkeysMatch(uint16_t a, uint16_t b) {
  if ((a & 0x7FFF) == 0 || (a & 0x7FFF) != (b & 0x7FFF)) return false;
  return (a & 0x8000) != 0 || (b & 0x8000) != 0;
}

}  // namespace softib::hca
