// UdpTunnel on loopback, driven by a fake clock: hellos bring links up only when both ends
// hear each other and take them down when a peer goes quiet or is disabled; what arrives
// is checked and bad datagrams are dropped and counted by reason, never delivered.
#include "softib/fabric/udp_tunnel.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>

#include "fabric_fixture.h"
#include "softib/wire/ib_crc.h"

namespace softib::fabric {
namespace {

using testing::UdPacket;
using tunnel::HelloState;
constexpr uint64_t kLink = 0x1234567890ABCDEFull;
constexpr uint64_t kMs = 1'000'000;

UdpAddress Loopback(uint16_t port) {
  std::string error;
  auto a = ParseUdpAddress("127.0.0.1:" + std::to_string(port), &error);
  EXPECT_TRUE(a) << error;
  return *a;
}

// One tunnel end with what it delivered and reported.
struct End {
  std::vector<std::vector<uint8_t>> delivered;
  std::vector<bool> states;
  std::unique_ptr<UdpTunnel> tunnel;
  uint32_t link = 0;
  End() {
    tunnel = std::make_unique<UdpTunnel>(
        [this](uint32_t, std::span<const uint8_t> p) {
          delivered.emplace_back(p.begin(), p.end());
        },
        [this](uint32_t, bool up) { states.push_back(up); });
    std::string error;
    EXPECT_TRUE(tunnel->Bind(Loopback(0), &error)) << error;
    link = *tunnel->AddLink(kLink);
  }
};

// A raw socket standing in for a peer daemon that sends hand-made datagrams.
struct RawPeer {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  RawPeer() {
    const UdpAddress any = Loopback(0);
    EXPECT_EQ(bind(fd, reinterpret_cast<const sockaddr*>(&any.addr), sizeof any.addr), 0);
  }
  ~RawPeer() { close(fd); }
  void SendTo(uint16_t port, std::span<const uint8_t> datagram) const {
    const UdpAddress to = Loopback(port);
    ASSERT_EQ(sendto(fd, datagram.data(), datagram.size(), 0,
                     reinterpret_cast<const sockaddr*>(&to.addr), sizeof to.addr),
              static_cast<ssize_t>(datagram.size()));
  }
};

TEST(UdpTunnel, BothEndsComeUpOnlyWhenTheyHearEachOther) {
  End a, b;
  b.tunnel->AddPeer(Loopback(a.tunnel->port()));  // only b knows where a is
  uint64_t now = 1000 * kMs;
  a.tunnel->Service(now);  // a has no one to greet yet
  EXPECT_FALSE(a.tunnel->up(a.link));
  b.tunnel->Service(now);  // b: Polling -> a
  a.tunnel->Service(now);  // a hears b: HearYou -> b (learned address)
  EXPECT_FALSE(a.tunnel->up(a.link));
  b.tunnel->Service(now);  // b hears a saying HearYou: up, HearYou -> a
  EXPECT_TRUE(b.tunnel->up(b.link));
  a.tunnel->Service(now);
  EXPECT_TRUE(a.tunnel->up(a.link));
  EXPECT_EQ(a.states, std::vector<bool>{true});
  EXPECT_EQ(b.states, std::vector<bool>{true});
  EXPECT_EQ(a.tunnel->peer(a.link), "127.0.0.1:" + std::to_string(b.tunnel->port()));

  // A packet crosses byte for byte, with its sequence number.
  const std::vector<uint8_t> packet = UdPacket(1, 2, 0x5A);
  a.tunnel->Send(a.link, packet);
  b.tunnel->Service(now);
  ASSERT_EQ(b.delivered.size(), 1u);
  EXPECT_EQ(b.delivered[0], packet);
  EXPECT_EQ(a.tunnel->counters(a.link).sent, 1u);
  EXPECT_EQ(b.tunnel->counters(b.link).received, 1u);

  // Disabled at a: b hears it at once and goes down; enabled again, both come back.
  a.tunnel->SetEnabled(a.link, false);
  EXPECT_FALSE(a.tunnel->up(a.link));
  a.tunnel->Service(now);
  b.tunnel->Service(now);
  EXPECT_FALSE(b.tunnel->up(b.link));
  a.tunnel->Send(a.link, packet);
  EXPECT_EQ(a.tunnel->counters(a.link).not_up, 1u);
  a.tunnel->SetEnabled(a.link, true);
  for (int i = 0; i < 3; ++i) a.tunnel->Service(now), b.tunnel->Service(now);
  EXPECT_TRUE(a.tunnel->up(a.link));
  EXPECT_TRUE(b.tunnel->up(b.link));
  EXPECT_EQ(b.states, (std::vector<bool>{true, false, true}));

  // b's daemon stops: a keeps the link while hellos could still come, then takes it down.
  b.tunnel.reset();
  now += UdpTunnel::kDeadIntervals * UdpTunnel::kHelloIntervalNs;
  const uint64_t deadline = a.tunnel->Service(now);
  EXPECT_TRUE(a.tunnel->up(a.link));
  EXPECT_EQ(deadline, now + 1);  // when the last hello is too old: a asks to run then
  a.tunnel->Service(deadline);
  EXPECT_FALSE(a.tunnel->up(a.link));
  EXPECT_EQ(a.states, (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(a.tunnel->counters(a.link).flaps, 2u);
}

class TunnelChecks : public ::testing::Test {
 protected:
  void SetUp() override {
    // The raw peer says it hears the tunnel: the link is up at once.
    const tunnel::HelloEntry entry{kLink, HelloState::kHearYou};
    peer_.SendTo(end_.tunnel->port(), tunnel::EncodeHello(42, 0, std::span(&entry, 1)));
    end_.tunnel->Service(now_);
    ASSERT_TRUE(end_.tunnel->up(end_.link));
  }
  void Arrive(std::span<const uint8_t> datagram) {
    peer_.SendTo(end_.tunnel->port(), datagram);
    end_.tunnel->Service(now_);
  }
  End end_;
  RawPeer peer_;
  uint64_t now_ = 5000 * kMs;
  uint32_t sequence_ = 0;
};

TEST_F(TunnelChecks, BadDatagramsAreDroppedAndCountedByReason) {
  const std::vector<uint8_t> packet = UdPacket(1, 2, 1);
  Arrive(tunnel::EncodePacket(kLink, sequence_++, packet));
  ASSERT_EQ(end_.delivered.size(), 1u);

  std::vector<uint8_t> bad_vcrc = packet;
  bad_vcrc.back() ^= 0x01;
  Arrive(tunnel::EncodePacket(kLink, sequence_++, bad_vcrc));
  // A payload byte changed and the VCRC recomputed: only the ICRC can tell.
  std::vector<uint8_t> bad_icrc = packet;
  bad_icrc[40] ^= 0x10;
  bad_icrc.resize(bad_icrc.size() - ibcrc::kVcrcBytes);
  const uint16_t vcrc = ibcrc::ComputeVcrc(bad_icrc);
  bad_icrc.push_back(static_cast<uint8_t>(vcrc));
  bad_icrc.push_back(static_cast<uint8_t>(vcrc >> 8));
  Arrive(tunnel::EncodePacket(kLink, sequence_++, bad_icrc));
  std::vector<uint8_t> bad_magic = tunnel::EncodePacket(kLink, sequence_++, packet);
  bad_magic[0] = 'X';
  Arrive(bad_magic);
  Arrive(std::vector<uint8_t>(10, 0));  // shorter than the header
  Arrive(tunnel::EncodePacket(kLink, sequence_++, std::span(packet).first(6)));  // no room for CRCs
  Arrive(tunnel::EncodePacket(kLink + 1, sequence_++, packet));                  // unknown link
  std::vector<uint8_t> bad_hello(tunnel::kHeaderBytes + 5, 0);
  tunnel::EncodeHeader({tunnel::Type::kHello, 42, 1, 5},
                       std::span<uint8_t, tunnel::kHeaderBytes>(bad_hello.data(), 24));
  Arrive(bad_hello);

  EXPECT_EQ(end_.delivered.size(), 1u);  // nothing bad was handed on
  const TunnelDrops& d = end_.tunnel->drops();
  EXPECT_EQ(d.bad_vcrc, 1u);
  EXPECT_EQ(d.bad_icrc, 1u);
  EXPECT_EQ(d.bad_header, 2u);
  EXPECT_EQ(d.short_datagram, 2u);
  EXPECT_EQ(d.unknown_link, 1u);
  EXPECT_TRUE(end_.tunnel->up(end_.link));  // and the link is unharmed

  // Sequence numbers skipped by those that never reached the link count as gaps.
  Arrive(tunnel::EncodePacket(kLink, sequence_++, packet));
  EXPECT_EQ(end_.delivered.size(), 2u);
  EXPECT_EQ(end_.tunnel->counters(end_.link).gaps, 5u);
  Arrive(tunnel::EncodePacket(kLink, 2, packet));  // late
  EXPECT_EQ(end_.tunnel->counters(end_.link).out_of_order, 1u);
  EXPECT_EQ(end_.tunnel->counters(end_.link).received, 3u);
}

TEST_F(TunnelChecks, NothingIsDeliveredOnALinkThatIsDown) {
  const tunnel::HelloEntry entry{kLink, HelloState::kDisabled};
  Arrive(tunnel::EncodeHello(42, 1, std::span(&entry, 1)));
  EXPECT_FALSE(end_.tunnel->up(end_.link));
  Arrive(tunnel::EncodePacket(kLink, 0, UdPacket(1, 2, 2)));
  EXPECT_TRUE(end_.delivered.empty());
  EXPECT_EQ(end_.tunnel->drops().link_down, 1u);
}

TEST_F(TunnelChecks, ASecondLiveSenderForTheSameLinkIsAConflict) {
  RawPeer other;
  const tunnel::HelloEntry entry{kLink, HelloState::kDisabled};
  other.SendTo(end_.tunnel->port(), tunnel::EncodeHello(43, 0, std::span(&entry, 1)));
  end_.tunnel->Service(now_);
  EXPECT_EQ(end_.tunnel->drops().conflicts, 1u);
  EXPECT_TRUE(end_.tunnel->up(end_.link));  // the first peer keeps the link
}

TEST_F(TunnelChecks, OnlyTheLinksPeerMaySendOnIt) {
  RawPeer other;
  other.SendTo(end_.tunnel->port(), tunnel::EncodePacket(kLink, 0, UdPacket(1, 2, 3)));
  end_.tunnel->Service(now_);
  EXPECT_TRUE(end_.delivered.empty());
  EXPECT_EQ(end_.tunnel->drops().wrong_peer, 1u);
}

TEST(UdpTunnel, ADaemonThatIsItsOwnPeerNeverLinksToItself) {
  End e;
  e.tunnel->AddPeer(Loopback(e.tunnel->port()));
  for (int i = 0; i < 3; ++i) e.tunnel->Service(1000 * kMs);
  EXPECT_FALSE(e.tunnel->up(e.link));
  EXPECT_GE(e.tunnel->drops().own_hellos, 1u);
}

TEST(UdpTunnel, ParsesAddresses) {
  std::string error;
  auto a = ParseUdpAddress("127.0.0.1:4791", &error);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->ToString(), "127.0.0.1:4791");
  EXPECT_TRUE(ParseUdpAddress("localhost:0", &error)) << error;
  for (const char* bad : {"127.0.0.1", ":5", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:x"}) {
    EXPECT_FALSE(ParseUdpAddress(bad, &error)) << bad;
    EXPECT_FALSE(error.empty());
  }
}

TEST(UdpTunnel, RefusesADuplicateLinkId) {
  End e;
  EXPECT_FALSE(e.tunnel->AddLink(kLink));
  EXPECT_FALSE(e.tunnel->AddLink(0));
  EXPECT_TRUE(e.tunnel->AddLink(kLink + 1));
}

}  // namespace
}  // namespace softib::fabric
