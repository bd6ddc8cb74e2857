// The IPoIB driver on a booted node: two CAs cabled back to back (NodeConfig's default), the
// test SA answering both ports (test_sa.h), the driver loaded on the bus's IPoIB PDOs, an
// interface on each CA with a recording Ethernet face. Frames the test hands to one face's
// Transmit must reach the other face translated back to Ethernet, byte for byte.
#include <endian.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "softib/al/access_layer.h"
#include "softib/ipoib/ipoib.h"
#include "softib/kernel/io.h"
#include "softib/kernel/work_item.h"
#include "softib/mad/mad_perf.h"
#include "softib/stack/node_stack.h"
#include "test_sa.h"
#include "test_switch.h"
// White box: BadEncapsulationFromTheWire posts raw IPoIB packets on an interface's own QP.
#include "../src/internal.h"

namespace softib::ipoib {
namespace {

using kernel::Status;
using Frame = std::vector<uint8_t>;
constexpr auto kWait = std::chrono::seconds(10);

class RecordingFace : public EthernetFace {
 public:
  void DeliverToHost(std::span<const uint8_t> frame) override {
    std::lock_guard guard(mutex_);
    frames_.emplace_back(frame.begin(), frame.end());
    cv_.notify_all();
  }
  void SetCarrier(bool up) override {
    std::lock_guard guard(mutex_);
    carrier_ = up;
    if (up) mtu_at_carrier_ = mtu_;
    ++carrier_changes_;
    cv_.notify_all();
  }
  void SetMtu(uint32_t mtu) override {
    std::lock_guard guard(mutex_);
    mtu_ = mtu;
  }
  // Back-pressure: a host stack that honours it (WaitRunning before each frame).
  void StopQueue() override {
    std::lock_guard guard(mutex_);
    stopped_ = true;
    ++stops_;
    cv_.notify_all();
  }
  void WakeQueue() override {
    std::lock_guard guard(mutex_);
    stopped_ = false;
    ++wakes_;
    cv_.notify_all();
  }
  bool WaitRunning() {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, kWait, [&] { return !stopped_; });
  }
  bool WaitStops(int n) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, kWait, [&] { return stops_ >= n; });
  }
  int stops() {
    std::lock_guard guard(mutex_);
    return stops_;
  }
  int wakes() {
    std::lock_guard guard(mutex_);
    return wakes_;
  }
  bool stopped() {
    std::lock_guard guard(mutex_);
    return stopped_;
  }
  // What SetMtu had said when the carrier last came up (0: nothing).
  uint32_t mtu_at_carrier() {
    std::lock_guard guard(mutex_);
    return mtu_at_carrier_;
  }
  bool WaitCarrier(bool up) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, kWait, [&] { return carrier_ == up; });
  }
  bool carrier() {
    std::lock_guard guard(mutex_);
    return carrier_;
  }
  // The first frame received (and removed) that `match` accepts.
  bool WaitFrame(const std::function<bool(const Frame&)>& match, Frame* out) {
    std::unique_lock lock(mutex_);
    bool found = cv_.wait_for(lock, kWait,
                              [&] { return std::any_of(frames_.begin(), frames_.end(), match); });
    if (!found) return false;
    auto it = std::find_if(frames_.begin(), frames_.end(), match);
    *out = *it;
    frames_.erase(it);
    return true;
  }
  size_t count(const std::function<bool(const Frame&)>& match) {
    std::lock_guard guard(mutex_);
    return static_cast<size_t>(std::count_if(frames_.begin(), frames_.end(), match));
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Frame> frames_;
  bool carrier_ = false;
  int carrier_changes_ = 0;
  uint32_t mtu_ = 0;  // the last SetMtu (0: never told)
  uint32_t mtu_at_carrier_ = 0;
  bool stopped_ = false;
  int stops_ = 0, wakes_ = 0;
};

void PutBe16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
uint16_t Be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

