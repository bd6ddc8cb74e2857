// The SM election (IBA 14.4) and SMInfo packing, without I/O.
#include <gtest/gtest.h>

#include "softib/sm/sminfo.h"
#include "softib/sm/smp.h"

namespace softib::sm {
namespace {

SmIdentity Sm(uint64_t guid, uint8_t priority, SmState state) {
  SmIdentity id;
  id.guid = guid;
  id.priority = priority;
  id.state = state;
  return id;
}

TEST(SmElection, PriorityThenLowerGuid) {
  EXPECT_TRUE(Outranks(Sm(9, 5, SmState::kStandby), Sm(1, 4, SmState::kStandby)));
  EXPECT_TRUE(Outranks(Sm(1, 5, SmState::kStandby), Sm(2, 5, SmState::kStandby)));
  EXPECT_FALSE(Outranks(Sm(2, 5, SmState::kStandby), Sm(1, 5, SmState::kStandby)));
}

TEST(SmElection, AloneOrBestBecomesMaster) {
  EXPECT_EQ(Elect(Sm(1, 0, SmState::kDiscovering), {}).role, SmState::kMaster);
  const Election e = Elect(Sm(1, 7, SmState::kDiscovering),
                           {Sm(2, 3, SmState::kStandby), Sm(3, 7, SmState::kDiscovering)});
  EXPECT_EQ(e.role, SmState::kMaster);
  EXPECT_FALSE(e.hand_over);
  // A not-active SM does not count, however good.
  EXPECT_EQ(Elect(Sm(5, 1, SmState::kDiscovering), {Sm(1, 15, SmState::kNotActive)}).role,
            SmState::kMaster);
}

TEST(SmElection, AMasterThereIsFollowedEvenIfWorse) {
  const Election e = Elect(Sm(1, 15, SmState::kDiscovering),
                           {Sm(8, 2, SmState::kStandby), Sm(9, 1, SmState::kMaster)});
  EXPECT_EQ(e.role, SmState::kStandby);
  ASSERT_TRUE(e.master);
  EXPECT_EQ(*e.master, 1u);
}

TEST(SmElection, ABetterDiscoveringSmIsWaitedFor) {
  const Election e = Elect(Sm(5, 1, SmState::kDiscovering), {Sm(7, 2, SmState::kDiscovering)});
  EXPECT_EQ(e.role, SmState::kStandby);
  ASSERT_TRUE(e.master);
  EXPECT_EQ(*e.master, 0u);
}

TEST(SmElection, MasterHandsOverToABetterStandby) {
  Election e = Elect(Sm(5, 1, SmState::kMaster), {Sm(7, 9, SmState::kStandby)});
  EXPECT_EQ(e.role, SmState::kMaster);
  ASSERT_TRUE(e.hand_over);
  EXPECT_EQ(*e.hand_over, 0u);
  // Not to one still discovering: it will see us MASTER and become STANDBY first.
  e = Elect(Sm(5, 1, SmState::kMaster), {Sm(7, 9, SmState::kDiscovering)});
  EXPECT_FALSE(e.hand_over);
  EXPECT_EQ(e.role, SmState::kMaster);
  e = Elect(Sm(5, 9, SmState::kMaster), {Sm(7, 1, SmState::kStandby)});
  EXPECT_FALSE(e.hand_over);
  EXPECT_EQ(e.role, SmState::kMaster);
}

TEST(SmElection, AMasterFollowsOnlyABetterMaster) {
  // Two took the subnet: the worse steps down to the better, which stays.
  Election e =
      Elect(Sm(5, 1, SmState::kMaster), {Sm(8, 0, SmState::kStandby), Sm(7, 9, SmState::kMaster)});
  EXPECT_EQ(e.role, SmState::kStandby);
  ASSERT_TRUE(e.master);
  EXPECT_EQ(*e.master, 1u);
  EXPECT_FALSE(e.hand_over);
  e = Elect(Sm(7, 9, SmState::kMaster), {Sm(5, 1, SmState::kMaster)});
  EXPECT_EQ(e.role, SmState::kMaster);
  EXPECT_FALSE(e.master);
  EXPECT_FALSE(e.hand_over);
  // A worse master next to a better standby: the standby gets the subnet.
  e = Elect(Sm(5, 4, SmState::kMaster), {Sm(6, 1, SmState::kMaster), Sm(7, 9, SmState::kStandby)});
  EXPECT_EQ(e.role, SmState::kMaster);
  EXPECT_FALSE(e.master);
  ASSERT_TRUE(e.hand_over);
  EXPECT_EQ(*e.hand_over, 1u);
}

TEST(SmInfoLayout, PackAndRead) {
  MadBytes mad = MakeDrSmp(kMethodGet, kAttrSmInfo, 0, {});
  SmIdentity id = Sm(0x0002c90300a00011ull, 11, SmState::kStandby);
  id.act_count = 0x01020304;
  PackSmInfo(id, 0x1122334455667788ull, mad);
  const auto data = SmpData(mad);
  EXPECT_EQ(data[0], 0x00);
  EXPECT_EQ(data[7], 0x11);            // GUID, big-endian
  EXPECT_EQ(data[8], 0x11);            // SM_Key
  EXPECT_EQ(data[16], 0x01);           // ActCount
  EXPECT_EQ(data[20], (11 << 4) | 2);  // Priority | SMState
  uint64_t key = 0;
  const SmIdentity back = ReadSmInfo(mad, &key);
  EXPECT_EQ(back.guid, id.guid);
  EXPECT_EQ(back.priority, 11);
  EXPECT_EQ(back.state, SmState::kStandby);
  EXPECT_EQ(back.act_count, 0x01020304u);
  EXPECT_EQ(key, 0x1122334455667788ull);
}

}  // namespace
}  // namespace softib::sm
