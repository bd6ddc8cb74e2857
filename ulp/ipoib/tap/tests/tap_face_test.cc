// The TAP face against the host's real network stack, in a namespace of the test's own:
// a frame the face delivers arrives as a packet (the kernel answers an ARP request and an
// ICMP echo), and what the kernel sends comes out of the face's handler.
#include "softib/ipoib/tap_face.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <sstream>
#include <thread>

#include "softib/ipoib/link_config.h"
#include "tap_test_support.h"

namespace softib::ipoib {
namespace {

using taptest::Be16;
using taptest::FrameQueue;
using taptest::Netns;

// Root is a requirement, not an option: a test that cannot make TAPs fails and says why.
#define REQUIRE_ROOT() \
  if (!taptest::CanMakeTaps()) GTEST_FAIL() << "needs root and /dev/net/tun (CI runs as root)"

std::string TapName(const char* tag) {
  return std::string("sib") + tag + std::to_string(getpid() % 100000);
}

std::string LinkLine(const std::string& name, const std::string& netns) {
  std::string error, out;
  std::vector<std::string> args = {"-o", "link", "show", "dev", name};
  if (!netns.empty()) args.insert(args.begin(), {"-n", netns});
  EXPECT_TRUE(link::RunIp(args, &error, &out)) << error;
  return out;
}

constexpr Mac kFaceMac = {0x02, 0x5B, 0x00, 0x00, 0x00, 0x01};
constexpr taptest::Mac6 kPeerMac = {0x02, 0x5B, 0x00, 0x00, 0x00, 0x02};
constexpr taptest::Ip4 kHostIp = {198, 18, 0, 1};
constexpr taptest::Ip4 kPeerIp = {198, 18, 0, 2};

TEST(TapFace, CreateSetsNameMacMtuAndCarrier) {
  REQUIRE_ROOT();
  std::string error;
  TapConfig config;
  config.name = TapName("c");
  config.mac = kFaceMac;
  config.mtu = 2044;
  auto face = TapFace::Create(config, &error);
  ASSERT_NE(face, nullptr) << error;
  EXPECT_EQ(face->name(), config.name);
  EXPECT_EQ(face->mac(), kFaceMac);
  EXPECT_EQ(face->mtu(), 2044u);
  EXPECT_FALSE(face->carrier());
  ASSERT_TRUE(link::SetLinkUp(face->name(), "", true, &error)) << error;
  std::string line = LinkLine(face->name(), "");
  EXPECT_NE(line.find("mtu 2044"), std::string::npos) << line;
  EXPECT_NE(line.find("link/ether 02:5b:00:00:00:01"), std::string::npos) << line;
  EXPECT_NE(line.find("NO-CARRIER"), std::string::npos) << line;
  face->SetCarrier(true);
  EXPECT_TRUE(face->carrier());
  line = LinkLine(face->name(), "");
  EXPECT_EQ(line.find("NO-CARRIER"), std::string::npos) << line;
  EXPECT_NE(line.find("LOWER_UP"), std::string::npos) << line;
  const std::string name = face->name();
  face.reset();  // the interface goes with the file
  std::string out;
  EXPECT_FALSE(link::RunIp({"link", "show", "dev", name}, &error, &out));
}

TEST(TapFace, RefusesBadConfigs) {
  REQUIRE_ROOT();
  std::string error;
  TapConfig config;
  config.name = "a-name-far-too-long";
  EXPECT_EQ(TapFace::Create(config, &error), nullptr);
  EXPECT_NE(error.find("longer than 15"), std::string::npos) << error;
  config.name = TapName("b");
  config.mtu = kTapMaxMtu + 1;
  EXPECT_EQ(TapFace::Create(config, &error), nullptr);
  EXPECT_NE(error.find("out of range"), std::string::npos) << error;
  config.mtu = 0;
  auto first = TapFace::Create(config, &error);
  ASSERT_NE(first, nullptr) << error;
  EXPECT_EQ(first->mtu(), 1500u);                       // the kernel's default
  EXPECT_EQ(TapFace::Create(config, &error), nullptr);  // the name is taken
  EXPECT_NE(error.find(config.name), std::string::npos) << error;
}

TEST(TapFace, HostAnswersArpAndEchoInANamespace) {
  REQUIRE_ROOT();
  Netns ns;
  std::string error;
  TapConfig config;
  config.name = TapName("a");
  config.mac = kFaceMac;
  config.mtu = 2044;
  auto face = TapFace::Create(config, &error);
  ASSERT_NE(face, nullptr) << error;
  FrameQueue from_host;
  face->Start([&](std::span<const uint8_t> frame) { from_host.Push(frame); });
  ASSERT_TRUE(link::MoveToNetns(face->name(), ns.name(), &error)) << error;
  ASSERT_TRUE(link::AddAddress(face->name(), ns.name(), "198.18.0.1/24", &error)) << error;
  face->SetCarrier(true);
  ASSERT_TRUE(link::SetLinkUp(face->name(), ns.name(), true, &error)) << error;

  // Face -> host: an ARP request for the host's address; host -> face: its reply.
  face->DeliverToHost(taptest::ArpRequest(kPeerMac, kPeerIp, kHostIp));
  const std::vector<uint8_t> reply = from_host.WaitFor([](const std::vector<uint8_t>& f) {
    return f.size() >= 42 && Be16(f, 12) == 0x0806 && Be16(f, 20) == 2;
  });
  ASSERT_EQ(reply.size() >= 42, true) << "no ARP reply from the host";
  EXPECT_TRUE(std::equal(kPeerMac.begin(), kPeerMac.end(), reply.begin()));       // to the peer
  EXPECT_TRUE(std::equal(kFaceMac.begin(), kFaceMac.end(), reply.begin() + 6));   // from the TAP
  EXPECT_TRUE(std::equal(kFaceMac.begin(), kFaceMac.end(), reply.begin() + 22));  // sender MAC
  EXPECT_TRUE(std::equal(kHostIp.begin(), kHostIp.end(), reply.begin() + 28));    // sender IP
  EXPECT_TRUE(std::equal(kPeerIp.begin(), kPeerIp.end(), reply.begin() + 38));    // target IP

  // An ICMP echo with 2016 bytes of data (the largest IPv4 datagram of a 2044 MTU).
  face->DeliverToHost(taptest::EchoRequest(kFaceMac, kPeerMac, kPeerIp, kHostIp, 0x5B1B, 7, 2016));
  const std::vector<uint8_t> echo = from_host.WaitFor([](const std::vector<uint8_t>& f) {
    return f.size() >= 42 && Be16(f, 12) == 0x0800 && f[23] == 1 && f[34] == 0;
  });
  ASSERT_EQ(echo.size(), 14u + 2044u) << "no echo reply of the whole datagram";
  EXPECT_EQ(Be16(echo, 38), 0x5B1B);
  EXPECT_EQ(Be16(echo, 40), 7);
  for (size_t i = 0; i < 2016; ++i) ASSERT_EQ(echo[42 + i], static_cast<uint8_t>(i)) << i;

  const TapCounters counters = face->counters();
  EXPECT_EQ(counters.to_host_frames, 2u);
  EXPECT_EQ(counters.to_host_bytes, 42u + 14u + 2044u);
  EXPECT_EQ(counters.to_host_dropped, 0u);
  EXPECT_GE(counters.from_host_frames, 2u);
  face->Stop();
}

// Back-pressure: StopQueue from the handler (as the driver calls it from Transmit when its
// send ring is full) stops the reader after that frame: what the host sends meanwhile waits
// in the TAP's queue and comes out, all of it, after WakeQueue.
TEST(TapFace, StopQueuePausesTheReaderUntilWakeQueue) {
  REQUIRE_ROOT();
  Netns ns;
  std::string error;
  TapConfig config;
  config.name = TapName("p");
  config.mac = kFaceMac;
  config.mtu = 2044;
  auto face = TapFace::Create(config, &error);
  ASSERT_NE(face, nullptr) << error;
  FrameQueue from_host;
  std::atomic<int> handed{0};
  face->Start([&](std::span<const uint8_t> frame) {
    if (handed.fetch_add(1) == 0) face->StopQueue();  // the first frame fills "the ring"
    from_host.Push(frame);
  });
  ASSERT_TRUE(link::MoveToNetns(face->name(), ns.name(), &error)) << error;
  ASSERT_TRUE(link::AddAddress(face->name(), ns.name(), "198.18.0.1/24", &error)) << error;
  face->SetCarrier(true);
  ASSERT_TRUE(link::SetLinkUp(face->name(), ns.name(), true, &error)) << error;
  // The ARP request makes the host answer (the first frame it sends, or an earlier one):
  // the reader stops after it.
  face->DeliverToHost(taptest::ArpRequest(kPeerMac, kPeerIp, kHostIp));
  ASSERT_FALSE(from_host.WaitFor([](const std::vector<uint8_t>&) { return true; }).empty());
  EXPECT_TRUE(face->stopped());
  // Five echo requests: the host answers each (it knows the peer from its ARP request).
  constexpr int kEchoes = 5;
  for (int n = 1; n <= kEchoes; ++n)
    face->DeliverToHost(taptest::EchoRequest(kFaceMac, kPeerMac, kPeerIp, kHostIp, 0x5B1B, n, 64));
  // The host sent the replies (its ICMP OutEchoReps): they wait in the TAP, unread.
  const auto out_echo_replies = [&]() -> long {
    std::string out;
    if (!link::RunIp({"netns", "exec", ns.name(), "cat", "/proc/net/snmp"}, &error, &out))
      return -1;
    std::istringstream lines(out);
    std::string names, values;
    while (std::getline(lines, names) && std::getline(lines, values)) {
      if (names.rfind("Icmp:", 0) != 0) continue;
      std::istringstream n(names), v(values);
      std::string name, value;
      while (n >> name && v >> value) {
        if (name == "OutEchoReps") return std::stol(value);
      }
    }
    return -1;
  };
  long replies = 0;
  for (int n = 0; n < 500 && (replies = out_echo_replies()) < kEchoes; ++n)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(replies, kEchoes) << error;
  EXPECT_EQ(face->counters().from_host_frames, 1u) << "nothing read while stopped";
  EXPECT_EQ(handed.load(), 1);
  face->WakeQueue();
  EXPECT_FALSE(face->stopped());
  for (int n = 1; n <= kEchoes; ++n) {
    const std::vector<uint8_t> echo = from_host.WaitFor([n](const std::vector<uint8_t>& f) {
      return f.size() >= 42 && Be16(f, 12) == 0x0800 && f[23] == 1 && f[34] == 0 &&
             Be16(f, 40) == n;
    });
    ASSERT_FALSE(echo.empty()) << "echo reply " << n << " after WakeQueue";
  }
  const TapCounters counters = face->counters();
  EXPECT_EQ(counters.stops, 1u);
  EXPECT_EQ(counters.wakes, 1u);
  EXPECT_GE(counters.from_host_frames, 1u + kEchoes);
  face->Stop();
}

TEST(TapFace, DeliveryToADownInterfaceIsDroppedAndCounted) {
  REQUIRE_ROOT();
  std::string error;
  TapConfig config;
  config.name = TapName("d");
  auto face = TapFace::Create(config, &error);
  ASSERT_NE(face, nullptr) << error;
  face->DeliverToHost(taptest::ArpRequest(kPeerMac, kPeerIp, kHostIp));
  const TapCounters counters = face->counters();
  EXPECT_EQ(counters.to_host_frames, 0u);
  EXPECT_EQ(counters.to_host_dropped, 1u);
}

}  // namespace
}  // namespace softib::ipoib
