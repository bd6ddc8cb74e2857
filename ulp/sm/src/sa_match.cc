// ComponentMask matching, GIDs, and the rate/MTU arithmetic of path and group records.
#include <algorithm>
#include <cstring>
#include <utility>

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

uint8_t RateCode(uint8_t width, uint8_t speed, uint8_t speed_ext) {
  // Lanes per LinkWidthActive bit: 1x, 4x, 8x, 12x, 2x.
  static constexpr std::pair<uint8_t, unsigned> kLanes[] = {
      {1, 1}, {2, 4}, {4, 8}, {8, 12}, {16, 2}};
  // Gb/s * 10 per lane, the data rates the Rate codes name: LinkSpeedExtActive (FDR, EDR,
  // HDR) first, then LinkSpeedActive (SDR, DDR, QDR).
  static constexpr std::pair<uint8_t, unsigned> kExt[] = {{1, 140}, {2, 250}, {4, 500}};
  static constexpr std::pair<uint8_t, unsigned> kBase[] = {{1, 25}, {2, 50}, {4, 100}};
  // Total Gb/s * 10 -> Rate code (IBA 15.2.5.16 / mad_common Rate).
  static constexpr std::pair<unsigned, uint8_t> kCodes[] = {
      {25, 2},    {50, 5},   {100, 3},   {200, 6},   {300, 4},  {400, 7},
      {600, 8},   {800, 9},  {1200, 10}, {140, 11},  {560, 12}, {1120, 13},
      {1680, 14}, {250, 15}, {1000, 16}, {2000, 17}, {3000, 18}};
  auto find = [](const auto& table, auto key) -> unsigned {
    for (const auto& [k, v] : table)
      if (k == key) return v;
    return 0;
  };
  const unsigned lanes = find(kLanes, width);
  const unsigned lane = speed_ext ? find(kExt, speed_ext) : find(kBase, speed);
  return static_cast<uint8_t>(find(kCodes, lanes * lane));
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
