// MAD status values the switch SMA answers with (IBA 13.4.7, Table 127): the code sits in
// bits 4..2 of Status.
#pragma once

#include <cstdint>

#include "softib/mad/mad_common.h"

namespace softib::fabric {

constexpr uint16_t StatusOf(mad::MadStatusCode code) {
  return static_cast<uint16_t>(static_cast<uint16_t>(code) << 2);
}
inline constexpr uint16_t kStatusOk = 0;
inline constexpr uint16_t kStatusBadVersion = StatusOf(mad::MadStatusCode::BAD_VERSION);
inline constexpr uint16_t kStatusBadMethod = StatusOf(mad::MadStatusCode::METHOD_NOT_SUPPORTED);
inline constexpr uint16_t kStatusBadAttribute =
    StatusOf(mad::MadStatusCode::METHOD_ATTRIBUTE_NOT_SUPPORTED);
inline constexpr uint16_t kStatusBadValue = StatusOf(mad::MadStatusCode::INVALID_ATTRIBUTE_VALUE);

}  // namespace softib::fabric
