// Hand-built MADs for the SMA/PMA tests: bytes laid out from the spec's tables (IBA 13.4.3
// common header, 14.2.1 SMP formats, 16.1.1 PerfMgt), not from the IDL codecs.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "hca/device/hca.h"

namespace softib::hca::testing {

using MadBytes = std::array<uint8_t, 256>;

// Management classes, methods (IBA 13.4.4, 13.4.5) and attribute IDs (14.2.5, 16.1.3).
inline constexpr uint8_t kLid = 0x01, kDr = 0x81, kPerf = 0x04, kGet = 0x01, kSet = 0x02;
inline constexpr uint16_t kClassPortInfo = 0x0001, kNodeDescription = 0x0010, kNodeInfo = 0x0011,
                          kSwitchInfo = 0x0012, kGuidInfo = 0x0014, kPortInfo = 0x0015,
                          kPKeyTable = 0x0016, kSlToVl = 0x0017, kVlArb = 0x0018, kSmInfo = 0x0020;

inline void PutBe(MadBytes& m, std::size_t at, uint64_t value, unsigned bytes) {
  for (unsigned i = 0; i < bytes; ++i)
    m[at + i] = static_cast<uint8_t>(value >> (8 * (bytes - 1 - i)));
}
inline uint64_t GetBe(const MadBytes& m, std::size_t at, unsigned bytes) {
  uint64_t v = 0;
  for (unsigned i = 0; i < bytes; ++i) v = v << 8 | m[at + i];
  return v;
}

// BaseVersion 1, class, class version 1, method, TID 0x0102030405060708, attribute,
// modifier; for an SMP the M_Key at byte 24.
inline MadBytes Mad(uint8_t mgmt_class, uint8_t method, uint16_t attribute, uint32_t modifier = 0,
                    uint64_t mkey = 0) {
  MadBytes m{};
  m[0] = 1;
  m[1] = mgmt_class;
  m[2] = 1;
  m[3] = method;
  PutBe(m, 8, 0x0102030405060708ull, 8);
  PutBe(m, 16, attribute, 2);
  PutBe(m, 20, modifier, 4);
  if (mgmt_class == 0x01 || mgmt_class == 0x81) PutBe(m, 24, mkey, 8);
  return m;
}

// Data bytes (MAD byte 64 on) from {offset, byte} pairs.
inline void SetData(MadBytes& m, std::initializer_list<std::pair<unsigned, uint8_t>> bytes) {
  for (auto [at, v] : bytes) m[64 + at] = v;
}

struct MadCall {
  LocalMadResult result;
  MadBytes response{};
  uint16_t status() const { return static_cast<uint16_t>(GetBe(response, 4, 2)); }
  const uint8_t* data() const { return response.data() + 64; }
};

inline MadCall Process(Hca& hca, uint8_t port, const MadBytes& request) {
  MadCall c;
  c.response.fill(0xEE);
  c.result = hca.ProcessLocalMad(port, request, c.response);
  return c;
}

}  // namespace softib::hca::testing
