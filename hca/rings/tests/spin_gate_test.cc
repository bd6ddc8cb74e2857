// The spin gate's rule and its reading of /proc/loadavg (hca/rings/spin_gate.h).
#include "softib/rings/spin_gate.h"

#include <gtest/gtest.h>

namespace softib::rings {
namespace {

TEST(SpinGate, ParsesTheRunnableCountOfLoadavg) {
  EXPECT_EQ(ParseRunnable("0.52 0.58 0.59 3/467 12345\n"), 3u);
  EXPECT_EQ(ParseRunnable("10.00 9.10 8.20 17/1024 99"), 17u);
  EXPECT_EQ(ParseRunnable("0.52 0.58 0.59 3"), std::nullopt);       // no "/T"
  EXPECT_EQ(ParseRunnable("0.52 0.58 0.59 /467 1"), std::nullopt);  // no R
  EXPECT_EQ(ParseRunnable("0.52 0.58"), std::nullopt);              // too few fields
  EXPECT_EQ(ParseRunnable(""), std::nullopt);
}

TEST(SpinGate, SpinsOnlyWithACpuForTheSpinner) {
  EXPECT_TRUE(SpinPays(1, 2));   // the caller alone
  EXPECT_TRUE(SpinPays(2, 2));   // the caller and the thread it waits for
  EXPECT_FALSE(SpinPays(3, 2));  // one busy process more than CPUs: sleep at once
  EXPECT_FALSE(SpinPays(4, 2));
  EXPECT_FALSE(SpinPays(2, 1));
}

TEST(SpinGate, EnvironmentOverride) {
  EXPECT_EQ(SpinModeFromEnv(nullptr), SpinMode::kAuto);
  EXPECT_EQ(SpinModeFromEnv("always"), SpinMode::kAlways);
  EXPECT_EQ(SpinModeFromEnv("never"), SpinMode::kNever);
  EXPECT_EQ(SpinModeFromEnv("sometimes"), SpinMode::kAuto);
}

}  // namespace
}  // namespace softib::rings
