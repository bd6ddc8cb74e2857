// Directed-route SMP construction and field access, through the generated SmpDr view.
#include "softib/sm/smp.h"

#include <algorithm>
#include <cstring>

#include "softib/mad/mad_common.h"
#include "softib/smp/directed_route.h"

namespace softib::sm {

MadBytes MakeDrSmp(uint8_t method, uint16_t attribute, uint32_t modifier,
                   std::span<const uint8_t> path, std::span<const uint8_t> data) {
  MadBytes mad{};
  mad::SmpDrView view{std::span<uint8_t>(mad)};
  view.set_BaseVersion(1);
  view.set_MgmtClass(kClassSubnDr);
  view.set_ClassVersion(1);
  view.set_Method(method);
  view.set_HopPointer(0);
  view.set_HopCount(static_cast<uint8_t>(std::min<std::size_t>(path.size(), kMaxDrHops)));
  view.set_AttributeID(attribute);
  view.set_AttributeModifier(modifier);
  view.set_DrSLID(smp::kPermissiveLid);
  view.set_DrDLID(smp::kPermissiveLid);
  const std::size_t hops = std::min<std::size_t>(path.size(), kMaxDrHops);
  std::copy_n(path.begin(), hops, view.InitialPath().begin() + 1);
  if (!data.empty())
    std::copy_n(data.begin(), std::min(data.size(), kSmpDataBytes), view.SMPData().begin());
  return mad;
}

void ToLidRouted(MadBytes& smp) {
  smp[1] = kClassSubnLid;
  std::fill(smp.begin() + 6, smp.begin() + 8, 0);    // HopPointer, HopCount
  std::fill(smp.begin() + 32, smp.begin() + 64, 0);  // DrSLID, DrDLID, reserved
  std::fill(smp.begin() + 128, smp.end(), 0);        // InitialPath, ReturnPath
}

uint8_t SmpClass(const MadBytes& mad) { return mad[1]; }
uint8_t SmpMethod(const MadBytes& mad) { return mad[3]; }

uint16_t SmpStatus(const MadBytes& mad) {
  const uint16_t word = static_cast<uint16_t>(mad[4] << 8 | mad[5]);
  // In a DR SMP the top bit is the direction bit, not status.
  return SmpClass(mad) == kClassSubnDr ? word & 0x7FFF : word;
}

uint16_t SmpAttribute(const MadBytes& mad) { return static_cast<uint16_t>(mad[16] << 8 | mad[17]); }

uint32_t SmpModifier(const MadBytes& mad) {
  return uint32_t{mad[20]} << 24 | uint32_t{mad[21]} << 16 | uint32_t{mad[22]} << 8 | mad[23];
}

std::span<const uint8_t, kSmpDataBytes> SmpData(const MadBytes& mad) {
  return std::span<const uint8_t, kMadBytes>(mad).subspan<kSmpDataOffset, kSmpDataBytes>();
}

std::span<uint8_t, kSmpDataBytes> MutableSmpData(MadBytes& mad) {
  return std::span<uint8_t, kMadBytes>(mad).subspan<kSmpDataOffset, kSmpDataBytes>();
}

std::string PathString(std::span<const uint8_t> path) {
  std::string s = "[";
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(path[i]);
  }
  return s + "]";
}

}  // namespace softib::sm