uint16_t IpChecksum(const uint8_t* p, size_t n) {
  uint32_t sum = 0;
  for (size_t k = 0; k + 1 < n; k += 2) sum += Be16(p + k);
  if (n % 2) sum += uint32_t{p[n - 1]} << 8;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

Frame EthHeader(const Mac& dst, const Mac& src, uint16_t type) {
  Frame f(14);
  std::memcpy(f.data(), dst.data(), 6);
  std::memcpy(f.data() + 6, src.data(), 6);
  PutBe16(f.data() + 12, type);
  return f;
}

constexpr Mac kBroadcast = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
constexpr uint32_t kIpA = 0xC6120001, kIpB = 0xC6120002;  // 198.18.0.1, 198.18.0.2

void PutIp(uint8_t* p, uint32_t ip) {
  p[0] = static_cast<uint8_t>(ip >> 24);
  p[1] = static_cast<uint8_t>(ip >> 16);
  p[2] = static_cast<uint8_t>(ip >> 8);
  p[3] = static_cast<uint8_t>(ip);
}

Frame Arp(uint16_t op, const Mac& src, const Mac& dst, const Mac& sha, uint32_t spa, const Mac& tha,
          uint32_t tpa) {
  Frame f = EthHeader(dst, src, kEthertypeArp);
  f.resize(14 + 28);
  uint8_t* a = f.data() + 14;
  PutBe16(a, 1);
  PutBe16(a + 2, kEthertypeIpv4);
  a[4] = 6;
  a[5] = 4;
  PutBe16(a + 6, op);
  std::memcpy(a + 8, sha.data(), 6);
  PutIp(a + 14, spa);
  std::memcpy(a + 18, tha.data(), 6);
  PutIp(a + 24, tpa);
  return f;
}

Frame Ipv4(const Mac& src, const Mac& dst, uint32_t from, uint32_t to, uint8_t protocol,
           const std::vector<uint8_t>& payload, uint8_t ttl = 64) {
  Frame f = EthHeader(dst, src, kEthertypeIpv4);
  f.resize(14 + 20);
  uint8_t* ip = f.data() + 14;
  ip[0] = 0x45;
  PutBe16(ip + 2, static_cast<uint16_t>(20 + payload.size()));
  PutBe16(ip + 4, 0x1234);
  ip[8] = ttl;
  ip[9] = protocol;
  PutIp(ip + 12, from);
  PutIp(ip + 16, to);
  PutBe16(ip + 10, IpChecksum(ip, 20));
  f.insert(f.end(), payload.begin(), payload.end());
  return f;
}

std::vector<uint8_t> IcmpEcho(uint8_t type, uint16_t sequence, size_t data_bytes) {
  std::vector<uint8_t> m(8 + data_bytes);
  m[0] = type;
  PutBe16(m.data() + 4, 0x4242);
  PutBe16(m.data() + 6, sequence);
  for (size_t k = 0; k < data_bytes; ++k) m[8 + k] = static_cast<uint8_t>(k * 7 + sequence);
  PutBe16(m.data() + 2, IpChecksum(m.data(), m.size()));
  return m;
}

bool IsArp(const Frame& f, uint16_t op) {
  return f.size() >= 42 && Be16(f.data() + 12) == kEthertypeArp && Be16(f.data() + 20) == op;
}

// `b` with the test SA still running: its threads' GetMadEvent IRPs come and go, so the
// pending requests are not compared then.
bool SameCounts(abi::ObjectCounts a, abi::ObjectCounts b, bool sa_running = false) {
  if (sa_running) a.pending_requests = b.pending_requests = 0;
  const uint32_t* x = reinterpret_cast<const uint32_t*>(&a);
  const uint32_t* y = reinterpret_cast<const uint32_t*>(&b);
  bool same = true;
  for (size_t n = 0; n < sizeof a / sizeof(uint32_t); ++n) {
    if (x[n] != y[n]) {
      ADD_FAILURE() << "object count field " << n << ": " << x[n] << " != " << y[n];
      same = false;
    }
  }
  return same;
}

// White box: once every send of `i` completed, takes its free send slots away (the ring
// looks full to Transmit); the caller gives them back.
std::vector<uint32_t> TakeEverySendSlot(Interface* i) {
  std::vector<uint32_t> taken;
  for (int n = 0; n < 1000; ++n) {
    {
      kernel::SpinLockGuard guard(i->lock);
      if (i->tx_free.size() == kTxSlots) {
        taken.swap(i->tx_free);
        return taken;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ADD_FAILURE() << "sends still outstanding after 10 s";
  return taken;
}

// Polls `done` (every 10 ms, at most 5 s): a bounded wait for the driver's asynchronous work.
bool WaitFor(const std::function<bool()>& done) {
  for (int n = 0; n < 500; ++n) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

class IpoibDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status status = Status::ERROR;
    stack::NodeConfig config;
    config.name = "ipoib-driver";
    node_ = stack::NodeStack::Boot(config, &status);
    ASSERT_EQ(status, Status::SUCCESS);
    guids_ = node_->ca_guids();
    ASSERT_EQ(guids_.size(), 2u);
    baseline_ = al::QueryNodeObjectCounts(node_->access_layer());
    sa_ = std::make_unique<test::TestSa>(node_->node());
    ASSERT_TRUE(sa_->Start(guids_[0], guids_[1]));
    sa_baseline_ = al::QueryNodeObjectCounts(node_->access_layer());
    ASSERT_EQ(LoadDriver(node_->node(), &driver_), Status::SUCCESS);
    kernel::IoFlushQueuedWorkItems(node_->node());  // the PDOs' arrivals
    ASSERT_EQ(AttachedPorts(driver_), 2u);
  }
  void TearDown() override {
    if (driver_ != nullptr) UnloadDriver(driver_);
    if (sa_ != nullptr) sa_->Stop();
    if (node_ != nullptr) {
      EXPECT_TRUE(SameCounts(al::QueryNodeObjectCounts(node_->access_layer()), baseline_));
    }
  }

  // Interfaces on both CAs, carrier up on both.
  void CreateBoth(Mode mode_a = Mode::kDatagram, Mode mode_b = Mode::kDatagram) {
    InterfaceConfig config;
    config.name = "ib0";
    config.ca_guid = guids_[0];
    config.mode = mode_a;
    config.cm_idle_timeout = cm_idle_timeout_;
    ASSERT_EQ(CreateInterface(driver_, config, &face_a_, &a_), Status::SUCCESS);
    config.name = "ib1";
    config.ca_guid = guids_[1];
    config.mode = mode_b;
    ASSERT_EQ(CreateInterface(driver_, config, &face_b_, &b_), Status::SUCCESS);
    ASSERT_TRUE(face_a_.WaitCarrier(true));
    ASSERT_TRUE(face_b_.WaitCarrier(true));
    mac_a_ = InterfaceMac(a_);
    mac_b_ = InterfaceMac(b_);
  }

  // A resolves B by ARP; B answers; both sides then know each other's MAC.
  void ResolveBothWays() {
    Transmit(a_, Arp(1, mac_a_, kBroadcast, mac_a_, kIpA, Mac{}, kIpB));
    Frame request;
    ASSERT_TRUE(face_b_.WaitFrame([](const Frame& f) { return IsArp(f, 1); }, &request));
    Mac sha;
    std::memcpy(sha.data(), request.data() + 22, 6);
    Transmit(b_, Arp(2, mac_b_, sha, mac_b_, kIpB, sha, kIpA));
    Frame reply;
    ASSERT_TRUE(face_a_.WaitFrame([](const Frame& f) { return IsArp(f, 2); }, &reply));
    std::memcpy(peer_b_.data(), reply.data() + 22, 6);
    peer_a_ = sha;
  }

  std::unique_ptr<stack::NodeStack> node_;
  std::vector<uint64_t> guids_;
  abi::ObjectCounts baseline_{}, sa_baseline_{};
  std::unique_ptr<test::TestSa> sa_;
  Driver* driver_ = nullptr;
  RecordingFace face_a_, face_b_, face_c_;  // face_c_: a third interface's, when a case makes one
  Interface* a_ = nullptr;
  Interface* b_ = nullptr;
  Mac mac_a_{}, mac_b_{}, peer_a_{}, peer_b_{};
  std::chrono::milliseconds cm_idle_timeout_{60000};  // CreateBoth's (InterfaceConfig's default)
};

TEST_F(IpoibDriverTest, CarrierComesUpWhenTheBroadcastGroupIsJoined) {
  ASSERT_NO_FATAL_FAILURE(CreateBoth());
  InterfaceInfo info;
  ASSERT_EQ(Query(a_, &info), Status::SUCCESS);
  EXPECT_TRUE(info.carrier);
  EXPECT_EQ(info.name, "ib0");
  const Gid bcast = BroadcastMgid(0xFFFF);
  // The SA did not know the group: the first join was refused, the create made it, with
  // the default Q_Key; both ports are full members of the one group.
  EXPECT_GE(sa_->refused_joins(), 1u);
  const auto groups = sa_->groups();
  ASSERT_EQ(groups.count(bcast), 1u);
  const test::SaGroup& group = groups.at(bcast);
  EXPECT_EQ(group.qkey, 0x0B1Bu);
  EXPECT_EQ(group.members.size(), 2u);
  for (const auto& [gid, state] : group.members) EXPECT_EQ(state, 1) << "full member";
  // The interface's MTU is the group's IB MTU less the encapsulation header.
  const uint32_t ib_mtu = 128u << group.mtu;
  EXPECT_EQ(info.mtu, ib_mtu - 4);
  EXPECT_EQ(InterfaceMtu(a_), ib_mtu - 4);
  // Then the all-nodes group, full member: the host listens to it unasked.
  const uint8_t all_nodes_ip[16] = {0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  const Gid all_nodes = Ipv6MulticastMgid(all_nodes_ip, 0xFFFF);
  ASSERT_TRUE(WaitFor([&] {
    return Query(a_, &info) == Status::SUCCESS && info.groups.size() == 2 &&
           Query(b_, &info) == Status::SUCCESS && info.groups.size() == 2;
  }));
  ASSERT_EQ(Query(a_, &info), Status::SUCCESS);
  std::map<Gid, GroupInfo> joined;
  for (const GroupInfo& g : info.groups) joined[g.mgid] = g;
  ASSERT_EQ(joined.count(bcast), 1u);
  EXPECT_EQ(joined[bcast].mlid, group.mlid);
  for (const Gid& mgid : {bcast, all_nodes}) {
    ASSERT_EQ(joined.count(mgid), 1u);
    EXPECT_FALSE(joined[mgid].send_only);
    EXPECT_EQ(sa_->groups().at(mgid).members.size(), 2u);
  }
  // Own address: the port's GID, a locally administered unicast MAC.
  EXPECT_EQ(info.local.hw.gid[0], 0xFE);
  EXPECT_EQ(info.local.hw.gid[1], 0x80);
  EXPECT_NE(info.local.hw.qpn, 0u);
  EXPECT_EQ(mac_a_[0] & 0x03, 0x02);
  EXPECT_NE(mac_a_, mac_b_);
  DestroyInterface(a_);
  DestroyInterface(b_);
  EXPECT_FALSE(face_a_.carrier());
  EXPECT_TRUE(SameCounts(al::QueryNodeObjectCounts(node_->access_layer()), sa_baseline_, true));
}

// The port offers 4096 bytes, the SM's broadcast group 2048 (OpenSM's default): the
// interface's MTU is the group's less the header, and the face hears it before the carrier.
TEST_F(IpoibDriverTest, ABroadcastGroupMtuBelowThePortsLowersTheFacesMtuBeforeTheCarrier) {
  sa_->CapGroupMtu(4);  // 2048
  InterfaceConfig config;
  config.name = "ib0";
  config.ca_guid = guids_[0];
  ASSERT_EQ(CreateInterface(driver_, config, &face_a_, &a_), Status::SUCCESS);
  ASSERT_TRUE(face_a_.WaitCarrier(true));
  EXPECT_EQ(InterfaceMtu(a_), 2044u);
  EXPECT_EQ(face_a_.mtu_at_carrier(), 2044u);
  InterfaceInfo info;
  ASSERT_EQ(Query(a_, &info), Status::SUCCESS);
  EXPECT_EQ(info.mtu, 2044u);
}

TEST_F(IpoibDriverTest, ArpAndIcmpEchoCrossBothWays) {
  ASSERT_NO_FATAL_FAILURE(CreateBoth());
  // A's request arrives at B as an Ethernet ARP from A's MAC.
  Transmit(a_, Arp(1, mac_a_, kBroadcast, mac_a_, kIpA, Mac{}, kIpB));
  Frame request;
  ASSERT_TRUE(face_b_.WaitFrame([](const Frame& f) { return IsArp(f, 1); }, &request));
  ASSERT_EQ(request.size(), 42u);
  EXPECT_TRUE(std::equal(kBroadcast.begin(), kBroadcast.end(), request.begin()));
  EXPECT_TRUE(std::equal(mac_a_.begin(), mac_a_.end(), request.begin() + 6)) << "A's MAC";
  EXPECT_TRUE(std::equal(mac_a_.begin(), mac_a_.end(), request.begin() + 22)) << "sha";
  EXPECT_EQ(Be16(request.data() + 14), 1);       // Ethernet
  EXPECT_EQ(Be16(request.data() + 16), 0x0800);  // IPv4
  const Frame expected_request = Arp(1, mac_a_, kBroadcast, mac_a_, kIpA, Mac{}, kIpB);
  EXPECT_TRUE(std::equal(expected_request.begin() + 28, expected_request.begin() + 32,
                         request.begin() + 28))
      << "spa";
  EXPECT_TRUE(
      std::equal(expected_request.begin() + 38, expected_request.end(), request.begin() + 38))
      << "tpa";
  // B's reply (unicast to A's MAC) reaches A with B's MAC.
  Transmit(b_, Arp(2, mac_b_, mac_a_, mac_b_, kIpB, mac_a_, kIpA));
  Frame reply;
  ASSERT_TRUE(face_a_.WaitFrame([](const Frame& f) { return IsArp(f, 2); }, &reply));
  EXPECT_TRUE(std::equal(mac_a_.begin(), mac_a_.end(), reply.begin())) << "to A";
  EXPECT_TRUE(std::equal(mac_b_.begin(), mac_b_.end(), reply.begin() + 6)) << "B's MAC";
  EXPECT_TRUE(std::equal(mac_b_.begin(), mac_b_.end(), reply.begin() + 22)) << "sha";
  EXPECT_TRUE(std::equal(mac_a_.begin(), mac_a_.end(), reply.begin() + 32)) << "tha";
  EXPECT_GE(sa_->path_queries(), 1u);

  // ICMP echo both ways, bytes intact (the Ethernet header names the peer's MAC).
  const auto is_icmp = [](uint8_t type) {
    return [type](const Frame& f) {
      return f.size() > 34 && Be16(f.data() + 12) == kEthertypeIpv4 && f[23] == 1 && f[34] == type;
    };
  };
  for (uint16_t sequence = 1; sequence <= 3; ++sequence) {
    const Frame echo = Ipv4(mac_a_, mac_b_, kIpA, kIpB, 1, IcmpEcho(8, sequence, 56 * sequence));
    Transmit(a_, echo);
    Frame got;
    ASSERT_TRUE(face_b_.WaitFrame(is_icmp(8), &got)) << sequence;
    EXPECT_EQ(got, echo) << sequence;
    const Frame answer = Ipv4(mac_b_, mac_a_, kIpB, kIpA, 1, IcmpEcho(0, sequence, 56 * sequence));
    Transmit(b_, answer);
    ASSERT_TRUE(face_a_.WaitFrame(is_icmp(0), &got)) << sequence;
    EXPECT_EQ(got, answer) << sequence;
  }
  // The largest datagram the MTU carries passes; one byte more is dropped as oversize.
  const uint32_t mtu = InterfaceMtu(a_);
  const Frame largest = Ipv4(mac_a_, mac_b_, kIpA, kIpB, 1, IcmpEcho(8, 9, mtu - 28));
  Transmit(a_, largest);
  Frame got;
  ASSERT_TRUE(face_b_.WaitFrame(is_icmp(8), &got));
  EXPECT_EQ(got, largest);
  InterfaceInfo before;
  ASSERT_EQ(Query(a_, &before), Status::SUCCESS);
  Transmit(a_, Ipv4(mac_a_, mac_b_, kIpA, kIpB, 1, IcmpEcho(8, 10, mtu - 27)));
  InterfaceInfo after;
  ASSERT_EQ(Query(a_, &after), Status::SUCCESS);
  EXPECT_EQ(after.counters.drops[static_cast<size_t>(Drop::kOversize)],
            before.counters.drops[static_cast<size_t>(Drop::kOversize)] + 1);
  EXPECT_EQ(after.counters.tx_dropped, before.counters.tx_dropped + 1);
  // Each side knows the other as a neighbour, with its LID.
  ASSERT_EQ(after.neighbours.size(), 1u);
  EXPECT_EQ(after.neighbours[0].mac, mac_b_);
  EXPECT_NE(after.neighbours[0].lid, 0);
  EXPECT_EQ(after.counters.tx_packets, 5u);  // request, 3 echoes, the largest
  EXPECT_GE(after.counters.rx_packets, 4u);
}

TEST_F(IpoibDriverTest, MulticastReachesAListenerAfterItsIgmpReport) {
  ASSERT_NO_FATAL_FAILURE(CreateBoth());
  constexpr uint32_t kGroup = 0xEF010101;  // 239.1.1.1
  const Mac group_mac = {0x01, 0x00, 0x5E, 0x01, 0x01, 0x01};
  // B's host joins 239.1.1.1 (IGMPv2 report): B becomes a full member of the group's MGID.
  std::vector<uint8_t> report = {0x16, 0, 0, 0, 0xEF, 0x01, 0x01, 0x01};
  PutBe16(report.data() + 2, IpChecksum(report.data(), report.size()));
  Transmit(b_, Ipv4(mac_b_, group_mac, kIpB, kGroup, 2, report, 1));
  const Gid mgid = Ipv4MulticastMgid(kGroup, 0xFFFF);
  // Wait for B's join to be answered (Query lists joined groups).
  bool joined = false;
  for (int n = 0; n < 200 && !joined; ++n) {
    InterfaceInfo info;
    Query(b_, &info);
    for (const GroupInfo& g : info.groups) joined = joined || (g.mgid == mgid && !g.send_only);
    if (!joined) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(joined);
  // A's host sends to the group without listening: a send-only join, then the datagram
  // reaches B with the group's MAC.
  const std::vector<uint8_t> udp = {0x13, 0x88, 0x13, 0x88, 0, 12, 0, 0, 'i', 'p', 'o', 'b'};
  const Frame datagram = Ipv4(mac_a_, group_mac, kIpA, kGroup, 17, udp, 1);
  Transmit(a_, datagram);
  Frame got;
  ASSERT_TRUE(face_b_.WaitFrame([](const Frame& f) { return f.size() > 34 && f[23] == 17; }, &got));
  EXPECT_TRUE(std::equal(group_mac.begin(), group_mac.end(), got.begin()));
  EXPECT_TRUE(std::equal(datagram.begin() + 12, datagram.end(), got.begin() + 12));
  const auto groups = sa_->groups();
  ASSERT_EQ(groups.count(mgid), 1u);
  InterfaceInfo info_a, info_b;
  ASSERT_EQ(Query(a_, &info_a), Status::SUCCESS);
  ASSERT_EQ(Query(b_, &info_b), Status::SUCCESS);
  ASSERT_EQ(groups.at(mgid).members.count(info_a.local.hw.gid), 1u);
  EXPECT_EQ(groups.at(mgid).members.at(info_a.local.hw.gid), 8) << "send-only full member";
  EXPECT_EQ(groups.at(mgid).members.at(info_b.local.hw.gid), 1) << "full member";
  // B's host leaves (IGMPv2 leave): the driver leaves the group at the SA.
  std::vector<uint8_t> leave = {0x17, 0, 0, 0, 0xEF, 0x01, 0x01, 0x01};
  PutBe16(leave.data() + 2, IpChecksum(leave.data(), leave.size()));
  Transmit(b_, Ipv4(mac_b_, {0x01, 0x00, 0x5E, 0, 0, 2}, kIpB, 0xE0000002, 2, leave, 1));
  bool left = false;
  for (int n = 0; n < 200 && !left; ++n) {
    const auto now = sa_->groups();
    left = now.count(mgid) == 1 && now.at(mgid).members.count(info_b.local.hw.gid) == 0;
    if (!left) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(left);
}

TEST_F(IpoibDriverTest, BadFramesAreDroppedAndCountedByCause) {
  ASSERT_NO_FATAL_FAILURE(CreateBoth());
  InterfaceInfo before;
  ASSERT_EQ(Query(a_, &before), Status::SUCCESS);
  const Frame runt(10, 0xAB);
  Transmit(a_, runt);
  Frame unknown = EthHeader(kBroadcast, mac_a_, 0x88B5);  // local experimental ethertype
  unknown.resize(60, 0x11);
  Transmit(a_, unknown);
  Transmit(a_, unknown);
  InterfaceInfo after;
  ASSERT_EQ(Query(a_, &after), Status::SUCCESS);
  const auto drops = [&](const InterfaceInfo& info, Drop drop) {
    return info.counters.drops[static_cast<size_t>(drop)];
  };
  EXPECT_EQ(drops(after, Drop::kRunt), drops(before, Drop::kRunt) + 1);
  EXPECT_EQ(drops(after, Drop::kUnknownEthertype), drops(before, Drop::kUnknownEthertype) + 2);
  EXPECT_EQ(after.counters.tx_dropped, before.counters.tx_dropped + 3);
  EXPECT_EQ(after.counters.tx_packets, before.counters.tx_packets);
  // Unicast to a MAC nobody resolved: no neighbour.
  Transmit(a_, Ipv4(mac_a_, {0x02, 9, 9, 9, 9, 9}, kIpA, kIpB, 1, IcmpEcho(8, 1, 8)));
  ASSERT_EQ(Query(a_, &after), Status::SUCCESS);
  EXPECT_EQ(drops(after, Drop::kNoNeighbour), drops(before, Drop::kNoNeighbour) + 1);
}

// From the wire: IPoIB packets whose encapsulation header is wrong (reserved bits set, an
// unknown type), posted raw on A's QP to the broadcast group, reach B: dropped and counted as
// bad_encap, nothing delivered to B's host; B still answers ARP afterwards.
TEST_F(IpoibDriverTest, BadEncapsulationFromTheWireIsDroppedAndCounted) {
  ASSERT_NO_FATAL_FAILURE(CreateBoth());
  InterfaceInfo before;
  ASSERT_EQ(Query(b_, &before), Status::SUCCESS);
  const auto bad_encap = [](const InterfaceInfo& info) {
    return info.counters.drops[static_cast<size_t>(Drop::kBadEncap)];
  };
  // Encapsulation header (type, reserved) then an IPv4-looking payload.
  std::vector<uint8_t> reserved_set = {0x08, 0x00, 0x12, 0x34};
  std::vector<uint8_t> unknown_type = {0x88, 0xB5, 0x00, 0x00};
  for (auto* packet : {&reserved_set, &unknown_type}) packet->resize(64, 0x45);
  {
    kernel::SpinLockGuard guard(a_->lock);
    const Gid mgid = BroadcastMgid(a_->local.pkey, a_->local.mcast_scope);
    auto it = a_->groups.find(mgid);
    ASSERT_NE(it, a_->groups.end());
    ASSERT_EQ(it->second.state, Group::State::kJoined);
    for (auto* packet : {&reserved_set, &unknown_type, &unknown_type})
      PostPacketLocked(a_, *packet, it->second.av, 0xFFFFFF, it->second.qkey);
  }
  InterfaceInfo after;
  for (int n = 0; n < 200; ++n) {
    ASSERT_EQ(Query(b_, &after), Status::SUCCESS);
    if (bad_encap(after) >= bad_encap(before) + 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(bad_encap(after), bad_encap(before) + 3);
  EXPECT_EQ(after.counters.rx_dropped, before.counters.rx_dropped + 3);
  EXPECT_EQ(after.counters.rx_packets, before.counters.rx_packets);
  EXPECT_EQ(face_b_.count([](const Frame&) { return true; }), 0u);
  ASSERT_NO_FATAL_FAILURE(ResolveBothWays());
}

// Back-pressure (flow.cc): a burst larger than the send ring, from a host that honours
// StopQueue/WakeQueue, arrives whole and in order, with no transmit drop. The ring is made
// full at the start (white box: its free slots taken away) so the first frame must wait and
// the face must be stopped; a send of the test's own (a bad-encapsulation packet B drops)
// then completes with the slots back, the held frame goes and the face is woken. The burst
// (400) is larger than the send ring (256) and smaller than B's receive ring (512).
TEST_F(IpoibDriverTest, ABurstLargerThanTheSendRingArrivesWholeWithTheFacePausedAndResumed) {
  ASSERT_NO_FATAL_FAILURE(CreateBoth());
  ASSERT_NO_FATAL_FAILURE(ResolveBothWays());
  const auto is_echo = [](const Frame& f) {
    return f.size() > 34 && Be16(f.data() + 12) == kEthertypeIpv4 && f[23] == 1 && f[34] == 8;
  };
  // The path to B is resolved (the first echo waits for it).
  const Frame first = Ipv4(mac_a_, mac_b_, kIpA, kIpB, 1, IcmpEcho(8, 0, 16));
  Transmit(a_, first);
  Frame got;
  ASSERT_TRUE(face_b_.WaitFrame(is_echo, &got));
  InterfaceInfo before, before_b;
  ASSERT_EQ(Query(a_, &before), Status::SUCCESS);
  ASSERT_EQ(Query(b_, &before_b), Status::SUCCESS);
  ASSERT_EQ(kTxSlots, 256u);
  ASSERT_EQ(kRxSlots, 512u);
  constexpr uint16_t kBurst = 400;

  std::vector<uint32_t> taken = TakeEverySendSlot(a_);
  ASSERT_EQ(taken.size(), kTxSlots) << "every send completed before the burst";
  std::atomic<bool> sender_failed{false};
  std::thread sender([&] {
    for (uint16_t sequence = 1; sequence <= kBurst; ++sequence) {
      if (!face_a_.WaitRunning()) {
        sender_failed = true;
        return;
      }
      Transmit(a_, Ipv4(mac_a_, mac_b_, kIpA, kIpB, 1, IcmpEcho(8, sequence, 16)));
    }
  });
  // The first frame found the ring full: held, the face stopped, nothing else taken.
  ASSERT_TRUE(face_a_.WaitStops(1));
  {
    kernel::SpinLockGuard guard(a_->lock);
    EXPECT_EQ(a_->flow.held.size(), 1u);
  }
  EXPECT_TRUE(face_a_.stopped());
  EXPECT_EQ(face_b_.count(is_echo), 0u);
  // The slots back, and a send whose completion runs the CQ's DPC.
  std::vector<uint8_t> bad_encap = {0x88, 0xB5, 0x00, 0x00};
  bad_encap.resize(64, 0x45);
  {
    kernel::SpinLockGuard guard(a_->lock);
    a_->tx_free.insert(a_->tx_free.end(), taken.begin(), taken.end());
    const Gid mgid = BroadcastMgid(a_->local.pkey, a_->local.mcast_scope);
    auto it = a_->groups.find(mgid);
    ASSERT_NE(it, a_->groups.end());
    PostPacketLocked(a_, bad_encap, it->second.av, 0xFFFFFF, it->second.qkey);
  }
  sender.join();
  ASSERT_FALSE(sender_failed) << "the face was never woken";
  for (uint16_t sequence = 1; sequence <= kBurst; ++sequence) {
    ASSERT_TRUE(face_b_.WaitFrame(is_echo, &got)) << "echo " << sequence << " never arrived";
    EXPECT_EQ(Be16(got.data() + 40), sequence) << "in order";
    EXPECT_EQ(got, Ipv4(mac_a_, mac_b_, kIpA, kIpB, 1, IcmpEcho(8, sequence, 16)));
  }
  EXPECT_EQ(face_b_.count(is_echo), 0u) << "each once";
  InterfaceInfo after, after_b;
  ASSERT_EQ(Query(a_, &after), Status::SUCCESS);
  ASSERT_EQ(Query(b_, &after_b), Status::SUCCESS);
  EXPECT_EQ(after.counters.tx_dropped, before.counters.tx_dropped);
  EXPECT_EQ(after.counters.drops[static_cast<size_t>(Drop::kSendQueueFull)], 0u);
  EXPECT_EQ(after.counters.tx_packets, before.counters.tx_packets + kBurst + 1);
  EXPECT_EQ(after_b.counters.rx_packets, before_b.counters.rx_packets + kBurst);
  EXPECT_GE(face_a_.stops(), 1);
  EXPECT_EQ(face_a_.wakes(), face_a_.stops());
  EXPECT_FALSE(face_a_.stopped());
  kernel::SpinLockGuard guard(a_->lock);
  EXPECT_TRUE(a_->flow.held.empty());
}

// A face that ignores StopQueue: frames beyond the hold's bound are dropped and counted as
// send_queue_full (transmit drops), the ones held go once the ring has room.
TEST_F(IpoibDriverTest, AFaceThatKeepsSendingPastAFullRingLosesOnlyWhatTheHoldCannotKeep) {
  ASSERT_NO_FATAL_FAILURE(CreateBoth());
  ASSERT_NO_FATAL_FAILURE(ResolveBothWays());
  const auto is_echo = [](const Frame& f) {
    return f.size() > 34 && Be16(f.data() + 12) == kEthertypeIpv4 && f[23] == 1 && f[34] == 8;
  };
  Transmit(a_, Ipv4(mac_a_, mac_b_, kIpA, kIpB, 1, IcmpEcho(8, 0, 16)));
  Frame got;
  ASSERT_TRUE(face_b_.WaitFrame(is_echo, &got));
  InterfaceInfo before;
  ASSERT_EQ(Query(a_, &before), Status::SUCCESS);
  std::vector<uint32_t> taken = TakeEverySendSlot(a_);
  const uint16_t extra = 5;
  for (uint16_t sequence = 1; sequence <= kMaxHeldFrames + extra; ++sequence)
    Transmit(a_, Ipv4(mac_a_, mac_b_, kIpA, kIpB, 1, IcmpEcho(8, sequence, 16)));
  EXPECT_EQ(face_a_.stops(), 1);
  InterfaceInfo full;
  ASSERT_EQ(Query(a_, &full), Status::SUCCESS);
  EXPECT_EQ(full.counters.drops[static_cast<size_t>(Drop::kSendQueueFull)], extra);
  EXPECT_EQ(full.counters.tx_dropped, before.counters.tx_dropped + extra);
  std::vector<uint8_t> bad_encap = {0x88, 0xB5, 0x00, 0x00};
  bad_encap.resize(64, 0x45);
  {
    kernel::SpinLockGuard guard(a_->lock);
    a_->tx_free.insert(a_->tx_free.end(), taken.begin(), taken.end());
    const Gid mgid = BroadcastMgid(a_->local.pkey, a_->local.mcast_scope);
    auto it = a_->groups.find(mgid);
    ASSERT_NE(it, a_->groups.end());
    PostPacketLocked(a_, bad_encap, it->second.av, 0xFFFFFF, it->second.qkey);
  }
  for (uint16_t sequence = 1; sequence <= kMaxHeldFrames; ++sequence) {
    ASSERT_TRUE(face_b_.WaitFrame(is_echo, &got)) << "echo " << sequence << " never arrived";
    EXPECT_EQ(Be16(got.data() + 40), sequence) << "in order";
  }
  ASSERT_TRUE(face_a_.WaitRunning());
  EXPECT_EQ(face_a_.wakes(), 1);
}

TEST_F(IpoibDriverTest, AtsRecordsFollowTheHostsAddresses) {
  ASSERT_NO_FATAL_FAILURE(CreateBoth());
  IpAddr v4;
  v4.bytes = {198, 18, 0, 1};
  IpAddr v6;
  v6.v6 = true;
  v6.bytes = {0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  const IpAddr both[] = {v4, v6};
  SetAddresses(a_, both);
  bool registered = false;
  for (int n = 0; n < 200 && !registered; ++n) {
    registered = RegisteredAtsRecords(a_) == 2;
    if (!registered) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(registered);
  EXPECT_EQ(sa_->services(), 2u);
  SetAddresses(a_, std::span<const IpAddr>(both, 1));
  bool removed = false;
  for (int n = 0; n < 200 && !removed; ++n) {
    removed = sa_->services() == 1;
    if (!removed) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(removed);
  EXPECT_EQ(RegisteredAtsRecords(a_), 1u);
}

TEST_F(IpoibDriverTest, ALinkFlapTakesTheCarrierDownAndBackWithTrafficResuming) {
  ASSERT_NO_FATAL_FAILURE(CreateBoth());
  ASSERT_NO_FATAL_FAILURE(ResolveBothWays());
  ASSERT_EQ(node_->UncablePort(guids_[0], 1), Status::SUCCESS);
  EXPECT_TRUE(face_a_.WaitCarrier(false));
  EXPECT_TRUE(face_b_.WaitCarrier(false));
  // Down: frames are dropped and counted.
  InterfaceInfo before;
  ASSERT_EQ(Query(a_, &before), Status::SUCCESS);
  Transmit(a_, Ipv4(mac_a_, mac_b_, kIpA, kIpB, 1, IcmpEcho(8, 1, 8)));
  InterfaceInfo after;
  ASSERT_EQ(Query(a_, &after), Status::SUCCESS);
  EXPECT_EQ(after.counters.tx_dropped, before.counters.tx_dropped + 1);
  // Up again: the groups are joined again, the carrier returns, the path is resolved anew.
  ASSERT_EQ(node_->CablePorts(guids_[0], 1, guids_[1], 1), Status::SUCCESS);
  ASSERT_TRUE(sa_->ActivatePorts());
  ASSERT_TRUE(face_a_.WaitCarrier(true));
  ASSERT_TRUE(face_b_.WaitCarrier(true));
  const uint64_t queries = sa_->path_queries();
  const Frame echo = Ipv4(mac_a_, mac_b_, kIpA, kIpB, 1, IcmpEcho(8, 2, 100));
  Transmit(a_, echo);
  Frame got;
  ASSERT_TRUE(face_b_.WaitFrame(
      [](const Frame& f) { return f.size() > 34 && f[23] == 1 && f[34] == 8; }, &got));
  EXPECT_TRUE(std::equal(echo.begin() + 12, echo.end(), got.begin() + 12));
  EXPECT_GT(sa_->path_queries(), queries) << "the path was resolved again";
}

TEST_F(IpoibDriverTest, CaRemovalTakesTheCarrierDownAndLeavesNothing) {
  ASSERT_NO_FATAL_FAILURE(CreateBoth());
  ASSERT_NO_FATAL_FAILURE(ResolveBothWays());
  // The test SA holds CA 0 open too; it lets go when it stops.
  sa_->Stop();
  ASSERT_EQ(node_->RemoveCa(guids_[0]), Status::SUCCESS);
  EXPECT_TRUE(face_a_.WaitCarrier(false));
  EXPECT_EQ(AttachedPorts(driver_), 1u);
  InterfaceInfo info;
  EXPECT_EQ(Query(a_, &info), Status::CA_REMOVED);
  EXPECT_FALSE(info.carrier);
  // A frame for a removed interface is dropped, not a crash.
  Transmit(a_, Ipv4(mac_a_, mac_b_, kIpA, kIpB, 1, IcmpEcho(8, 1, 8)));
  DestroyInterface(a_);
  DestroyInterface(b_);
  EXPECT_TRUE(SameCounts(al::QueryNodeObjectCounts(node_->access_layer()), baseline_));
}

TEST_F(IpoibDriverTest, UnloadDestroysItsInterfaces) {
  ASSERT_NO_FATAL_FAILURE(CreateBoth());
  ASSERT_NO_FATAL_FAILURE(ResolveBothWays());
  UnloadDriver(std::exchange(driver_, nullptr));
  EXPECT_FALSE(face_a_.carrier());
  EXPECT_FALSE(face_b_.carrier());
  EXPECT_TRUE(SameCounts(al::QueryNodeObjectCounts(node_->access_layer()), sa_baseline_, true));
}

// ---- connected mode (RFC 4755) ----

std::vector<uint8_t> UdpPayload(size_t bytes, uint8_t seed) {
  std::vector<uint8_t> udp(8 + bytes);
  PutBe16(udp.data(), 5001);
  PutBe16(udp.data() + 2, 5001);
  PutBe16(udp.data() + 4, static_cast<uint16_t>(udp.size()));
  for (size_t k = 0; k < bytes; ++k) udp[8 + k] = static_cast<uint8_t>(k * 13 + seed);
  return udp;
}
bool IsUdp(const Frame& f) { return f.size() > 34 && Be16(f.data() + 12) == 0x0800 && f[23] == 17; }

TEST_F(IpoibDriverTest, ConnectedModeCarriesA60KDatagramOverRcBothWays) {
  sa_->SetPacketLifeTime(10);  // the teardown's time-wait about 17 ms, not 4 s
  ASSERT_NO_FATAL_FAILURE(CreateBoth(Mode::kConnected, Mode::kConnected));
  EXPECT_EQ(InterfaceMtu(a_), 65520u);
  InterfaceInfo info;
  ASSERT_EQ(Query(a_, &info), Status::SUCCESS);
  EXPECT_EQ(info.mode, Mode::kConnected);
  EXPECT_TRUE(info.local.hw.connected());
  ASSERT_NO_FATAL_FAILURE(ResolveBothWays());
  // The ARP told each side the other's 'C'.
  ASSERT_EQ(Query(a_, &info), Status::SUCCESS);
  ASSERT_EQ(info.neighbours.size(), 1u);
  EXPECT_TRUE(info.neighbours[0].hw.connected());
  // 60 000 bytes of UDP: one IPoIB packet over the RC connection, byte for byte.
  const Frame big = Ipv4(mac_a_, peer_b_, kIpA, kIpB, 17, UdpPayload(60000, 1));
  Transmit(a_, big);
  Frame got;
  ASSERT_TRUE(face_b_.WaitFrame(IsUdp, &got));
  EXPECT_EQ(got.size(), big.size());
  EXPECT_TRUE(std::equal(big.begin() + 12, big.end(), got.begin() + 12));
  EXPECT_TRUE(std::equal(peer_a_.begin(), peer_a_.end(), got.begin() + 6)) << "A's MAC at B";
  EXPECT_EQ(CmConnections(a_), 1u);
  ASSERT_TRUE(WaitFor([&] { return CmConnections(b_) == 1; }));
  // Back: B uses the connection A made (no second REQ).
  const Frame back = Ipv4(mac_b_, peer_a_, kIpB, kIpA, 17, UdpPayload(59000, 2));
  Transmit(b_, back);
  ASSERT_TRUE(face_a_.WaitFrame(IsUdp, &got));
  EXPECT_EQ(got.size(), back.size());
  EXPECT_TRUE(std::equal(back.begin() + 12, back.end(), got.begin() + 12));
  EXPECT_EQ(CmConnections(a_), 1u);
  EXPECT_EQ(CmConnections(b_), 1u);
  InterfaceInfo after;
  ASSERT_EQ(Query(b_, &after), Status::SUCCESS);
  EXPECT_EQ(after.counters.tx_dropped, 0u);
  // Teardown (DREQ) leaves no object behind once the CM's time-wait ended.
  DestroyInterface(std::exchange(a_, nullptr));
  DestroyInterface(std::exchange(b_, nullptr));
  EXPECT_TRUE(WaitFor([&] {
    abi::ObjectCounts now = al::QueryNodeObjectCounts(node_->access_layer());
    abi::ObjectCounts want = sa_baseline_;
    now.pending_requests = want.pending_requests = 0;
    return std::memcmp(&now, &want, sizeof now) == 0;
  }));
  EXPECT_TRUE(SameCounts(al::QueryNodeObjectCounts(node_->access_layer()), sa_baseline_, true));
}

TEST_F(IpoibDriverTest, ConnectedModeToADatagramPeerFragmentsAndAnswersDf) {
  ASSERT_NO_FATAL_FAILURE(CreateBoth(Mode::kConnected, Mode::kDatagram));
  ASSERT_NO_FATAL_FAILURE(ResolveBothWays());
  InterfaceInfo info;
  ASSERT_EQ(Query(a_, &info), Status::SUCCESS);
  ASSERT_EQ(info.neighbours.size(), 1u);
  EXPECT_FALSE(info.neighbours[0].hw.connected()) << "B is in datagram mode";
  const uint32_t ud_mtu = InterfaceMtu(b_);
  // 10 000 bytes of UDP without DF: fragments of at most the UD MTU, over UD.
  const auto udp = UdpPayload(10000, 3);
  const Frame big = Ipv4(mac_a_, peer_b_, kIpA, kIpB, 17, udp);
  Transmit(a_, big);
  std::vector<uint8_t> data(udp.size());
  size_t received = 0, fragments = 0;
  while (received < udp.size()) {
    Frame f;
    ASSERT_TRUE(face_b_.WaitFrame(IsUdp, &f)) << received;
    ++fragments;
    const size_t header = size_t{f[14] & 0x0fu} * 4;
    const size_t total = Be16(f.data() + 16);
    EXPECT_LE(total, ud_mtu);
    EXPECT_EQ(f.size(), 14 + total);
    EXPECT_EQ(IpChecksum(f.data() + 14, header), 0) << "header checksum";
    const size_t offset = size_t{Be16(f.data() + 20) & 0x1FFFu} * 8;
    ASSERT_LE(offset + total - header, data.size());
    std::copy(f.begin() + 14 + static_cast<long>(header), f.end(),
              data.begin() + static_cast<long>(offset));
    received += total - header;
  }
  EXPECT_EQ(data, udp);
  EXPECT_EQ(fragments, (udp.size() + (ud_mtu - 20) / 8 * 8 - 1) / ((ud_mtu - 20) / 8 * 8));
  EXPECT_EQ(CmConnections(a_), 0u);
  // With DF: ICMP "fragmentation needed" to A's host, next-hop MTU the UD MTU.
  Frame df = Ipv4(mac_a_, peer_b_, kIpA, kIpB, 17, UdpPayload(5000, 4));
  df[14 + 6] = 0x40;
  PutBe16(df.data() + 24, 0);
  PutBe16(df.data() + 24, IpChecksum(df.data() + 14, 20));
  Transmit(a_, df);
  Frame icmp;
  ASSERT_TRUE(face_a_.WaitFrame(
      [](const Frame& f) { return f.size() > 34 && f[23] == 1 && f[34] == 3; }, &icmp));
  EXPECT_EQ(icmp[35], 4);
  EXPECT_EQ(Be16(icmp.data() + 40), ud_mtu);
  EXPECT_TRUE(std::equal(mac_a_.begin(), mac_a_.end(), icmp.begin())) << "to A's host";
  EXPECT_TRUE(std::equal(df.begin() + 14, df.begin() + 14 + 28, icmp.begin() + 42)) << "quoted";
  EXPECT_EQ(IpChecksum(icmp.data() + 34, icmp.size() - 34), 0) << "ICMP checksum";
  EXPECT_EQ(face_b_.count(IsUdp), 0u) << "nothing of the DF datagram went out";
}

// Connected mode: ARP says B's IP moved to another hardware address (a second interface on
// B's port, its own QPN, announces it with a gratuitous ARP): the RC connection to the old
// address is torn down (DREQ; both ends close it) and the next frame for that IP connects
// to the new address.
TEST_F(IpoibDriverTest, ConnectedModeTearsDownTheConnectionToAPeersOldAddress) {
  sa_->SetPacketLifeTime(10);  // about 4 ms: the CM's time-wait about 17 ms
  ASSERT_NO_FATAL_FAILURE(CreateBoth(Mode::kConnected, Mode::kConnected));
  ASSERT_NO_FATAL_FAILURE(ResolveBothWays());
  Transmit(a_, Ipv4(mac_a_, peer_b_, kIpA, kIpB, 17, UdpPayload(3000, 1)));
  Frame got;
  ASSERT_TRUE(face_b_.WaitFrame(IsUdp, &got));
  EXPECT_EQ(CmConnections(a_), 1u);
  ASSERT_TRUE(WaitFor([&] { return CmConnections(b_) == 1; }));
  InterfaceConfig config;
  config.name = "ib2";
  config.ca_guid = guids_[1];
  config.mode = Mode::kConnected;
  Interface* c = nullptr;
  ASSERT_EQ(CreateInterface(driver_, config, &face_c_, &c), Status::SUCCESS);
  ASSERT_TRUE(face_c_.WaitCarrier(true));
  const Mac mac_c = InterfaceMac(c);
  Transmit(c, Arp(1, mac_c, kBroadcast, mac_c, kIpB, Mac{}, kIpB));  // gratuitous
  Frame garp;
  ASSERT_TRUE(face_a_.WaitFrame([](const Frame& f) { return IsArp(f, 1); }, &garp));
  Mac peer_c;
  std::memcpy(peer_c.data(), garp.data() + 22, 6);
  EXPECT_NE(peer_c, peer_b_) << "a new hardware address, a new MAC";
  EXPECT_TRUE(WaitFor([&] { return CmConnections(a_) == 0; })) << "A closed it";
  EXPECT_TRUE(WaitFor([&] { return CmConnections(b_) == 0; })) << "B got the DREQ";
  // The next frame for B's IP (to the MAC the ARP taught A's host) connects to C.
  const Frame next = Ipv4(mac_a_, peer_c, kIpA, kIpB, 17, UdpPayload(3000, 2));
  Transmit(a_, next);
  ASSERT_TRUE(face_c_.WaitFrame(IsUdp, &got));
  EXPECT_TRUE(std::equal(next.begin() + 12, next.end(), got.begin() + 12));
  EXPECT_EQ(CmConnections(a_), 1u);
  EXPECT_TRUE(WaitFor([&] { return CmConnections(c) == 1; }));
  EXPECT_EQ(face_b_.count(IsUdp), 0u) << "nothing more for the old address";
  // Once the old connection's time-wait ended, its QP and CEP are gone at both ends: two RC
  // QPs (A's and C's) and their CEPs are left beside the interfaces' own.
  EXPECT_TRUE(WaitFor([&] {
    const abi::ObjectCounts now = al::QueryNodeObjectCounts(node_->access_layer());
    return now.qp == sa_baseline_.qp + 3 + 2 && now.cep == sa_baseline_.cep + 3 + 2;
  })) << al::QueryNodeObjectCounts(node_->access_layer()).qp;
  DestroyInterface(c);
  DestroyInterface(std::exchange(b_, nullptr));
  DestroyInterface(std::exchange(a_, nullptr));
  EXPECT_TRUE(WaitFor([&] {  // the last connection's time-wait, then nothing left
    abi::ObjectCounts now = al::QueryNodeObjectCounts(node_->access_layer());
    abi::ObjectCounts want = sa_baseline_;
    now.pending_requests = want.pending_requests = 0;
    return std::memcmp(&now, &want, sizeof now) == 0;
  }));
}

// Connected mode: a connection idle both ways for cm_idle_timeout is torn down at both ends
// (DREQ), its RC QPs and CEPs destroyed once the time-wait ended; traffic later connects
// again.
TEST_F(IpoibDriverTest, ConnectedModeTearsDownAnIdleConnectionAndConnectsAgainOnTraffic) {
  sa_->SetPacketLifeTime(10);  // the CM's time-wait about 17 ms
  cm_idle_timeout_ = std::chrono::milliseconds(100);
  ASSERT_NO_FATAL_FAILURE(CreateBoth(Mode::kConnected, Mode::kConnected));
  ASSERT_NO_FATAL_FAILURE(ResolveBothWays());
  const auto counts = [&] { return al::QueryNodeObjectCounts(node_->access_layer()); };
  abi::ObjectCounts before = sa_baseline_;  // with the interfaces' UD QPs and listens
  before.qp += 2;
  before.cep += 2;
  Transmit(a_, Ipv4(mac_a_, peer_b_, kIpA, kIpB, 17, UdpPayload(3000, 1)));
  Frame got;
  ASSERT_TRUE(face_b_.WaitFrame(IsUdp, &got));
  EXPECT_EQ(CmConnections(a_), 1u);
  EXPECT_EQ(counts().qp, before.qp + 2) << "an RC QP at each end (B's ARP reply made it)";
  ASSERT_TRUE(WaitFor([&] { return CmConnections(a_) == 0 && CmConnections(b_) == 0; }))
      << "idle: torn down";
  EXPECT_TRUE(WaitFor([&] {
    const abi::ObjectCounts now = counts();
    return now.qp == before.qp && now.cep == before.cep;
  })) << "the RC QPs and CEPs destroyed: "
      << counts().qp << " QPs";
  // Traffic again: a new connection (B's reply on it).
  const Frame again = Ipv4(mac_a_, peer_b_, kIpA, kIpB, 17, UdpPayload(3000, 2));
  Transmit(a_, again);
  ASSERT_TRUE(face_b_.WaitFrame(IsUdp, &got));
  EXPECT_TRUE(std::equal(again.begin() + 12, again.end(), got.begin() + 12));
  InterfaceInfo info;
  ASSERT_EQ(Query(a_, &info), Status::SUCCESS);
  EXPECT_EQ(info.counters.tx_dropped, 0u);
}

// ---- LBFO: one interface over two ports ----

// Two CAs of two ports each, port 1 cabled to port 1 and port 2 to port 2 (two links, the test
// SA on all four ports), a team on each CA over ports 1 and 2: pulling a port-1 cable takes
// both teams to port 2. (Two links are two subnets: balance mode, whose ports must reach the
// same peers, runs on a switch: IpoibLbfoBalanceTest below.)
class IpoibLbfoTest : public IpoibDriverTest {
 protected:
  void SetUp() override {
    Status status = Status::ERROR;
    stack::NodeConfig config;
    config.name = "ipoib-lbfo";
    config.cas = {stack::CaConfig(0, 2), stack::CaConfig(0, 2)};
    node_ = stack::NodeStack::Boot(config, &status);
    ASSERT_EQ(status, Status::SUCCESS);
    guids_ = node_->ca_guids();
    ASSERT_EQ(guids_.size(), 2u);
    ASSERT_EQ(node_->CablePorts(guids_[0], 2, guids_[1], 2), Status::SUCCESS);
    baseline_ = al::QueryNodeObjectCounts(node_->access_layer());
    sa_ = std::make_unique<test::TestSa>(node_->node());
    ASSERT_TRUE(sa_->Start({{guids_[0], 1}, {guids_[1], 1}, {guids_[0], 2}, {guids_[1], 2}}));
    sa_baseline_ = al::QueryNodeObjectCounts(node_->access_layer());
    ASSERT_EQ(LoadDriver(node_->node(), &driver_), Status::SUCCESS);
    kernel::IoFlushQueuedWorkItems(node_->node());
    ASSERT_EQ(AttachedPorts(driver_), 4u);
  }

  void CreateTeams(LbfoMode mode, bool failback) {
    InterfaceConfig config;
    config.ports = {1, 2};
    config.lbfo = mode;
    config.failback = failback;
    config.name = "team0";
    config.ca_guid = guids_[0];
    ASSERT_EQ(CreateInterface(driver_, config, &face_a_, &a_), Status::SUCCESS);
    config.name = "team1";
    config.ca_guid = guids_[1];
    ASSERT_EQ(CreateInterface(driver_, config, &face_b_, &b_), Status::SUCCESS);
    ASSERT_TRUE(face_a_.WaitCarrier(true));
    ASSERT_TRUE(face_b_.WaitCarrier(true));
    for (Interface* team : {a_, b_}) {
      ASSERT_TRUE(WaitFor([&] { return PortState(team, 0) == "up active"; }))
          << Info(team).name << ": " << PortState(team, 0) << " / " << PortState(team, 1);
      ASSERT_TRUE(WaitFor([&] { return PortState(team, 1) == "up standby"; }))
          << PortState(team, 1);
    }
    mac_a_ = InterfaceMac(a_);
    mac_b_ = InterfaceMac(b_);
    // The team whose port-2 member came up first went up there and then back to port 1 (a
    // move, announced): moves are counted from here.
    moves_a_ = Info(a_).lbfo_moves;
    moves_b_ = Info(b_).lbfo_moves;
  }
  uint64_t Moves(Interface* team) {
    return Info(team).lbfo_moves - (team == a_ ? moves_a_ : moves_b_);
  }

  // "up active", "down standby", ... of the team's member `n` (0: port 1).
  static std::string PortState(Interface* team, size_t n) {
    InterfaceInfo info;
    if (Query(team, &info) != Status::SUCCESS || info.lbfo_ports.size() != 2) return "?";
    const auto& p = info.lbfo_ports[n];
    return std::string(p.carrier ? "up" : "down") + (p.active ? " active" : " standby");
  }
  static InterfaceInfo Info(Interface* team) {
    InterfaceInfo info;
    EXPECT_EQ(Query(team, &info), Status::SUCCESS);
    return info;
  }

  // A port's unicast packets sent (PMA PortCountersExtended:PortUnicastXmitPkts).
  uint64_t UnicastXmit(uint64_t guid, uint8_t port) {
    std::array<uint8_t, 256> request{}, response{};
    request[0] = 1;
    request[1] = 0x04;  // performance management
    request[2] = 1;
    request[3] = 0x01;  // Get
    request[16] = 0x00;
    request[17] = 0x1D;  // PortCountersExtended
    request[64 + 1] = port;
    EXPECT_EQ(node_->LocalMad(guid, port, request, response), Status::SUCCESS);
    mad::PortCountersExtended counters{};
    counters.Unpack(
        std::span<const uint8_t>(response.data() + 64, mad::PortCountersExtended::kSize));
    return counters.PortUnicastXmitPkts;
  }

  // The gratuitous ARP `face` got for `ip` (sender = target = ip): its sender MAC.
  static bool WaitAnnouncement(RecordingFace& face, uint32_t ip, Mac* mac) {
    Frame got;
    uint8_t want[4];
    PutIp(want, ip);
    if (!face.WaitFrame(
            [&](const Frame& f) {
              return IsArp(f, 1) && std::memcmp(f.data() + 28, want, 4) == 0 &&
                     std::memcmp(f.data() + 38, want, 4) == 0;
            },
            &got)) {
      return false;
    }
    std::memcpy(mac->data(), got.data() + 22, 6);
    return true;
  }

  // The neighbour `team` knows by `mac` (its hardware address).
  static bool NeighbourHw(Interface* team, const Mac& mac, HwAddr* hw) {
    for (const Neighbour& n : Info(team).neighbours) {
      if (n.mac == mac) {
        *hw = n.hw;
        return true;
      }
    }
    return false;
  }

  // The gratuitous ARP `face` got for `ip` whose sender MAC `listener` knows as `gid`: a move
  // is announced several times (lbfo.cc), so a repeat of an earlier move's may come first.
  static bool WaitAnnouncementOf(RecordingFace& face, Interface* listener, uint32_t ip,
                                 const Gid& gid, Mac* mac) {
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!WaitAnnouncement(face, ip, mac)) return false;
      HwAddr hw;
      for (int n = 0; n < 100; ++n) {
        if (NeighbourHw(listener, *mac, &hw) && hw.gid == gid) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    return false;
  }

  // An echo from `from`'s host to `mac` reaches `to`'s host byte for byte.
  void EchoReaches(Interface* from, const Mac& src, const Mac& mac, uint32_t ip_from,
                   uint32_t ip_to, RecordingFace& to, uint16_t sequence) {
    const Frame echo = Ipv4(src, mac, ip_from, ip_to, 1, IcmpEcho(8, sequence, 200));
    Transmit(from, echo);
    Frame got;
    ASSERT_TRUE(to.WaitFrame(
        [&](const Frame& f) {
          return f.size() == echo.size() && f[23] == 1 && Be16(f.data() + 40) == sequence;
        },
        &got));
    EXPECT_TRUE(std::equal(echo.begin() + 12, echo.end(), got.begin() + 12));
  }

  // Pulls the port-1 cable: both teams move to port 2 and announce themselves; each host hears
  // the other's gratuitous ARP (and A's unsolicited NA) with a MAC for the peer's port-2
  // address. Returns A's MAC at B and B's at A after the move.
  void FailOver(Mac* a_at_b, Mac* b_at_a) {
    const InterfaceInfo before = Info(a_);
    ASSERT_EQ(node_->UncablePort(guids_[0], 1), Status::SUCCESS);
    for (Interface* team : {a_, b_}) {
      ASSERT_TRUE(WaitFor([&] { return PortState(team, 1) == "up active"; })) << PortState(team, 1);
      EXPECT_EQ(PortState(team, 0), "down standby");
    }
    EXPECT_TRUE(face_a_.carrier()) << "the team's carrier stays up";
    EXPECT_EQ(InterfaceMac(a_), mac_a_) << "the host's MAC is unchanged";
    const InterfaceInfo after = Info(a_);
    EXPECT_EQ(Moves(a_), 1u);
    EXPECT_NE(after.local.hw.gid, before.local.hw.gid);
    EXPECT_EQ(after.local.hw.qpn, after.lbfo_ports[1].qpn);
    ASSERT_TRUE(WaitAnnouncementOf(face_b_, b_, kIpA, after.local.hw.gid, a_at_b));
    ASSERT_TRUE(WaitAnnouncementOf(face_a_, a_, kIpB, Info(b_).local.hw.gid, b_at_a));
    EXPECT_NE(*a_at_b, peer_a_) << "a new hardware address, a new MAC at the peer";
    HwAddr hw;
    ASSERT_TRUE(NeighbourHw(b_, *a_at_b, &hw));
    EXPECT_EQ(hw.gid, after.local.hw.gid);
    EXPECT_EQ(hw.qpn, after.local.hw.qpn);
  }

  static const IpAddr& V6() {
    static const IpAddr v6 = [] {
      IpAddr a;
      a.v6 = true;
      a.bytes = {0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 1};
      return a;
    }();
    return v6;
  }

  uint64_t moves_a_ = 0, moves_b_ = 0;  // the teams' moves when CreateTeams returned
};

TEST_F(IpoibLbfoTest, ActiveStandbyFailsOverWhenTheActiveCableGoesAndFailsBack) {
  ASSERT_NO_FATAL_FAILURE(CreateTeams(LbfoMode::kActiveStandby, true));
  ASSERT_NO_FATAL_FAILURE(ResolveBothWays());
  IpAddr v4;
  v4.bytes = {198, 18, 0, 1};
  const IpAddr addresses[] = {v4, V6()};
  SetAddresses(a_, addresses);
  // ATS: the active port's records only.
  const Gid port1 = Info(a_).local.hw.gid;
  ASSERT_TRUE(WaitFor([&] { return sa_->services_of(port1) == 2; }));
  // (The SA keeps a record before its answer reaches the driver.)
  EXPECT_TRUE(WaitFor([&] { return RegisteredAtsRecords(a_) == 2u; })) << RegisteredAtsRecords(a_);
  EXPECT_EQ(sa_->services(), 2u);

  Mac a_at_b, b_at_a;
  ASSERT_NO_FATAL_FAILURE(FailOver(&a_at_b, &b_at_a));
  // A's unsolicited NA (override) for its IPv6 address, its option the same new MAC.
  Frame na;
  ASSERT_TRUE(face_b_.WaitFrame(
      [](const Frame& f) {
        return f.size() >= 86 && Be16(f.data() + 12) == kEthertypeIpv6 && f[20] == 58 &&
               f[54] == 136;
      },
      &na));
  EXPECT_TRUE(std::equal(V6().bytes.begin(), V6().bytes.end(), na.begin() + 62)) << "target";
  EXPECT_EQ(na[58] & 0x20, 0x20) << "override";
  EXPECT_EQ(na[78], 2) << "target link-layer address option";
  EXPECT_TRUE(std::equal(a_at_b.begin(), a_at_b.end(), na.begin() + 80));
  // ATS: the records moved to port 2's GID.
  const Gid port2 = Info(a_).local.hw.gid;
  ASSERT_TRUE(WaitFor([&] { return sa_->services_of(port2) == 2; }));
  // Port 1's were deregistered by the driver (its SA, behind the pulled cable, never hears it).
  EXPECT_TRUE(WaitFor([&] { return RegisteredAtsRecords(a_) == 2u; })) << RegisteredAtsRecords(a_);
  // Traffic resumes both ways over port 2.
  ASSERT_NO_FATAL_FAILURE(EchoReaches(b_, mac_b_, a_at_b, kIpB, kIpA, face_a_, 21));
  ASSERT_NO_FATAL_FAILURE(EchoReaches(a_, mac_a_, b_at_a, kIpA, kIpB, face_b_, 22));

  // The cable returns: failback to port 1, announced again with port 1's address.
  ASSERT_EQ(node_->CablePorts(guids_[0], 1, guids_[1], 1), Status::SUCCESS);
  ASSERT_TRUE(sa_->ActivatePorts());
  for (Interface* team : {a_, b_}) {
    ASSERT_TRUE(WaitFor([&] { return PortState(team, 0) == "up active"; })) << PortState(team, 0);
  }
  EXPECT_EQ(Moves(a_), 2u);
  Mac back_at_b, back_at_a;
  ASSERT_TRUE(WaitAnnouncementOf(face_b_, b_, kIpA, port1, &back_at_b));
  ASSERT_TRUE(WaitAnnouncementOf(face_a_, a_, kIpB, Info(b_).local.hw.gid, &back_at_a));
  ASSERT_TRUE(WaitFor([&] { return sa_->services_of(port1) == 2; }));
  ASSERT_NO_FATAL_FAILURE(EchoReaches(b_, mac_b_, back_at_b, kIpB, kIpA, face_a_, 23));
  ASSERT_NO_FATAL_FAILURE(EchoReaches(a_, mac_a_, back_at_a, kIpA, kIpB, face_b_, 24));
  EXPECT_EQ(InterfaceMac(a_), mac_a_);
}

TEST_F(IpoibLbfoTest, WithoutFailbackTheTeamStaysOnTheOtherPort) {
  ASSERT_NO_FATAL_FAILURE(CreateTeams(LbfoMode::kActiveStandby, false));
  ASSERT_NO_FATAL_FAILURE(ResolveBothWays());
  Mac a_at_b, b_at_a;
  ASSERT_NO_FATAL_FAILURE(FailOver(&a_at_b, &b_at_a));
  ASSERT_EQ(node_->CablePorts(guids_[0], 1, guids_[1], 1), Status::SUCCESS);
  ASSERT_TRUE(sa_->ActivatePorts());
  // Port 1's carrier is back (the team heard it, and chose): still on port 2.
  for (Interface* team : {a_, b_}) {
    ASSERT_TRUE(WaitFor([&] { return PortState(team, 0) == "up standby"; })) << PortState(team, 0);
    EXPECT_EQ(PortState(team, 1), "up active");
    EXPECT_EQ(Moves(team), 1u);
  }
  ASSERT_NO_FATAL_FAILURE(EchoReaches(b_, mac_b_, a_at_b, kIpB, kIpA, face_a_, 31));
  ASSERT_NO_FATAL_FAILURE(EchoReaches(a_, mac_a_, b_at_a, kIpA, kIpB, face_b_, 32));
}

// ---- LBFO in balance mode: both ports of both CAs on one switch (one subnet) ----

// Balance mode spreads a team's transmit over ports that reach the same peers, as bonding's
// balance-tlb does on one L2 segment: here the four ports are plugged into one switch
// (test_switch.h) and the test SA serves them as one subnet. A team on each CA; B receives on
// its advertised port (port 1) whichever port of A's sent.
class IpoibLbfoBalanceTest : public IpoibLbfoTest {
 protected:
  void SetUp() override {
    Status status = Status::ERROR;
    stack::NodeConfig config;
    config.name = "ipoib-lbfo-switch";
    config.cas = {stack::CaConfig(0, 2), stack::CaConfig(0, 2)};
    config.cable_pairs = false;
    node_ = stack::NodeStack::Boot(config, &status);
    ASSERT_EQ(status, Status::SUCCESS);
    guids_ = node_->ca_guids();
    ASSERT_EQ(guids_.size(), 2u);
    ASSERT_TRUE(switch_.Plug(*node_, Ends()));
    baseline_ = al::QueryNodeObjectCounts(node_->access_layer());
    sa_ = std::make_unique<test::TestSa>(node_->node());
    sa_->OneSubnet();
    ASSERT_TRUE(sa_->Start(Ends()));
    sa_baseline_ = al::QueryNodeObjectCounts(node_->access_layer());
    ASSERT_EQ(LoadDriver(node_->node(), &driver_), Status::SUCCESS);
    kernel::IoFlushQueuedWorkItems(node_->node());
    ASSERT_EQ(AttachedPorts(driver_), 4u);
  }
  void TearDown() override {
    IpoibLbfoTest::TearDown();
    node_.reset();  // its ports' links point into switch_
    switch_.Unplug();
  }
  // The SA answers on B's two ports (each asks the other; A's port 1 asks B's port 2, A's
  // port 2 B's port 1): A's ports may go down without taking the SA away.
  std::vector<std::pair<uint64_t, uint8_t>> Ends() const {
    return {{guids_[1], 1}, {guids_[1], 2}, {guids_[0], 1}, {guids_[0], 2}};
  }

  // A port's unicast packets received (PMA PortCountersExtended:PortUnicastRcvPkts).
  uint64_t UnicastRcv(uint64_t guid, uint8_t port) {
    std::array<uint8_t, 256> request{}, response{};
    request[0] = 1;
    request[1] = 0x04;
    request[2] = 1;
    request[3] = 0x01;
    request[17] = 0x1D;
    request[64 + 1] = port;
    EXPECT_EQ(node_->LocalMad(guid, port, request, response), Status::SUCCESS);
    mad::PortCountersExtended counters{};
    counters.Unpack(
        std::span<const uint8_t>(response.data() + 64, mad::PortCountersExtended::kSize));
    return counters.PortUnicastRcvPkts;
  }

  // The per-port counts of a team (driver): {port 1, port 2}.
  struct PortCounts {
    uint64_t tx[2], rx[2];
  };
  static PortCounts Counts(Interface* team) {
    const InterfaceInfo info = Info(team);
    PortCounts c{};
    for (size_t n = 0; n < 2 && n < info.lbfo_ports.size(); ++n) {
      c.tx[n] = info.lbfo_ports[n].tx_packets;
      c.rx[n] = info.lbfo_ports[n].rx_packets;
    }
    return c;
  }

  // `flows` UDP datagrams from A's host to B's, one per flow (source port 40000 + n + base);
  // every one reaches B's host.
  void SendFlows(int flows, int base) {
    const size_t before = face_b_.count(IsUdp);
    for (int n = 0; n < flows; ++n) {
      std::vector<uint8_t> udp(8 + 32, static_cast<uint8_t>(n));
      PutBe16(udp.data(), static_cast<uint16_t>(40000 + base + n));
      PutBe16(udp.data() + 2, 5001);
      PutBe16(udp.data() + 4, static_cast<uint16_t>(udp.size()));
      PutBe16(udp.data() + 6, 0);
      Transmit(a_, Ipv4(mac_a_, peer_b_, kIpA, kIpB, 17, udp));
    }
    ASSERT_TRUE(WaitFor([&] { return face_b_.count(IsUdp) == before + flows; }))
        << face_b_.count(IsUdp) - before << " of " << flows;
  }

  test::TestSwitch switch_;
};

TEST_F(IpoibLbfoBalanceTest, UnicastFlowsSpreadOverBothPortsAndArriveOnThePeersAdvertisedPort) {
  ASSERT_NO_FATAL_FAILURE(CreateTeams(LbfoMode::kBalance, true));
  ASSERT_NO_FATAL_FAILURE(ResolveBothWays());
  EXPECT_EQ(Info(a_).lbfo, LbfoMode::kBalance);
  const PortCounts a0 = Counts(a_), b0 = Counts(b_);
  const uint64_t wire1 = UnicastXmit(guids_[0], 1), wire2 = UnicastXmit(guids_[0], 2);
  const uint64_t advertised_rcv = UnicastRcv(guids_[1], 1);
  constexpr int kFlows = 32;
  ASSERT_NO_FATAL_FAILURE(SendFlows(kFlows, 0));
  const PortCounts a1 = Counts(a_), b1 = Counts(b_);
  const uint64_t sent1 = a1.tx[0] - a0.tx[0], sent2 = a1.tx[1] - a0.tx[1];
  // Both ports of A carry flows, every datagram once.
  EXPECT_GT(sent1, 0u);
  EXPECT_GT(sent2, 0u);
  EXPECT_EQ(sent1 + sent2, static_cast<uint64_t>(kFlows));
  // The wire agrees (PMA; port 2 also asked the SA for B's path: a unicast MAD).
  EXPECT_GE(UnicastXmit(guids_[0], 1) - wire1, sent1);
  EXPECT_GE(UnicastXmit(guids_[0], 2) - wire2, sent2);
  // B receives all of it on its advertised port (its port 2, an SA port here, takes MADs, but
  // its IPoIB member nothing).
  EXPECT_EQ(b1.rx[0] - b0.rx[0], static_cast<uint64_t>(kFlows));
  EXPECT_EQ(b1.rx[1] - b0.rx[1], 0u);
  EXPECT_GE(UnicastRcv(guids_[1], 1) - advertised_rcv, static_cast<uint64_t>(kFlows));
  EXPECT_EQ(Info(a_).counters.tx_dropped, 0u);
  // One flow stays on one port: the same 32 flows again take the same ports.
  ASSERT_NO_FATAL_FAILURE(SendFlows(kFlows, 0));
  const PortCounts a2 = Counts(a_);
  EXPECT_EQ(a2.tx[0] - a1.tx[0], sent1);
  EXPECT_EQ(a2.tx[1] - a1.tx[1], sent2);

  // ARP and multicast stay on the advertised (active) port.
  Transmit(a_, Arp(1, mac_a_, kBroadcast, mac_a_, kIpA, Mac{}, kIpB));
  Frame request;
  ASSERT_TRUE(face_b_.WaitFrame([](const Frame& f) { return IsArp(f, 1); }, &request));
  // B's host listens to 239.1.1.1 (an IGMPv2 report; its team joins on its active port).
  constexpr uint32_t kGroup = 0xEF010101;
  const Mac group_mac = {0x01, 0x00, 0x5E, 0x01, 0x01, 0x01};
  std::vector<uint8_t> report = {0x16, 0, 0, 0, 0xEF, 0x01, 0x01, 0x01};
  PutBe16(report.data() + 2, IpChecksum(report.data(), report.size()));
  Transmit(b_, Ipv4(mac_b_, group_mac, kIpB, kGroup, 2, report, 1));
  const Gid mgid = Ipv4MulticastMgid(kGroup, 0xFFFF);
  ASSERT_TRUE(WaitFor([&] {
    for (const GroupInfo& g : Info(b_).groups) {
      if (g.mgid == mgid && !g.send_only) return true;
    }
    return false;
  }));
  const std::vector<uint8_t> udp = {0x13, 0x88, 0x13, 0x88, 0, 12, 0, 0, 'l', 'b', 'f', 'o'};
  Transmit(a_, Ipv4(mac_a_, group_mac, kIpA, kGroup, 17, udp, 1));
  Frame got;
  ASSERT_TRUE(face_b_.WaitFrame(
      [](const Frame& f) { return f.size() > 34 && f[23] == 17 && f[0] == 0x01; }, &got));
  const PortCounts a3 = Counts(a_);
  EXPECT_EQ(a3.tx[0] - a2.tx[0], 2u) << "the ARP request and the datagram";
  EXPECT_EQ(a3.tx[1], a2.tx[1]);
  EXPECT_EQ(Info(a_).counters.tx_dropped, 0u);
  // A's port 2 heard what port 1 sent to the groups (one subnet): dropped as the team's own,
  // the host never got its ARP requests back.
  EXPECT_TRUE(WaitFor(
      [&] { return Info(a_).counters.drops[static_cast<size_t>(Drop::kLoopedBack)] >= 2; }));
  EXPECT_EQ(face_a_.count([](const Frame& f) {
    uint8_t own[4];
    PutIp(own, kIpA);
    return IsArp(f, 1) && std::memcmp(f.data() + 28, own, 4) == 0;
  }),
            0u);
}

// A's active port goes down: every flow moves to port 2, A announces its new hardware address
// (gratuitous ARP) and B answers there; port 1 back: failback, flows spread again.
TEST_F(IpoibLbfoBalanceTest, APortGoingDownMovesEveryFlowToTheOtherWithAGratuitousArp) {
  ASSERT_NO_FATAL_FAILURE(CreateTeams(LbfoMode::kBalance, true));
  ASSERT_NO_FATAL_FAILURE(ResolveBothWays());
  constexpr int kFlows = 32;
  ASSERT_NO_FATAL_FAILURE(SendFlows(kFlows, 0));
  const InterfaceInfo before = Info(a_);
  ASSERT_EQ(node_->SetExternalLinkUp(guids_[0], 1, false), Status::SUCCESS);
  ASSERT_TRUE(WaitFor([&] { return PortState(a_, 1) == "up active"; })) << PortState(a_, 1);
  EXPECT_EQ(PortState(a_, 0), "down standby");
  EXPECT_EQ(PortState(b_, 0), "up active") << "B's ports are both up";
  EXPECT_TRUE(face_a_.carrier());
  EXPECT_EQ(Moves(a_), 1u);
  const InterfaceInfo after = Info(a_);
  EXPECT_NE(after.local.hw.gid, before.local.hw.gid);
  Mac a_at_b;
  ASSERT_TRUE(WaitAnnouncementOf(face_b_, b_, kIpA, after.local.hw.gid, &a_at_b));
  const PortCounts a0 = Counts(a_);
  ASSERT_NO_FATAL_FAILURE(SendFlows(kFlows, 0));
  const PortCounts a1 = Counts(a_);
  EXPECT_EQ(a1.tx[0], a0.tx[0]) << "nothing on the port that went down";
  EXPECT_EQ(a1.tx[1] - a0.tx[1], static_cast<uint64_t>(kFlows));
  EXPECT_EQ(Info(a_).counters.tx_dropped, 0u);
  // B answers A at its new hardware address (port 2).
  ASSERT_NO_FATAL_FAILURE(EchoReaches(b_, mac_b_, a_at_b, kIpB, kIpA, face_a_, 41));

  // Port 1 back: failback (announced with port 1's address), flows on both ports again.
  ASSERT_EQ(node_->SetExternalLinkUp(guids_[0], 1, true), Status::SUCCESS);
  ASSERT_TRUE(sa_->ActivatePorts());
  ASSERT_TRUE(WaitFor([&] { return PortState(a_, 0) == "up active"; })) << PortState(a_, 0);
  EXPECT_EQ(Moves(a_), 2u);
  Mac back_at_b;
  ASSERT_TRUE(WaitAnnouncementOf(face_b_, b_, kIpA, before.local.hw.gid, &back_at_b));
  const PortCounts a2 = Counts(a_);
  ASSERT_NO_FATAL_FAILURE(SendFlows(kFlows, 100));
  const PortCounts a3 = Counts(a_);
  EXPECT_GT(a3.tx[0] - a2.tx[0], 0u);
  EXPECT_GT(a3.tx[1] - a2.tx[1], 0u);
  EXPECT_EQ(a3.tx[0] - a2.tx[0] + a3.tx[1] - a2.tx[1], static_cast<uint64_t>(kFlows));
  ASSERT_NO_FATAL_FAILURE(EchoReaches(b_, mac_b_, back_at_b, kIpB, kIpA, face_a_, 42));
}

}  // namespace
}  // namespace softib::ipoib
