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
  std::vector<uint16_t> table;  // the port cache (al_internal.h)
  if (!ca->CachedPkeyTable(port, &table) || table.empty()) return false;
  const auto count = static_cast<uint32_t>(table.size());
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
  return ca->CachedPortAttributes(port, attributes);  // the port cache (al_internal.h)
}

MadAddress PeerCmOf(const CepPath& path) {
  MadAddress to;
  to.av = path.av;
  to.av.static_rate = 0;
  to.remote_qpn = 1;
  to.remote_qkey = kQp1Qkey;
  to.pkey_index = path.pkey_index;
  return to;
}

bool PortOfLid(AlCa* ca, uint16_t lid, uint8_t* port, abi::PortAttributes* attributes) {
  for (uint8_t p = 1; p <= ca->ci->num_ports(); ++p) {
    if (!QueryPort(ca, p, attributes) || attributes->lid == 0) continue;
    const uint16_t mask = static_cast<uint16_t>(~((1u << attributes->lmc) - 1));
    if ((lid & mask) == (attributes->lid & mask)) {
      *port = p;
      return true;
    }
  }
  return false;
}

bool PathOfRecord(AlCa* ca, uint8_t port, std::span<const uint8_t> record, CepPath* path,
                  softib::mad::PathRecord* parsed) {
  if (!parsed->Unpack(record) || parsed->DLID == 0 || parsed->SLID == 0) return false;
  abi::PortAttributes attributes;
  if (port == 0) {
    if (!PortOfLid(ca, parsed->SLID, &port, &attributes)) return false;
  } else if (!QueryPort(ca, port, &attributes)) {
    return false;
  }
  if (!FindPkeyIndex(ca, port, parsed->P_Key, &path->pkey_index)) return false;
  path->av = {};
  path->av.port_num = port;
  path->av.dlid = parsed->DLID;
  path->av.sl = parsed->SL;
  path->av.src_path_bits =
      static_cast<uint8_t>((parsed->SLID - attributes.lid) & ((1u << attributes.lmc) - 1));
  path->av.static_rate = parsed->Rate;
  path->av.grh_present = parsed->HopLimit > 1 ? 1 : 0;  // not subnet-local
  std::memcpy(path->av.grh.dgid.raw, parsed->DGID.data(), 16);
  path->av.grh.flow_label = parsed->FlowLabel;
  path->av.grh.hop_limit = parsed->HopLimit;
  path->av.grh.traffic_class = parsed->TClass;
  path->mtu = parsed->MTU;
  path->packet_life_time = parsed->PacketLifeTime;
  path->local_ack_timeout = static_cast<uint8_t>(std::min(31, parsed->PacketLifeTime + 1));
  path->pkey = parsed->P_Key;
  return true;
}

}  // namespace softib::al::cm
