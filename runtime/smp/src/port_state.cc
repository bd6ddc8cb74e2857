#include "softib/smp/sma_common.h"

namespace softib::smp {

bool LegalPortStateTransition(uint8_t from, uint8_t to) {
  using mad::PortState;
  switch (static_cast<PortState>(to)) {
    case PortState::NO_CHANGE:
    case PortState::DOWN:
      return true;
    case PortState::ARMED:
      return from == static_cast<uint8_t>(PortState::INIT) ||
             from == static_cast<uint8_t>(PortState::ARMED);
    case PortState::ACTIVE:
      return from == static_cast<uint8_t>(PortState::ARMED) ||
             from == static_cast<uint8_t>(PortState::ACTIVE);
    case PortState::INIT:          // reached through the link only
    case PortState::ACTIVE_DEFER:  // not a state an SM sets here
      return false;
  }
  return false;  // reserved values
}

}  // namespace softib::smp
