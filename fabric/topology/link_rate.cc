#include "fabric/topology/link_rate.h"

#include <array>
#include <utility>

namespace softib::fabric {
namespace {

constexpr std::array<std::pair<LinkWidth, std::string_view>, 5> kWidthNames = {{
    {LinkWidth::k1x, "1x"},
    {LinkWidth::k2x, "2x"},
    {LinkWidth::k4x, "4x"},
    {LinkWidth::k8x, "8x"},
    {LinkWidth::k12x, "12x"},
}};

constexpr std::array<std::pair<LinkSpeed, std::string_view>, 8> kSpeedNames = {{
    {LinkSpeed::kSdr, "SDR"},
    {LinkSpeed::kDdr, "DDR"},
    {LinkSpeed::kQdr, "QDR"},
    {LinkSpeed::kFdr10, "FDR10"},
    {LinkSpeed::kFdr, "FDR"},
    {LinkSpeed::kEdr, "EDR"},
    {LinkSpeed::kHdr, "HDR"},
    {LinkSpeed::kNdr, "NDR"},
}};

// PortInfo bits (IBTA 14.2.5.6): LinkSpeedEnabled SDR 1, DDR 2, QDR 4;
// LinkSpeedExtEnabled FDR 1, EDR 2, HDR 4, NDR 8.
constexpr uint8_t kSpeedSdr = 1, kSpeedDdr = 2, kSpeedQdr = 4;
constexpr uint8_t kExtFdr = 1, kExtEdr = 2, kExtHdr = 4, kExtNdr = 8;

}  // namespace

std::string_view ToString(LinkWidth width) {
  for (const auto& [w, name] : kWidthNames)
    if (w == width) return name;
  return "??";
}

std::string_view ToString(LinkSpeed speed) {
  for (const auto& [s, name] : kSpeedNames)
    if (s == speed) return name;
  return "???";
}

std::optional<LinkWidth> ParseLinkWidth(std::string_view text) {
  for (const auto& [w, name] : kWidthNames)
    if (name == text) return w;
  return std::nullopt;
}

std::optional<LinkSpeed> ParseLinkSpeed(std::string_view text) {
  for (const auto& [s, name] : kSpeedNames)
    if (name == text) return s;
  return std::nullopt;
}

EnabledRates EnabledFor(LinkWidth width, LinkSpeed speed) {
  EnabledRates r;
  switch (width) {
    case LinkWidth::k12x:
      r.width = 1 | 2 | 8;
      break;
    case LinkWidth::k4x:
      r.width = 1 | 2;
      break;
    default:  // 1x, 2x and 8x enable only themselves
      r.width = static_cast<uint8_t>(width);
      break;
  }
  const uint8_t base_all = kSpeedSdr | kSpeedDdr | kSpeedQdr;
  switch (speed) {
    case LinkSpeed::kSdr:
      r.speed = kSpeedSdr;
      break;
    case LinkSpeed::kDdr:
      r.speed = kSpeedSdr | kSpeedDdr;
      break;
    case LinkSpeed::kQdr:
      r.speed = base_all;
      break;
    case LinkSpeed::kFdr10:
      r.speed = base_all;
      r.fdr10 = true;
      break;
    case LinkSpeed::kFdr:
      r.speed = base_all;
      r.speed_ext = kExtFdr;
      r.fdr10 = true;
      break;
    case LinkSpeed::kEdr:
      r.speed = base_all;
      r.speed_ext = kExtFdr | kExtEdr;
      r.fdr10 = true;
      break;
    case LinkSpeed::kHdr:
      r.speed = base_all;
      r.speed_ext = kExtFdr | kExtEdr | kExtHdr;
      r.fdr10 = true;
      break;
    case LinkSpeed::kNdr:
      r.speed = base_all;
      r.speed_ext = kExtFdr | kExtEdr | kExtHdr | kExtNdr;
      r.fdr10 = true;
      break;
  }
  return r;
}

std::optional<LinkWidth> CommonWidth(const EnabledRates& a, const EnabledRates& b) {
  const uint8_t common = a.width & b.width;
  for (LinkWidth w :
       {LinkWidth::k12x, LinkWidth::k8x, LinkWidth::k4x, LinkWidth::k2x, LinkWidth::k1x})
    if (common & static_cast<uint8_t>(w)) return w;
  return std::nullopt;
}

std::optional<LinkSpeed> CommonSpeed(const EnabledRates& a, const EnabledRates& b) {
  const uint8_t base = a.speed & b.speed;
  if (base == 0) return std::nullopt;  // every IB port runs at least SDR
  const uint8_t ext = a.speed_ext & b.speed_ext;
  if (ext & kExtNdr) return LinkSpeed::kNdr;
  if (ext & kExtHdr) return LinkSpeed::kHdr;
  if (ext & kExtEdr) return LinkSpeed::kEdr;
  if (ext & kExtFdr) return LinkSpeed::kFdr;
  if (a.fdr10 && b.fdr10 && (base & kSpeedQdr)) return LinkSpeed::kFdr10;
  if (base & kSpeedQdr) return LinkSpeed::kQdr;
  if (base & kSpeedDdr) return LinkSpeed::kDdr;
  return LinkSpeed::kSdr;
}

}  // namespace softib::fabric
