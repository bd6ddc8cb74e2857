// IGMP and MLD snooping: the groups the host joins and leaves, as MGIDs with every group bit.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "softib/ipoib/translate.h"
#include "translate_test_util.h"

namespace softib::ipoib {
namespace {

using testing::GidOf;
using testing::Hex;

std::vector<GroupChange> Snoop(const std::string& hex) {
  const auto frame = Hex(hex);
  return SnoopHostMembership(frame, testing::Local());
}

// IPv4 with the router-alert option (IHL 6), as Linux sends IGMP.
std::string Igmp(const std::string& dst_mac, const std::string& dst_ip, size_t igmp_bytes,
                 const std::string& igmp) {
  char total[5];
  std::snprintf(total, sizeof(total), "%04zx", 24 + igmp_bytes);
  return dst_mac + " 020000000001 0800 4600 " + total + " 0000 4000 0102 0000 c6120001 " + dst_ip +
         " 94040000 " + igmp;
}

TEST(Snoop, IgmpV2ReportJoinsAndLeaveLeavesTheFullGroup) {
  auto join = Snoop(Igmp("01005e010101", "ef810101", 8, "16 00 0000 ef810101"));
  ASSERT_EQ(join.size(), 1u);
  EXPECT_TRUE(join[0].join);
  EXPECT_EQ(join[0].mgid, GidOf("ff12 401b ffff 0000 0000 0000 0f81 0101"));
  auto leave = Snoop(Igmp("01005e000002", "e0000002", 8, "17 00 0000 ef810101"));
  ASSERT_EQ(leave.size(), 1u);
  EXPECT_FALSE(leave[0].join);
  EXPECT_EQ(leave[0].mgid, GidOf("ff12 401b ffff 0000 0000 0000 0f81 0101"));
  auto v1 = Snoop(Igmp("01005e010101", "ef010101", 8, "12 00 0000 ef010101"));
  ASSERT_EQ(v1.size(), 1u);
  EXPECT_TRUE(v1[0].join);
}

TEST(Snoop, IgmpV3RecordsJoinUnlessTheyLeave) {
  // TO_EX({}) 239.2.2.2: join; TO_IN({}) 239.3.3.3: leave; IS_IN({198.18.0.9}) 239.4.4.4:
  // join (the source list is not tracked).
  auto changes = Snoop(Igmp("01005e000016", "e0000016", 36,
                            "22 00 0000 0000 0003 04 00 0000 ef020202 03 00 0000 ef030303 "
                            "01 00 0001 ef040404 c6120009"));
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_TRUE(changes[0].join);
  EXPECT_EQ(changes[0].mgid, GidOf("ff12 401b ffff 0000 0000 0000 0f02 0202"));
  EXPECT_FALSE(changes[1].join);
  EXPECT_EQ(changes[1].mgid, GidOf("ff12 401b ffff 0000 0000 0000 0f03 0303"));
  EXPECT_TRUE(changes[2].join);
  EXPECT_EQ(changes[2].mgid, GidOf("ff12 401b ffff 0000 0000 0000 0f04 0404"));
  // A record count past the end: the records that fit only.
  auto cut =
      Snoop(Igmp("01005e000016", "e0000016", 16, "22 00 0000 0000 0009 04 00 0000 ef020202"));
  ASSERT_EQ(cut.size(), 1u);
}

TEST(Snoop, AllHostsQueriesAndOtherTrafficGiveNothing) {
  EXPECT_TRUE(Snoop(Igmp("01005e000001", "e0000001", 8, "16 00 0000 e0000001")).empty());
  EXPECT_TRUE(Snoop(Igmp("01005e000001", "e0000001", 8, "11 64 0000 00000000")).empty());
  EXPECT_TRUE(Snoop("ffffffffffff 020000000001 0806 0001 0800 06 04 0001").empty());
  EXPECT_TRUE(Snoop("01005e01").empty());
  // A UDP datagram is no report.
  EXPECT_TRUE(Snoop("01005e010101 020000000001 0800 4500 0020 0000 0000 0111 0000 c6120001 "
                    "ef010101 0400 0007 000c 0000 61626364")
                  .empty());
}

// IPv6 with a hop-by-hop header carrying router alert, as MLD is sent.
std::string Mld(const std::string& dst, size_t icmp_bytes, const std::string& icmp) {
  char length[5];
  std::snprintf(length, sizeof(length), "%04zx", 8 + icmp_bytes);
  return "333300000016 020000000001 86dd 6000 0000 " + std::string(length) +
         " 00 01 fe800000000000000000000000000001 " + dst + " 3a00 0502 0000 0100 " + icmp;
}

TEST(Snoop, MldV1ReportJoinsAndDoneLeaves) {
  auto join = Snoop(Mld("ff0200000000000000000001ff000002", 24,
                        "83 00 0000 0000 0000 ff0200000000000000000001ff000002"));
  ASSERT_EQ(join.size(), 1u);
  EXPECT_TRUE(join[0].join);
  EXPECT_EQ(join[0].mgid, GidOf("ff12 601b ffff 0000 0000 0001 ff00 0002"));
  auto done = Snoop(Mld("ff020000000000000000000000000002", 24,
                        "84 00 0000 0000 0000 ff0200000000000000000001ff000002"));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_FALSE(done[0].join);
}

TEST(Snoop, MldV2RecordsJoinUnlessTheyLeaveAndAllNodesIsIgnored) {
  auto changes = Snoop(Mld("ff020000000000000000000000000016", 68,
                           "8f 00 0000 0000 0003 "
                           "04 00 0000 ff050000000000000000000000010003 "
                           "03 00 0000 ff0e0000000000000000000000000101 "
                           "04 00 0000 ff020000000000000000000000000001"));
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_TRUE(changes[0].join);
  EXPECT_EQ(changes[0].mgid, GidOf("ff15 601b ffff 0000 0000 0000 0001 0003"));
  EXPECT_FALSE(changes[1].join);
  EXPECT_EQ(changes[1].mgid, GidOf("ff1e 601b ffff 0000 0000 0000 0000 0101"));
}

}  // namespace
}  // namespace softib::ipoib
