// Link width and speed as ibnetdiscover prints them ("4x", "QDR"), and the PortInfo
// enable masks that ibsim derives from the same words. A link in a topology carries the
// active width and speed; the masks matter only while reading a file, because ibsim's own
// w=/s=/e= port options give enable masks and the link runs at the best common value.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace softib::fabric {

// Values are the PortInfo LinkWidthActive bits (IBTA 14.2.5.6), so the enum converts to
// the wire encoding directly.
enum class LinkWidth : uint8_t { k1x = 1, k4x = 2, k8x = 4, k12x = 8, k2x = 16 };

// In ibnetdiscover's order of printing: LinkSpeedActive (SDR, DDR, QDR), Mellanox FDR10,
// then LinkSpeedExtActive (FDR, EDR, HDR, NDR).
enum class LinkSpeed : uint8_t { kSdr, kDdr, kQdr, kFdr10, kFdr, kEdr, kHdr, kNdr };

std::string_view ToString(LinkWidth width);  // "4x"
std::string_view ToString(LinkSpeed speed);  // "QDR"
std::optional<LinkWidth> ParseLinkWidth(std::string_view text);
std::optional<LinkSpeed> ParseLinkSpeed(std::string_view text);

// What a port has enabled: PortInfo LinkWidthEnabled, LinkSpeedEnabled,
// LinkSpeedExtEnabled, and the Mellanox FDR10 bit.
struct EnabledRates {
  uint8_t width = 0;
  uint8_t speed = 0;
  uint8_t speed_ext = 0;
  bool fdr10 = false;
};

// ibsim's reading of a "4xQDR" annotation: a port that says 4x enables 1x and 4x, QDR
// enables SDR|DDR|QDR, FDR adds the FDR extended bit, and so on.
EnabledRates EnabledFor(LinkWidth width, LinkSpeed speed);

// The width and speed two ends settle on: the widest common width and the fastest common
// speed (extended speeds first, then FDR10, then the base speeds). Empty when the ends
// have no width, or no base speed, in common.
std::optional<LinkWidth> CommonWidth(const EnabledRates& a, const EnabledRates& b);
std::optional<LinkSpeed> CommonSpeed(const EnabledRates& a, const EnabledRates& b);

}  // namespace softib::fabric
