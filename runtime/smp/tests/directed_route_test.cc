// Directed-route rules (IBA 14.2.2) on hand-written SMP bytes. Offsets come from the
// spec's SMP format (14.2.1.2), not from the IDL: byte 1 MgmtClass, byte 4 bit 7 D,
// byte 6 HopPointer, byte 7 HopCount, bytes 32-33 DrSLID, 34-35 DrDLID, 128.. InitialPath,
// 192.. ReturnPath.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <initializer_list>

#include "softib/smp/directed_route.h"

namespace softib::smp {
namespace {

constexpr std::size_t kHopPointer = 6;
constexpr std::size_t kHopCount = 7;
constexpr std::size_t kInitialPath = 128;
constexpr std::size_t kReturnPath = 192;

using Smp = std::array<uint8_t, 256>;

// A SubnGet(NodeInfo) with the given path (entries 1..n of InitialPath).
Smp DrGet(std::initializer_list<uint8_t> initial_path, uint16_t dr_slid = 0xFFFF,
          uint16_t dr_dlid = 0xFFFF) {
  Smp smp{};
  smp[0] = 0x01;  // BaseVersion
  smp[1] = 0x81;  // MgmtClass SubnMgtDR
  smp[2] = 0x01;  // ClassVersion
  smp[3] = 0x01;  // Get
  smp[kHopCount] = static_cast<uint8_t>(initial_path.size());
  smp[16] = 0x00;
  smp[17] = 0x11;  // NodeInfo
  smp[32] = static_cast<uint8_t>(dr_slid >> 8);
  smp[33] = static_cast<uint8_t>(dr_slid);
  smp[34] = static_cast<uint8_t>(dr_dlid >> 8);
  smp[35] = static_cast<uint8_t>(dr_dlid);
  std::size_t i = 1;
  for (uint8_t port : initial_path) smp[kInitialPath + i++] = port;
  return smp;
}

bool Returning(const Smp& smp) { return (smp[4] & 0x80) != 0; }

constexpr NodeShape kCa{false, 2};
constexpr NodeShape kSwitch{true, 8};

// SM on a CA's port 1 -> S1 (in 4, out 2) -> S2 (in 6, out 3) -> S3 (in 1): three hops out
// to S3's SMA and back, checking the hop pointer and the paths at every stage.
TEST(DirectedRoute, ThreeHopsOutAndBack) {
  Smp smp = DrGet({1, 2, 3});
  const Smp request = smp;

  ASSERT_EQ(PrepareSend(smp, kCa, 1), Drop::kNone);  // C14-9:1
  EXPECT_EQ(smp[kHopPointer], 1);

  Decision d = OnArrival(smp, kSwitch, 4);  // S1, C14-9:2
  ASSERT_EQ(d.verdict, Verdict::kForward);
  EXPECT_EQ(d.port, 2);
  EXPECT_EQ(smp[kHopPointer], 2);
  EXPECT_EQ(smp[kReturnPath + 1], 4);

  d = OnArrival(smp, kSwitch, 6);  // S2
  ASSERT_EQ(d.verdict, Verdict::kForward);
  EXPECT_EQ(d.port, 3);
  EXPECT_EQ(smp[kHopPointer], 3);
  EXPECT_EQ(smp[kReturnPath + 2], 6);

  d = OnArrival(smp, kSwitch, 1);  // S3: end of the path, C14-9:3 then C14-9:4
  ASSERT_EQ(d.verdict, Verdict::kLocal);
  EXPECT_EQ(smp[kHopPointer], 4);
  EXPECT_EQ(smp[kReturnPath + 3], 1);
  EXPECT_FALSE(Returning(smp));

  smp[3] = 0x81;                      // the SMA's GetResp
  d = Respond(smp, kSwitch, 0xFFFF);  // C14-13:1
  ASSERT_EQ(d.verdict, Verdict::kForward);
  EXPECT_EQ(d.port, 1);
  EXPECT_TRUE(Returning(smp));
  EXPECT_EQ(smp[4], 0x80);
  EXPECT_EQ(smp[kHopPointer], 3);

  d = OnArrival(smp, kSwitch, 3);  // S2, C14-13:2
  ASSERT_EQ(d.verdict, Verdict::kForward);
  EXPECT_EQ(d.port, 6);
  EXPECT_EQ(smp[kHopPointer], 2);

  d = OnArrival(smp, kSwitch, 2);  // S1
  ASSERT_EQ(d.verdict, Verdict::kForward);
  EXPECT_EQ(d.port, 4);
  EXPECT_EQ(smp[kHopPointer], 1);

  d = OnArrival(smp, kCa, 1);  // the SM's CA, C14-13:3 with a permissive DrSLID
  ASSERT_EQ(d.verdict, Verdict::kLocal);
  EXPECT_EQ(smp[kHopPointer], 0);

  // The SM sees D = 1, HopPointer 0, ReturnPath = the ingress port at each hop, and the
  // InitialPath it wrote.
  const std::array<uint8_t, 4> expected_return{0, 4, 6, 1};
  for (std::size_t i = 0; i < expected_return.size(); ++i)
    EXPECT_EQ(smp[kReturnPath + i], expected_return[i]) << i;
  for (std::size_t i = 0; i < 64; ++i)
    EXPECT_EQ(smp[kInitialPath + i], request[kInitialPath + i]) << i;
}

// HopCount 0: the node's own SMA (HopPointer 0 -> 1 -> 0).
TEST(DirectedRoute, HopCountZeroIsTheLocalSma) {
  Smp smp = DrGet({});
  ASSERT_EQ(OnArrival(smp, kSwitch, 0).verdict, Verdict::kLocal);
  EXPECT_EQ(smp[kHopPointer], 1);
  const Decision d = Respond(smp, kSwitch, 0xFFFF);
  EXPECT_EQ(d.verdict, Verdict::kLocal);
  EXPECT_EQ(smp[kHopPointer], 0);
  EXPECT_TRUE(Returning(smp));
}

// The SM (LID 5) reaches S1 (LID 1) LID-routed, then S1 -> S2 by directed route (out of
// S1's port 2). On the way back the switch before S1 (S0, a LID-routed hop) takes it off
// the directed route and sends it LID-routed to DrSLID.
TEST(DirectedRoute, LidRoutedThenDirectedRoute) {
  Smp smp = DrGet({1, 2}, /*dr_slid=*/5);
  ASSERT_EQ(PrepareSend(smp, kCa, 1), Drop::kNone);
  EXPECT_EQ(smp[kHopPointer], 1);
  // (S0 forwards it by LFT: not a directed-route step.)
  Decision d = OnArrival(smp, kSwitch, 7);  // S1, addressed by its LID
  ASSERT_EQ(d.verdict, Verdict::kForward);
  EXPECT_EQ(d.port, 2);
  EXPECT_EQ(smp[kReturnPath + 1], 7);
  EXPECT_EQ(smp[kHopPointer], 2);

  d = OnArrival(smp, kSwitch, 5);  // S2
  ASSERT_EQ(d.verdict, Verdict::kLocal);
  EXPECT_EQ(smp[kHopPointer], 3);
  d = Respond(smp, kSwitch, 0xFFFF);
  ASSERT_EQ(d.verdict, Verdict::kForward);
  EXPECT_EQ(d.port, 5);

  d = OnArrival(smp, kSwitch, 2);  // S1
  ASSERT_EQ(d.verdict, Verdict::kForward);
  EXPECT_EQ(d.port, 7);
  EXPECT_EQ(smp[kHopPointer], 1);

  d = OnArrival(smp, kSwitch, 3);  // S0: C14-13:3 with a LID in DrSLID
  ASSERT_EQ(d.verdict, Verdict::kForwardByLid);
  EXPECT_EQ(d.lid, 5);
  EXPECT_EQ(smp[kHopPointer], 0);

  d = OnArrival(smp, kCa, 1);  // the SM, reached LID-routed: C14-13:4
  EXPECT_EQ(d.verdict, Verdict::kLocal);
}

// Directed route to S1, then LID-routed to DrDLID 9; the response comes back LID-routed to
// S1 (the request's SLID), which puts it back on the directed route.
TEST(DirectedRoute, DirectedRouteThenLidRouted) {
  Smp smp = DrGet({1}, 0xFFFF, /*dr_dlid=*/9);
  ASSERT_EQ(PrepareSend(smp, kCa, 1), Drop::kNone);
  Decision d = OnArrival(smp, kSwitch, 4);  // S1, end of the DR part
  ASSERT_EQ(d.verdict, Verdict::kForwardByLid);
  EXPECT_EQ(d.lid, 9);
  EXPECT_EQ(smp[kHopPointer], 2);
  EXPECT_EQ(smp[kReturnPath + 1], 4);

  d = OnArrival(smp, kCa, 1);  // the node with LID 9: C14-9:4
  ASSERT_EQ(d.verdict, Verdict::kLocal);
  d = Respond(smp, kCa, /*request_slid=*/3);
  ASSERT_EQ(d.verdict, Verdict::kForwardByLid);
  EXPECT_EQ(d.lid, 3);
  EXPECT_EQ(smp[kHopPointer], 2);

  d = OnArrival(smp, kSwitch, 6);  // back at S1 (LID 3)
  ASSERT_EQ(d.verdict, Verdict::kForward);
  EXPECT_EQ(d.port, 4);
  EXPECT_EQ(smp[kHopPointer], 1);

  d = OnArrival(smp, kCa, 1);
  EXPECT_EQ(d.verdict, Verdict::kLocal);
  EXPECT_EQ(smp[kHopPointer], 0);
}

TEST(DirectedRoute, BadHopPointerIsDropped) {
  Smp smp = DrGet({1, 2});
  smp[kHopPointer] = 5;  // neither <= HopCount nor HopCount + 1
  EXPECT_EQ(OnArrival(smp, kSwitch, 1).reason, Drop::kBadHopPointer);
  smp[kHopPointer] = 0;  // the sender did not move it (C14-9:1)
  EXPECT_EQ(OnArrival(smp, kSwitch, 1).reason, Drop::kBadHopPointer);

  Smp back = DrGet({1, 2});
  back[4] = 0x80;
  back[kHopPointer] = 4;  // returning, beyond HopCount + 1
  EXPECT_EQ(OnArrival(back, kSwitch, 1).reason, Drop::kBadHopPointer);
  EXPECT_EQ(PrepareSend(back, kSwitch, 1), Drop::kBadHopPointer);
}

TEST(DirectedRoute, BadHopCountIsDropped) {
  Smp smp = DrGet({1});
  smp[kHopCount] = 64;
  smp[kHopPointer] = 1;
  EXPECT_EQ(OnArrival(smp, kSwitch, 1).reason, Drop::kBadHopCount);
  EXPECT_EQ(PrepareSend(smp, kCa, 1), Drop::kBadHopCount);
  EXPECT_EQ(Respond(smp, kCa, 0).reason, Drop::kBadHopCount);
}

TEST(DirectedRoute, OnlySwitchesRelay) {
  Smp smp = DrGet({1, 2, 3});
  smp[kHopPointer] = 1;
  EXPECT_EQ(OnArrival(smp, kCa, 1).reason, Drop::kNotASwitch);
  smp[kHopPointer] = 2;
  EXPECT_EQ(PrepareSend(smp, kCa, 3), Drop::kNotASwitch);
}

TEST(DirectedRoute, PathMustNameARealPort) {
  Smp smp = DrGet({1, 9});  // S1 has 8 ports
  smp[kHopPointer] = 1;
  const Decision d = OnArrival(smp, kSwitch, 1);
  EXPECT_EQ(d.reason, Drop::kBadPort);
  EXPECT_EQ(smp[kReturnPath + 1], 0) << "a dropped SMP is not half-updated";

  Smp zero = DrGet({1, 0});
  zero[kHopPointer] = 1;
  EXPECT_EQ(OnArrival(zero, kSwitch, 1).reason, Drop::kBadPort);
}

TEST(DirectedRoute, SenderMustUseThePathsPort) {
  Smp smp = DrGet({2});
  EXPECT_EQ(PrepareSend(smp, kCa, 1), Drop::kWrongEgressPort);
}

TEST(DirectedRoute, CaDoesNotStartALidSegment) {
  Smp smp = DrGet({1}, 0xFFFF, 9);
  smp[kHopPointer] = 1;
  EXPECT_EQ(OnArrival(smp, kCa, 1).reason, Drop::kLidSegmentAtCa);
}

TEST(DirectedRoute, MalformedInput) {
  std::array<uint8_t, 100> small{};
  EXPECT_EQ(OnArrival(small, kSwitch, 1).reason, Drop::kTooShort);
  Smp lid_routed = DrGet({1});
  lid_routed[1] = 0x01;
  EXPECT_EQ(OnArrival(lid_routed, kSwitch, 1).reason, Drop::kNotDirectedRoute);
  EXPECT_STREQ(ToString(Drop::kBadHopCount), "hop count above 63");
}

}  // namespace
}  // namespace softib::smp
