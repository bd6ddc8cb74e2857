// The bytes of a MAD the AL's MAD layer reads and writes (IBA 13.4.3 common header, 13.6.2
// RMPP header), so the layer never depends on a class's own codec.
#pragma once

#include <endian.h>

#include <cstdint>
#include <cstring>

namespace softib::al::mad {

inline constexpr uint32_t kMadSize = 256;
inline constexpr uint32_t kGrhSize = 40;  // a UD receive buffer starts with room for the GRH
inline constexpr uint32_t kGsiQkey = 0x80010000;

inline constexpr uint8_t kClassSubnLid = 0x01;
inline constexpr uint8_t kClassSubnDr = 0x81;
inline constexpr uint8_t kClassSubnAdm = 0x03;

inline constexpr uint8_t kMethodGet = 0x01;
inline constexpr uint8_t kMethodSet = 0x02;
inline constexpr uint8_t kMethodGetResp = 0x81;
inline constexpr uint8_t kMethodTrap = 0x05;
inline constexpr uint8_t kMethodTrapRepress = 0x07;

inline uint8_t Class(const uint8_t* m) { return m[1]; }
inline uint8_t ClassVersion(const uint8_t* m) { return m[2]; }
inline uint8_t Method(const uint8_t* m) { return m[3]; }
inline bool IsSmpClass(uint8_t mgmt_class) {
  return mgmt_class == kClassSubnLid || mgmt_class == kClassSubnDr;
}

// Responses are the methods with the R bit, and TrapRepress (IBA 13.4.5).
inline bool IsResponse(const uint8_t* m) {
  return (Method(m) & 0x80) != 0 || Method(m) == kMethodTrapRepress;
}

inline uint64_t Tid(const uint8_t* m) {
  uint64_t v;
  std::memcpy(&v, m + 8, 8);
  return be64toh(v);
}
inline void SetTid(uint8_t* m, uint64_t tid) {
  const uint64_t v = htobe64(tid);
  std::memcpy(m + 8, &v, 8);
}
inline uint16_t Status(const uint8_t* m) { return static_cast<uint16_t>(m[4] << 8 | m[5]); }
inline uint16_t AttributeId(const uint8_t* m) { return static_cast<uint16_t>(m[16] << 8 | m[17]); }

// The AL's agent id in the high 32 bits of a request's TID (IBAL and Linux do the same):
// a response finds its agent by it.
inline uint32_t AgentOfTid(uint64_t tid) { return static_cast<uint32_t>(tid >> 32); }

}  // namespace softib::al::mad
