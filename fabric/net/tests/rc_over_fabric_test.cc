// RC across a multi-hop fabric that loses, duplicates and reorders packets: every message
// arrives exactly once, in order, with its bytes (IBA 9.7: the reliable transport recovers
// by PSN checks, duplicate detection, NAKs and retransmission on the ACK timeout).
#include <gtest/gtest.h>

#include <cstring>

#include "rc_scenario.h"

namespace softib::fabric {
namespace {

using testing::RcOverSwitches;

TEST(RcOverFabric, CleanFabricCarriesASendEndToEnd) {
  RcOverSwitches s(1);
  const testing::RcRunResult r = s.RunSends(1);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.messages_received, 1u);
  // One data packet (the first message is 1 byte) and its ACK crossed every cable once.
  for (uint32_t cable : s.cables) {
    EXPECT_EQ(s.fabric.counters(cable, 0).carried + s.fabric.counters(cable, 1).carried, 2u);
  }
}

TEST(RcOverFabric, ThousandsOfMessagesExactlyOnceInOrderAtTenPercentLoss) {
  RcOverSwitches s(20261123);
  // Per cable: 3.5% loss (10% end to end over three cables), 5% duplication, 10% reorder,
  // both directions: requests, ACKs and NAKs all suffer.
  LinkFaults faults;
  faults.loss = 35;
  faults.duplicate = 50;
  faults.reorder = 100;
  s.SetFaultsEverywhere(faults);
  constexpr uint32_t kMessages = 3000;
  const testing::RcRunResult r = s.RunSends(kMessages);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.sends_completed, kMessages);
  EXPECT_EQ(r.messages_received, kMessages);
  // The faults happened, at about the rates asked for.
  const double loss_rate = static_cast<double>(r.lost) / static_cast<double>(r.lost + r.carried);
  EXPECT_GT(loss_rate, 0.025);
  EXPECT_LT(loss_rate, 0.045);
  EXPECT_GT(r.duplicated, 100u);
  EXPECT_GT(r.reordered, 100u);
  // Nothing is left to arrive twice.
  for (int i = 0; i < 20; ++i) s.Step();
  abi::WorkCompletion extra[4];
  EXPECT_EQ(s.b->hca.Cq(s.eb.cq)->Poll(extra), 0u);
  EXPECT_EQ(s.a->hca.Cq(s.ea.cq)->Poll(extra), 0u);
}

TEST(RcOverFabric, ALongFlapOfTheMiddleCableEndsInRetryExceeded) {
  RcOverSwitches s(3);
  s.fabric.SetCableUp(s.cables[1], false);
  const testing::RcRunResult r = s.RunSends(4);
  // 4.2 ms timeout, 7 retries: the first send fails with RETRY_EXC_ERR (IBA 9.7.6.1.3).
  EXPECT_NE(r.error.find("completed with status"), std::string::npos) << r.error;
  EXPECT_EQ(r.messages_received, 0u);
}

}  // namespace
}  // namespace softib::fabric
