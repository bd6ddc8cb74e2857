// iproute2 wrappers: address checks, and ip's own refusals passed on with its text.
#include "softib/ipoib/link_config.h"

#include <gtest/gtest.h>

#include "tap_test_support.h"

namespace softib::ipoib::link {
namespace {

TEST(LinkConfig, CheckCidr) {
  EXPECT_EQ(CheckCidr("198.18.0.1/24"), "");
  EXPECT_EQ(CheckCidr("198.18.0.1/32"), "");
  EXPECT_EQ(CheckCidr("fd00:5b::1/64"), "");
  EXPECT_EQ(CheckCidr("fd00:5b::1/128"), "");
  EXPECT_NE(CheckCidr("198.18.0.1"), "");
  EXPECT_NE(CheckCidr("198.18.0.1/33"), "");
  EXPECT_NE(CheckCidr("198.18.0.1/"), "");
  EXPECT_NE(CheckCidr("198.18.0.1/-1"), "");
  EXPECT_NE(CheckCidr("fd00::1/129"), "");
  EXPECT_NE(CheckCidr("host-0001/24"), "");
  EXPECT_TRUE(IsIpv6Cidr("fd00::1/64"));
  EXPECT_FALSE(IsIpv6Cidr("198.18.0.1/24"));
}

TEST(LinkConfig, MissingNamespaceIsNamed) {
  std::string error;
  const std::string ns = "sib-none-" + std::to_string(getpid());
  EXPECT_FALSE(NetnsExists(ns));
  EXPECT_FALSE(NetnsExists("../etc"));
  EXPECT_FALSE(MoveToNetns("lo", ns, &error));
  EXPECT_EQ(error, "network namespace \"" + ns + "\" does not exist (ip netns add " + ns + ")");
}

TEST(LinkConfig, IpErrorsCarryItsText) {
  if (!taptest::CanMakeTaps()) GTEST_FAIL() << "needs root and /dev/net/tun (CI runs as root)";
  std::string error;
  EXPECT_FALSE(RunIp({"link", "show", "dev", "sib-no-such-if"}, &error));
  EXPECT_EQ(error.rfind("ip link show dev sib-no-such-if: ", 0), 0u) << error;
  EXPECT_NE(error.find("does not exist"), std::string::npos) << error;
  EXPECT_FALSE(AddAddress("lo", "", "198.18.0.1", &error));
  EXPECT_NE(error.find("not ADDRESS/PREFIX-LENGTH"), std::string::npos) << error;
  taptest::Netns ns;
  std::string out;
  ASSERT_TRUE(NetnsExists(ns.name()));
  ASSERT_TRUE(SetLinkUp("lo", ns.name(), true, &error)) << error;
  ASSERT_TRUE(RunIp({"-n", ns.name(), "-o", "link", "show", "dev", "lo"}, &error, &out)) << error;
  EXPECT_NE(out.find("LOOPBACK,UP"), std::string::npos) << out;
}

}  // namespace
}  // namespace softib::ipoib::link
