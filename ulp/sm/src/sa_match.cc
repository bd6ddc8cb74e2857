// ComponentMask matching, GIDs, and the rate/MTU arithmetic of path and group records.
#include <algorithm>
#include <cstring>

#include "sa_internal.h"
#include "softib/codec/bits.h"

namespace softib::sm {

Gid MakeGid(uint64_t prefix, uint64_t guid) {
  Gid gid{};
  for (int i = 0; i < 8; ++i) {
    gid[i] = static_cast<uint8_t>(prefix >> (56 - 8 * i));
    gid[8 + i] = static_cast<uint8_t>(guid >> (56 - 8 * i));
  }
  return gid;
}

uint64_t GidPrefix(const Gid& gid) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | gid[i];
  return v;
}

uint64_t GidGuid(const Gid& gid) {
  uint64_t v = 0;
  for (int i = 8; i < 16; ++i) v = v << 8 | gid[i];
  return v;
}

namespace sa {

namespace {

bool SameBits(std::span<const uint8_t> a, std::span<const uint8_t> b, uint32_t offset,
              uint32_t width) {
  const uint32_t end = offset + width;
  if (end > a.size() * 8 || end > b.size() * 8) return false;
  if (offset % 8 == 0 && width % 8 == 0)
    return std::memcmp(a.data() + offset / 8, b.data() + offset / 8, width / 8) == 0;
  for (uint32_t at = offset; at < end;) {
    const uint32_t n = std::min<uint32_t>(64, end - at);
    if (codec::GetBits(a, at, n) != codec::GetBits(b, at, n)) return false;
    at += n;
  }
  return true;
}

}  // namespace

bool ComponentsMatch(const codec::FormatDesc& desc, uint64_t mask, std::span<const uint8_t> query,
                     std::span<const uint8_t> record) {
  if (mask == 0) return true;
  for (const codec::FieldDesc& f : desc.fields) {
    if (f.component < 0 || f.component >= 64 || !(mask >> f.component & 1)) continue;
    if (f.reserved) continue;  // reserved components select nothing
    for (uint32_t i = 0; i < f.repeat; ++i)
      if (!SameBits(query, record, f.bit_offset + i * f.stride_bits, f.bit_width)) return false;
  }
  return true;
}

uint64_t ComponentBit(const codec::FormatDesc& desc, std::string_view field) {
  for (const codec::FieldDesc& f : desc.fields)
    if (f.name == field && f.component >= 0) return uint64_t{1} << f.component;
  return 0;
}

uint8_t RateCode(uint8_t width, uint8_t speed) {
  unsigned lanes = 0;
  switch (width) {
    case 1:
      lanes = 1;
      break;
    case 2:
      lanes = 4;
      break;
    case 4:
      lanes = 8;
      break;
    case 8:
      lanes = 12;
      break;
    case 16:
      lanes = 2;
      break;
    default:
      return 0;
  }
  unsigned lane_tenths = 0;  // Gb/s * 10 per lane
  switch (speed) {
    case 1:
      lane_tenths = 25;
      break;
    case 2:
      lane_tenths = 50;
      break;
    case 4:
      lane_tenths = 100;
      break;
    default:
      return 0;
  }
  switch (lanes * lane_tenths) {
    case 25:
      return 2;
    case 50:
      return 5;
    case 100:
      return 3;
    case 200:
      return 6;
    case 300:
      return 4;
    case 400:
      return 7;
    case 600:
      return 8;
    case 800:
      return 9;
    case 1200:
      return 10;
    default:
      return 0;
  }
}

unsigned RateTenthsGbps(uint8_t rate) {
  static constexpr unsigned kTenths[] = {0,    0,   25,  100,  300,  50,  200,  400,  600, 800,
                                         1200, 140, 560, 1120, 1680, 250, 1000, 2000, 3000};
  return rate < std::size(kTenths) ? kTenths[rate] : 0;
}

bool SelectorAccepts(uint8_t selector, unsigned value, unsigned wanted) {
  switch (selector) {
    case 0:
      return value > wanted;
    case 1:
      return value < wanted;
    case 2:
      return value == wanted;
    default:
      return true;  // largest available
  }
}

}  // namespace sa
}  // namespace softib::sm
