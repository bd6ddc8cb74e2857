// AddressWatch: the list it reports follows `ip addr add/del` in the interface's namespace,
// IPv4 and IPv6, without the link-local address and without other interfaces' addresses.
#include "softib/ipoib/address_watch.h"

#include <arpa/inet.h>

#include <condition_variable>
#include <mutex>

#include "softib/ipoib/tap_face.h"
#include "tap_test_support.h"

namespace softib::ipoib {
namespace {

IpAddr Parse(const char* text) {
  IpAddr a;
  a.v6 = std::strchr(text, ':') != nullptr;
  EXPECT_EQ(inet_pton(a.v6 ? AF_INET6 : AF_INET, text, a.bytes.data()), 1) << text;
  return a;
}

// The lists the handler got, for the test thread to wait on.
class Lists {
 public:
  void Push(const std::vector<IpAddr>& list) {
    std::lock_guard lock(mutex_);
    last_ = list;
    ++count_;
    cv_.notify_all();
  }
  // Until the last list is `want` (bounded); the last list either way.
  std::vector<IpAddr> WaitFor(const std::vector<IpAddr>& want) {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return count_ > 0 && last_ == want; });
    return last_;
  }
  int count() {
    std::lock_guard lock(mutex_);
    return count_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<IpAddr> last_;
  int count_ = 0;
};

void Ip(const std::vector<std::string>& args) {
  std::string error;
  ASSERT_TRUE(link::RunIp(args, &error)) << error;
}

TEST(AddressWatch, FollowsTheHostsAddressesInTheInterfacesNamespace) {
  if (!taptest::CanMakeTaps()) GTEST_FAIL() << "needs root and /dev/net/tun (CI runs as root)";
  taptest::Netns ns;
  std::string error;
  const std::string name = "sibaw" + std::to_string(getpid() % 100000);
  TapConfig config;
  config.name = name;
  auto tap = TapFace::Create(config, &error);
  ASSERT_TRUE(tap) << error;
  ASSERT_TRUE(link::MoveToNetns(name, ns.name(), &error)) << error;
  // Another interface's address in the same namespace is not ours.
  Ip({"-n", ns.name(), "addr", "add", "198.18.7.9/32", "dev", "lo"});
  Ip({"-n", ns.name(), "addr", "add", "198.18.7.1/24", "dev", name});

  Lists lists;
  auto watch = AddressWatch::Start(
      name, ns.name(), [&](const std::vector<IpAddr>& l) { lists.Push(l); }, &error);
  ASSERT_TRUE(watch) << error;
  const IpAddr v4 = Parse("198.18.7.1"), v6 = Parse("fd00:5b18:7::1");
  EXPECT_EQ(lists.WaitFor({v4}), std::vector<IpAddr>{v4});  // the list at start

  Ip({"-n", ns.name(), "link", "set", name, "up"});  // brings fe80::, which is left out
  Ip({"-n", ns.name(), "addr", "add", "fd00:5b18:7::1/64", "dev", name, "nodad"});
  EXPECT_EQ(lists.WaitFor({v4, v6}), (std::vector<IpAddr>{v4, v6}));
  Ip({"-n", ns.name(), "addr", "del", "198.18.7.1/24", "dev", name});
  EXPECT_EQ(lists.WaitFor({v6}), std::vector<IpAddr>{v6});
  const int seen = lists.count();
  watch.reset();  // no call after this
  Ip({"-n", ns.name(), "addr", "add", "198.18.7.2/24", "dev", name});
  EXPECT_EQ(lists.count(), seen);
}

TEST(AddressWatch, NamesWhatIsMissing) {
  if (!taptest::CanMakeTaps()) GTEST_FAIL() << "needs root and /dev/net/tun (CI runs as root)";
  std::string error;
  EXPECT_FALSE(AddressWatch::Start(
      "sibaw-none", "", [](const std::vector<IpAddr>&) {}, &error));
  EXPECT_NE(error.find("interface sibaw-none"), std::string::npos) << error;
  EXPECT_FALSE(AddressWatch::Start(
      "lo", "sibaw-no-such-ns", [](const std::vector<IpAddr>&) {}, &error));
  EXPECT_NE(error.find("/run/netns/sibaw-no-such-ns"), std::string::npos) << error;
}

}  // namespace
}  // namespace softib::ipoib
