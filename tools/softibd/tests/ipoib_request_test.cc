// softibd's IPoIB `up` request: key=value arguments parsed and checked before anything is
// created (the namespace must exist, P_Keys are 16 bits with a partition number).
#include "ipoib_request.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace softib::softibd {
namespace {

TEST(IpoibRequest, DefaultsAndEveryKey) {
  IpoibUp up;
  ASSERT_EQ(ParseIpoibUp({}, &up), "");
  EXPECT_EQ(up.name, "");
  EXPECT_EQ(up.ports, std::vector<uint8_t>{1});
  EXPECT_EQ(up.pkey, 0xFFFF);
  EXPECT_EQ(up.mode, ipoib::Mode::kDatagram);
  EXPECT_EQ(up.netns, "");
  ASSERT_EQ(ParseIpoibUp({"name=ib7", "ports=1,2", "pkey=0x0001", "mode=connected",
                          "addr=198.18.0.1/24", "addr=fd00:5b::1/64"},
                         &up),
            "");
  EXPECT_EQ(up.name, "ib7");
  EXPECT_EQ(up.ports, (std::vector<uint8_t>{1, 2}));
  EXPECT_EQ(up.pkey, 0x8001);  // the full-membership bit
  EXPECT_EQ(up.mode, ipoib::Mode::kConnected);
  EXPECT_EQ(up.addrs, (std::vector<std::string>{"198.18.0.1/24", "fd00:5b::1/64"}));
}

TEST(IpoibRequest, Refusals) {
  IpoibUp up;
  EXPECT_EQ(ParseIpoibUp({"pkey=0x8000"}, &up),
            "bad P_Key \"0x8000\" (16 bits, a partition number other than 0; 0xffff: the "
            "default partition)");
  EXPECT_NE(ParseIpoibUp({"pkey=0x10001"}, &up), "");
  EXPECT_EQ(ParseIpoibUp({"pkey=ff"}, &up), "bad P_Key \"ff\" (a number such as 0x8001)");
  EXPECT_EQ(ParseIpoibUp({"mode=rc"}, &up), "bad mode \"rc\" (datagram or connected)");
  EXPECT_EQ(ParseIpoibUp({"ports=3"}, &up), "bad port \"3\" (1 or 2)");
  EXPECT_NE(ParseIpoibUp({"ports=1,1"}, &up), "");
  EXPECT_NE(ParseIpoibUp({"name=a-name-far-too-long"}, &up), "");
  EXPECT_NE(ParseIpoibUp({"name=a/b"}, &up), "");
  EXPECT_NE(ParseIpoibUp({"addr=198.18.0.1"}, &up), "");
  EXPECT_EQ(ParseIpoibUp({"colour=red"}, &up),
            "unknown key \"colour\" (name ports pkey mode lbfo failback netns addr)");
  EXPECT_EQ(ParseIpoibUp({"up"}, &up), "\"up\" is not key=value");
  const std::string ns = "sib-absent-" + std::to_string(getpid());
  EXPECT_EQ(ParseIpoibUp({"netns=" + ns}, &up),
            "network namespace \"" + ns + "\" does not exist (ip netns add " + ns + ")");
}

TEST(IpoibRequest, Pkey) {
  uint16_t pkey = 0;
  EXPECT_EQ(ParsePkey("0xffff", &pkey), "");
  EXPECT_EQ(pkey, 0xFFFF);
  EXPECT_EQ(ParsePkey("0x7fff", &pkey), "");
  EXPECT_EQ(pkey, 0xFFFF);
  EXPECT_EQ(ParsePkey("32769", &pkey), "");
  EXPECT_EQ(pkey, 0x8001);
  EXPECT_NE(ParsePkey("0", &pkey), "");
  EXPECT_NE(ParsePkey("", &pkey), "");
  EXPECT_NE(ParsePkey("0x1x", &pkey), "");
}

}  // namespace
}  // namespace softib::softibd
