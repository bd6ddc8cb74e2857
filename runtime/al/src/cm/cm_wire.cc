// CM MAD framing and port lookups.
#include "runtime/al/src/cm/cm_wire.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/al/src/cm/cm.h"

namespace softib::al::cm {

std::array<uint8_t, 256> CmMad(uint16_t attribute, uint32_t tid_low,
                               std::span<const uint8_t> message) {
  std::array<uint8_t, 256> m{};
  m[0] = 1;  // BaseVersion
  m[1] = kCmClass;
  m[2] = kCmClassVersion;
  m[3] = kMethodSend;
  for (int i = 0; i < 4; ++i) m[12 + i] = static_cast<uint8_t>(tid_low >> (24 - 8 * i));
  m[16] = static_cast<uint8_t>(attribute >> 8);
  m[17] = static_cast<uint8_t>(attribute);
  std::memcpy(m.data() + kCmMessageOffset, message.data(),
              std::min(message.size(), kCmMessageSize));
  return m;
}

bool FindPkeyIndex(AlCa* ca, uint8_t port, uint16_t pkey, uint16_t* index) {
  abi::PortAttributes attributes;
  if (!QueryPort(ca, port, &attributes)) return false;
  std::vector<uint16_t> table(attributes.num_pkeys);
  uint32_t count = 0;
  if (table.empty() || ca->ci->QueryPkeyTable(port, 0, table, &count) != kernel::Status::SUCCESS) {
    return false;
  }
  int partial = -1;
  for (uint32_t i = 0; i < count; ++i) {
    if ((table[i] & 0x7FFF) != (pkey & 0x7FFF) || (table[i] & 0x7FFF) == 0) continue;
    if (table[i] & 0x8000) {
      *index = static_cast<uint16_t>(i);
      return true;
    }
    if (partial < 0) partial = static_cast<int>(i);
  }
  if (partial < 0) return false;
  *index = static_cast<uint16_t>(partial);
  return true;
}

bool QueryPort(AlCa* ca, uint8_t port, abi::PortAttributes* attributes) {
  if (port == 0 || port > ca->ci->num_ports()) return false;
  std::vector<abi::PortAttributes> ports(ca->ci->num_ports());
  abi::CaAttributes ca_attributes;
  if (ca->ci->QueryCa(&ca_attributes, ports) != kernel::Status::SUCCESS) return false;
  *attributes = ports[port - 1];
  return true;
}

}  // namespace softib::al::cm
