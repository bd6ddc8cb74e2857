// The PortState rules of a SubnSet(PortInfo) (IBA 14.2.5.6, PortInfo:PortState, with the
// logical port state machine of 7.2), written from the spec's values, not the IDL's enum:
// 0 no state change, 1 Down, 2 Initialize, 3 Armed, 4 Active, 5 ActiveDefer, 6-15 reserved.
#include <gtest/gtest.h>

#include <cstdint>

#include "softib/smp/sma_common.h"

namespace softib::smp {
namespace {

constexpr uint8_t kNop = 0, kDown = 1, kInit = 2, kArmed = 3, kActive = 4, kActiveDefer = 5;
constexpr uint8_t kStates[] = {kDown, kInit, kArmed, kActive};

TEST(PortStateTransition, NoChangeAndDownAreLegalFromEveryState) {
  for (uint8_t from : kStates) {
    EXPECT_TRUE(LegalPortStateTransition(from, kNop)) << int{from};
    EXPECT_TRUE(LegalPortStateTransition(from, kDown)) << int{from};
  }
}

TEST(PortStateTransition, ArmedOnlyFromInitOrArmed) {
  EXPECT_FALSE(LegalPortStateTransition(kDown, kArmed));
  EXPECT_TRUE(LegalPortStateTransition(kInit, kArmed));
  EXPECT_TRUE(LegalPortStateTransition(kArmed, kArmed));  // asks for the state it is in
  EXPECT_FALSE(LegalPortStateTransition(kActive, kArmed));
}

TEST(PortStateTransition, ActiveOnlyFromArmedOrActive) {
  EXPECT_FALSE(LegalPortStateTransition(kDown, kActive));
  EXPECT_FALSE(LegalPortStateTransition(kInit, kActive));  // Init must go through Armed
  EXPECT_TRUE(LegalPortStateTransition(kArmed, kActive));
  EXPECT_TRUE(LegalPortStateTransition(kActive, kActive));
}

TEST(PortStateTransition, InitIsNeverSet) {
  // The link brings a port to Initialize; an SM cannot ask for it.
  for (uint8_t from : kStates) EXPECT_FALSE(LegalPortStateTransition(from, kInit)) << int{from};
}

TEST(PortStateTransition, ActiveDeferAndReservedValuesAreRefused) {
  for (uint8_t from : kStates) {
    EXPECT_FALSE(LegalPortStateTransition(from, kActiveDefer)) << int{from};
    for (uint8_t to = 6; to <= 15; ++to)
      EXPECT_FALSE(LegalPortStateTransition(from, to)) << int{from} << " -> " << int{to};
  }
}

}  // namespace
}  // namespace softib::smp
