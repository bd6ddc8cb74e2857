// IBAT (softib/ipoib/ibat.h) in the IPoIB driver: two CAs whose ports 1 are joined by a
// recording cable (every packet's bytes, LRH to VCRC, as the wire carries them), the test SA
// answering both ports (test_sa.h), an interface on each CA with a recording Ethernet face.
// Interface A resolves B's addresses: the ARP request and the neighbour solicitation are read
// off the wire, B's "host" (the test) answers through B's face, and the answer is checked
// field by field, the PathRecord at the IBA 15.2.5.16 byte offsets.
#include <endian.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "hca/device/cable.h"
#include "softib/ipoib/ibat.h"
#include "softib/ipoib/ipoib.h"
#include "softib/kernel/io.h"
#include "softib/stack/node_stack.h"
#include "test_sa.h"
// White box: the cache's size after a port event.
#include "../src/internal.h"

namespace softib::ipoib::ibat_test {
namespace {

using kernel::Status;
using Bytes = std::vector<uint8_t>;
constexpr auto kIbatWait = std::chrono::seconds(10);

uint16_t Get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
void Set16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

class IbatFace : public EthernetFace {
 public:
  void DeliverToHost(std::span<const uint8_t> frame) override {
    std::lock_guard guard(mutex_);
    frames_.emplace_back(frame.begin(), frame.end());
    cv_.notify_all();
  }
  void SetCarrier(bool up) override {
    std::lock_guard guard(mutex_);
    carrier_ = up;
    cv_.notify_all();
  }
  void SetMtu(uint32_t) override {}
  bool WaitCarrier(bool up) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, kIbatWait, [&] { return carrier_ == up; });
  }
  // The first frame received (and removed) that `match` accepts.
  bool WaitFrame(const std::function<bool(const Bytes&)>& match, Bytes* out) {
    std::unique_lock lock(mutex_);
    if (!cv_.wait_for(lock, kIbatWait,
                      [&] { return std::any_of(frames_.begin(), frames_.end(), match); })) {
      return false;
    }
    auto it = std::find_if(frames_.begin(), frames_.end(), match);
    *out = *it;
    frames_.erase(it);
    return true;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Bytes> frames_;
  bool carrier_ = false;
};

// The cable: each end records what its port sends and hands it to the other port.
class RecordingWire {
 public:
  class End final : public hca::Link {
   public:
    End(RecordingWire* wire, int from) : wire_(wire), from_(from) {}
    std::vector<uint8_t> Transmit(std::vector<uint8_t> packet) override {
      std::shared_ptr<hca::Link> to;
      {
        std::lock_guard guard(wire_->mutex_);
        wire_->packets_.emplace_back(from_, packet);
        to = wire_->inbound_[1 - from_];
        wire_->cv_.notify_all();
      }
      return to != nullptr ? to->Transmit(std::move(packet)) : std::vector<uint8_t>{};
    }

   private:
    RecordingWire* wire_;
    int from_;
  };

  hca::Link* end(int i) { return &ends_[i]; }
  void SetInbound(int i, std::shared_ptr<hca::Link> link) {
    std::lock_guard guard(mutex_);
    inbound_[i] = std::move(link);
  }
  void Cut() {
    std::lock_guard guard(mutex_);
    inbound_[0].reset();
    inbound_[1].reset();
  }
  // The IPoIB packets (encapsulation header first) end `from` sent that `match` accepts.
  std::vector<Bytes> Sent(int from, const std::function<bool(const Bytes&)>& match) {
    std::lock_guard guard(mutex_);
    return SentLocked(from, match);
  }
  // Waits until end `from` sent at least `count` such packets; returns them.
  std::vector<Bytes> WaitSent(int from, size_t count,
                              const std::function<bool(const Bytes&)>& match) {
    std::unique_lock lock(mutex_);
    std::vector<Bytes> found;
    cv_.wait_for(lock, kIbatWait, [&] {
      found = SentLocked(from, match);
      return found.size() >= count;
    });
    return found;
  }
  // The GRH's DGID of the last packet whose payload `match` accepts (zero without a GRH).
  Gid LastDgid(int from, const std::function<bool(const Bytes&)>& match) {
    std::lock_guard guard(mutex_);
    Gid dgid{};
    for (const auto& [end, packet] : packets_) {
      const auto payload = Payload(packet);
      if (end != from || !payload || !match(*payload)) continue;
      dgid = {};
      if ((packet[1] & 3) == 3) std::memcpy(dgid.data(), packet.data() + 8 + 24, 16);
    }
    return dgid;
  }

 private:
  // A UD SEND's payload: after the LRH (8), the GRH (40, when LNH says so), the BTH (12) and
  // the DETH (8); up to the LRH's PktLen less the ICRC (4) and the BTH's pad.
  static std::optional<Bytes> Payload(const Bytes& p) {
    if (p.size() < 8) return std::nullopt;
    const uint8_t lnh = p[1] & 3;
    if (lnh < 2) return std::nullopt;
    const size_t bth = 8 + (lnh == 3 ? 40 : 0);
    const size_t words = Get16(p.data() + 4) & 0x7FF;  // LRH:PktLen
    if (p.size() < bth + 20 || words * 4 > p.size() || p[bth] != 0x64) return std::nullopt;
    const size_t pad = (p[bth + 1] >> 4) & 3;
    const size_t begin = bth + 20;
    if (words * 4 < begin + 4 + pad) return std::nullopt;
    return Bytes(p.begin() + static_cast<ptrdiff_t>(begin),
                 p.begin() + static_cast<ptrdiff_t>(words * 4 - 4 - pad));
  }
  std::vector<Bytes> SentLocked(int from, const std::function<bool(const Bytes&)>& match) {
    std::vector<Bytes> found;
    for (const auto& [end, packet] : packets_) {
      if (end != from) continue;
      const auto payload = Payload(packet);
      if (payload && match(*payload)) found.push_back(*payload);
    }
    return found;
  }

  End ends_[2] = {End(this, 0), End(this, 1)};
  std::mutex mutex_;
  std::condition_variable cv_;
  std::shared_ptr<hca::Link> inbound_[2];
  std::vector<std::pair<int, Bytes>> packets_;
};

IpAddr V4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  IpAddr ip;
  ip.bytes = {a, b, c, d};
  return ip;
}
IpAddr V6(std::initializer_list<uint8_t> bytes) {
  IpAddr ip;
  ip.v6 = true;
  std::copy(bytes.begin(), bytes.end(), ip.bytes.begin());
  return ip;
}
const IpAddr kA4 = V4(198, 18, 0, 1), kB4 = V4(198, 18, 0, 2), kSilent4 = V4(198, 18, 0, 77);
const IpAddr kA6 = V6({0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xA0, 0, 1});
const IpAddr kB6 = V6({0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xB0, 0, 2});
const IpAddr kAny4 = V4(0, 0, 0, 0);

// An IPoIB ARP (RFC 4391 §9.1.1): encapsulation 0x0806, then htype 32, ptype IPv4, hlen 20,
// plen 4, op, sha (20), spa (4), tha (20), tpa (4).
bool IsIpoibArp(const Bytes& p, uint16_t op, const IpAddr& tpa) {
  return p.size() >= 4 + 56 && Get16(p.data()) == 0x0806 && Get16(p.data() + 4 + 6) == op &&
         std::equal(tpa.bytes.begin(), tpa.bytes.begin() + 4, p.begin() + 4 + 52);
}
// An IPoIB neighbour solicitation for `target`.
bool IsIpoibNs(const Bytes& p, const IpAddr& target) {
  return p.size() >= 4 + 40 + 24 && Get16(p.data()) == 0x86DD && p[4 + 6] == 58 &&
         p[4 + 40] == 135 &&
         std::equal(target.bytes.begin(), target.bytes.end(), p.begin() + 4 + 48);
}

// The ICMPv6 checksum of the IPv6 packet at `ip` (payload length from its header) verifies.
bool Icmp6ChecksumOk(const uint8_t* ip) {
  const size_t length = Get16(ip + 4);
  uint32_t sum = 0;
  for (size_t k = 8; k < 40; k += 2) sum += Get16(ip + k);
  sum += static_cast<uint32_t>(length) + 58;
  for (size_t k = 0; k + 1 < length; k += 2) sum += Get16(ip + 40 + k);
  if (length % 2) sum += uint32_t{ip[40 + length - 1]} << 8;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return sum == 0xFFFF;
}

Bytes EthArp(uint16_t op, const Mac& src, const Mac& dst, const IpAddr& spa, const Mac& tha,
             const IpAddr& tpa) {
  Bytes f(42, 0);
  std::memcpy(f.data(), dst.data(), 6);
  std::memcpy(f.data() + 6, src.data(), 6);
  Set16(f.data() + 12, kEthertypeArp);
  Set16(f.data() + 14, 1);
  Set16(f.data() + 16, kEthertypeIpv4);
  f[18] = 6;
  f[19] = 4;
  Set16(f.data() + 20, op);
  std::memcpy(f.data() + 22, src.data(), 6);
  std::memcpy(f.data() + 28, spa.bytes.data(), 4);
  std::memcpy(f.data() + 32, tha.data(), 6);
  std::memcpy(f.data() + 38, tpa.bytes.data(), 4);
  return f;
}

// An ICMPv6 message in an Ethernet frame (hop limit 255), its checksum made.
Bytes EthIcmp6(const Mac& src, const Mac& dst, const IpAddr& from, const IpAddr& to,
               const Bytes& icmp, const Bytes& hop_by_hop = {}) {
  Bytes f(14 + 40, 0);
  std::memcpy(f.data(), dst.data(), 6);
  std::memcpy(f.data() + 6, src.data(), 6);
  Set16(f.data() + 12, kEthertypeIpv6);
  uint8_t* ip = f.data() + 14;
  ip[0] = 0x60;
  Set16(ip + 4, static_cast<uint16_t>(hop_by_hop.size() + icmp.size()));
  ip[6] = hop_by_hop.empty() ? 58 : 0;
  ip[7] = hop_by_hop.empty() ? 255 : 1;
  std::memcpy(ip + 8, from.bytes.data(), 16);
  std::memcpy(ip + 24, to.bytes.data(), 16);
  f.insert(f.end(), hop_by_hop.begin(), hop_by_hop.end());
  const size_t icmp_at = f.size();
  f.insert(f.end(), icmp.begin(), icmp.end());
  ip = f.data() + 14;  // the inserts may have moved the frame
  uint32_t sum = 0;
  for (size_t k = 8; k < 40; k += 2) sum += Get16(ip + k);
  sum += static_cast<uint32_t>(icmp.size()) + 58;
  for (size_t k = 0; k + 1 < icmp.size(); k += 2) sum += Get16(f.data() + icmp_at + k);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  Set16(f.data() + icmp_at + 2, static_cast<uint16_t>(~sum));
  return f;
}

class IbatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status status = Status::ERROR;
    stack::NodeConfig config;
    config.name = "ipoib-ibat";
    config.cable_pairs = false;  // cabled below through the recording wire
    node_ = stack::NodeStack::Boot(config, &status);
    ASSERT_EQ(status, Status::SUCCESS);
    guids_ = node_->ca_guids();
    ASSERT_EQ(guids_.size(), 2u);
    for (int n = 0; n < 2; ++n) {
      std::shared_ptr<hca::Link> inbound;
      ASSERT_EQ(node_->PlugExternal(guids_[static_cast<size_t>(n)], 1, wire_.end(n), &inbound),
                Status::SUCCESS);
      wire_.SetInbound(n, std::move(inbound));
    }
    sa_ = std::make_unique<test::TestSa>(node_->node());
    ASSERT_TRUE(sa_->Start(guids_[0], guids_[1]));
    ASSERT_EQ(LoadDriver(node_->node(), &driver_), Status::SUCCESS);
    kernel::IoFlushQueuedWorkItems(node_->node());
    ASSERT_EQ(AttachedPorts(driver_), 2u);
  }
  void TearDown() override {
    if (driver_ != nullptr) UnloadDriver(driver_);
    if (sa_ != nullptr) sa_->Stop();
    sa_.reset();
    node_.reset();
    wire_.Cut();
  }

  // B's addresses are given to the driver only with `b_addresses`: an address of one of the
  // driver's interfaces resolves to it at once (loopback), and A and B share this driver, so
  // a test that resolves B through the link leaves them to B's "host" (the test) alone.
  void CreateBoth(std::chrono::milliseconds retry = std::chrono::milliseconds(1000),
                  bool b_addresses = false) {
    InterfaceConfig config;
    config.ibat_retry_interval = retry;
    config.name = "ib0";
    config.ca_guid = guids_[0];
    ASSERT_EQ(CreateInterface(driver_, config, &face_a_, &a_), Status::SUCCESS);
    config.name = "ib1";
    config.ca_guid = guids_[1];
    ASSERT_EQ(CreateInterface(driver_, config, &face_b_, &b_), Status::SUCCESS);
    ASSERT_TRUE(face_a_.WaitCarrier(true));
    ASSERT_TRUE(face_b_.WaitCarrier(true));
    ASSERT_EQ(Query(a_, &info_a_), Status::SUCCESS);
    ASSERT_EQ(Query(b_, &info_b_), Status::SUCCESS);
    const IpAddr a[] = {kA4, kA6};
    const IpAddr b[] = {kB4, kB6};
    SetAddresses(a_, a);
    if (b_addresses) SetAddresses(b_, b);
  }

  // IbatResolve until it answers something else than PENDING (bounded).
  Status ResolveUntilSettled(const IpAddr& local, const IpAddr& remote, IbatPath* path) {
    const auto deadline = std::chrono::steady_clock::now() + kIbatWait;
    Status status = Status::PENDING;
    while (status == Status::PENDING && std::chrono::steady_clock::now() < deadline) {
      status = IbatResolve(driver_, local, remote, path);
      if (status == Status::PENDING) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return status;
  }

  // A resolves B's IPv4 address: PENDING, B's host answers the ARP request, SUCCESS. The
  // MAC A's host sees for B in `mac_of_b`.
  void ResolveB4(IbatPath* path, Mac* mac_of_b) {
    ASSERT_EQ(IbatResolve(driver_, kA4, kB4, path), Status::PENDING);
    Bytes request;
    ASSERT_TRUE(face_b_.WaitFrame(
        [](const Bytes& f) {
          return f.size() >= 42 && Get16(f.data() + 12) == kEthertypeArp &&
                 Get16(f.data() + 20) == 1;
        },
        &request));
    Mac requester;
    std::memcpy(requester.data(), request.data() + 22, 6);
    const Mac mac_b = InterfaceMac(b_);
    Transmit(b_, EthArp(2, mac_b, requester, kB4, requester, kA4));
    Bytes reply;
    ASSERT_TRUE(face_a_.WaitFrame(
        [](const Bytes& f) { return f.size() >= 42 && Get16(f.data() + 20) == 2; }, &reply));
    std::memcpy(mac_of_b->data(), reply.data() + 22, 6);
    ASSERT_EQ(ResolveUntilSettled(kA4, kB4, path), Status::SUCCESS);
  }

  // The path to B, as A's IBAT must answer it.
  void ExpectPathToB(const IbatPath& path, const Mac& mac_of_b) {
    EXPECT_EQ(path.sgid, info_a_.local.hw.gid);
    EXPECT_EQ(path.dgid, info_b_.local.hw.gid);
    EXPECT_EQ(path.pkey, 0xFFFF);
    EXPECT_EQ(path.remote_qpn, info_b_.local.hw.qpn);
    EXPECT_EQ(path.remote_mac, mac_of_b);
    // IBA 15.2.5.16 (rdma-core's ibv_path_record): DGID at 8, SGID at 24, DLID 40, SLID 42,
    // Reversible|NumbPath 49, P_Key 50.
    const auto& r = path.path_record;
    EXPECT_TRUE(std::equal(r.begin() + 8, r.begin() + 24, info_b_.local.hw.gid.begin()));
    EXPECT_TRUE(std::equal(r.begin() + 24, r.begin() + 40, info_a_.local.hw.gid.begin()));
    EXPECT_EQ(Get16(r.data() + 40), info_b_.lid);
    EXPECT_EQ(Get16(r.data() + 42), info_a_.lid);
    EXPECT_EQ(r[49], 0x81);
    EXPECT_EQ(Get16(r.data() + 50), 0xFFFF);
  }

  // The port GUID of a CA's port 1, from its SMA (NodeInfo.PortGUID).
  uint64_t PortGuidOf(uint64_t ca_guid) {
    std::array<uint8_t, 256> request{}, response{};
    request[0] = 1;
    request[1] = 0x01;
    request[2] = 1;
    request[3] = 0x01;   // Get
    request[17] = 0x11;  // NodeInfo
    EXPECT_EQ(node_->LocalMad(ca_guid, 1, request, response), Status::SUCCESS);
    uint64_t guid = 0;
    for (int n = 0; n < 8; ++n) guid = guid << 8 | response[64 + 20 + n];
    return guid;
  }

  RecordingWire wire_;  // outlives the node, which transmits into it
  std::unique_ptr<stack::NodeStack> node_;
  std::vector<uint64_t> guids_;
  std::unique_ptr<test::TestSa> sa_;
  Driver* driver_ = nullptr;
  IbatFace face_a_, face_b_;
  Interface* a_ = nullptr;
  Interface* b_ = nullptr;
  InterfaceInfo info_a_, info_b_;
};

TEST_F(IbatTest, TheIpListAndIpToPortNameEachAddressesPort) {
  ASSERT_NO_FATAL_FAILURE(CreateBoth(std::chrono::milliseconds(1000), true));
  const uint64_t port_a = PortGuidOf(guids_[0]), port_b = PortGuidOf(guids_[1]);
  ASSERT_NE(port_a, 0u);
  ASSERT_NE(port_a, port_b);
  const auto list = IbatGetIpList(driver_);
  ASSERT_EQ(list.size(), 4u);
  const IpAddr order[] = {kA4, kA6, kB4, kB6};
  for (size_t n = 0; n < 4; ++n) {
    const bool on_a = n < 2;
    EXPECT_EQ(list[n].ip, order[n]) << n;
    EXPECT_EQ(list[n].ca_guid, guids_[on_a ? 0 : 1]) << n;
    EXPECT_EQ(list[n].port_guid, on_a ? port_a : port_b) << n;
    EXPECT_EQ(list[n].port, 1) << n;
    EXPECT_EQ(list[n].pkey, 0xFFFF) << n;
    const Gid gid = on_a ? info_a_.local.hw.gid : info_b_.local.hw.gid;
    EXPECT_EQ(list[n].gid, gid) << n;
    // The GID: the default subnet prefix, then the port GUID.
    EXPECT_EQ(gid[0], 0xFE);
    EXPECT_EQ(gid[1], 0x80);
    uint64_t interface_id = 0;
    for (int k = 8; k < 16; ++k) interface_id = interface_id << 8 | gid[static_cast<size_t>(k)];
    EXPECT_EQ(interface_id, on_a ? port_a : port_b) << n;
  }
  const auto only_b = IbatGetIpList(driver_, port_b);
  ASSERT_EQ(only_b.size(), 2u);
  EXPECT_EQ(only_b[0].ip, kB4);
  EXPECT_EQ(only_b[1].ip, kB6);
  EXPECT_TRUE(IbatGetIpList(driver_, 0x1234).empty());

  IbatLocalAddress entry;
  ASSERT_EQ(IbatIpToPort(driver_, kB4, &entry), Status::SUCCESS);
  EXPECT_EQ(entry.ca_guid, guids_[1]);
  EXPECT_EQ(entry.port_guid, port_b);
  EXPECT_EQ(entry.gid, info_b_.local.hw.gid);
  ASSERT_EQ(IbatIpToPort(driver_, kA6, &entry), Status::SUCCESS);
  EXPECT_EQ(entry.port_guid, port_a);
  EXPECT_EQ(entry.ip, kA6);
  EXPECT_EQ(IbatIpToPort(driver_, kSilent4, &entry), Status::NOT_FOUND);
  // An address that went is no longer found.
  SetAddresses(b_, {});
  EXPECT_EQ(IbatIpToPort(driver_, kB4, &entry), Status::NOT_FOUND);
  EXPECT_EQ(IbatGetIpList(driver_).size(), 2u);
}

TEST_F(IbatTest, ResolvingAPeersIpv4AddressSendsAnIpoibArpThenAnswersItsPath) {
  // A long retry interval: B's answer comes before any retry, so exactly one request goes.
  ASSERT_NO_FATAL_FAILURE(CreateBoth(std::chrono::seconds(30)));
  IbatPath path;
  ASSERT_EQ(IbatResolve(driver_, kA4, kB4, &path), Status::PENDING);
  const auto is_request = [](const Bytes& p) { return IsIpoibArp(p, 1, kB4); };
  const auto requests = wire_.WaitSent(0, 1, is_request);
  ASSERT_EQ(requests.size(), 1u);
  const Bytes& arp = requests[0];
  ASSERT_EQ(arp.size(), 4u + 56u);
  EXPECT_EQ(Get16(arp.data() + 2), 0) << "encapsulation reserved";
  const uint8_t* a = arp.data() + 4;
  EXPECT_EQ(Get16(a), 32) << "htype: InfiniBand";
  EXPECT_EQ(Get16(a + 2), 0x0800);
  EXPECT_EQ(a[4], 20);
  EXPECT_EQ(a[5], 4);
  EXPECT_EQ(Get16(a + 6), 1) << "request";
  // sha: flags/QPN (4 bytes), then the GID.
  EXPECT_EQ((uint32_t{a[9]} << 16 | uint32_t{a[10]} << 8 | a[11]), info_a_.local.hw.qpn);
  EXPECT_TRUE(std::equal(a + 12, a + 28, info_a_.local.hw.gid.begin()));
  EXPECT_TRUE(std::equal(kA4.bytes.begin(), kA4.bytes.begin() + 4, a + 28)) << "spa";
  EXPECT_TRUE(std::all_of(a + 32, a + 52, [](uint8_t b) { return b == 0; })) << "tha";
  EXPECT_EQ(wire_.LastDgid(0, is_request), BroadcastMgid(0xFFFF)) << "to the broadcast group";
  // Asked again while pending: nothing new goes out.
  EXPECT_EQ(IbatResolve(driver_, kA4, kB4, &path), Status::PENDING);

  Mac mac_of_b;
  Bytes request;
  ASSERT_TRUE(face_b_.WaitFrame(
      [](const Bytes& f) { return f.size() >= 42 && Get16(f.data() + 20) == 1; }, &request));
  Mac requester;
  std::memcpy(requester.data(), request.data() + 22, 6);
  Transmit(b_, EthArp(2, InterfaceMac(b_), requester, kB4, requester, kA4));
  Bytes reply;
  ASSERT_TRUE(face_a_.WaitFrame(
      [](const Bytes& f) { return f.size() >= 42 && Get16(f.data() + 20) == 2; }, &reply));
  std::memcpy(mac_of_b.data(), reply.data() + 22, 6);
  ASSERT_EQ(ResolveUntilSettled(kA4, kB4, &path), Status::SUCCESS);
  ExpectPathToB(path, mac_of_b);
  EXPECT_EQ(wire_.Sent(0, is_request).size(), 1u);
  // Any local address: the interface whose link knows B answers the same.
  IbatPath again;
  ASSERT_EQ(IbatResolve(driver_, kAny4, kB4, &again), Status::SUCCESS);
  EXPECT_EQ(again.path_record, path.path_record);
}

TEST_F(IbatTest, ResolvingAPeersIpv6AddressSendsANeighbourSolicitation) {
  ASSERT_NO_FATAL_FAILURE(CreateBoth(std::chrono::seconds(30)));
  // B's host listens to its solicited-node group FF02::1:FFB0:0002 (MLDv2 report with the
  // router alert, to FF02::16), so B joins it as a full member.
  const IpAddr group = V6({0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xFF, 0xB0, 0, 2});
  const IpAddr mld_routers = V6({0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x16});
  Bytes report(8 + 20, 0);
  report[0] = 143;
  Set16(report.data() + 6, 1);
  report[8] = 4;  // CHANGE_TO_EXCLUDE, no sources: listen
  std::copy(group.bytes.begin(), group.bytes.end(), report.begin() + 12);
  const Bytes hop_by_hop = {58, 0, 5, 2, 0, 0, 1, 0};  // router alert (MLD), PadN
  const Mac mac_b = InterfaceMac(b_);
  Transmit(b_, EthIcmp6(mac_b, {0x33, 0x33, 0, 0, 0, 0x16}, kB6, mld_routers, report, hop_by_hop));
  const Gid mgid = Ipv6MulticastMgid(std::span<const uint8_t, 16>(group.bytes), 0xFFFF);
  bool joined = false;
  for (int n = 0; n < 1000 && !joined; ++n) {
    InterfaceInfo info;
    Query(b_, &info);
    for (const GroupInfo& g : info.groups) joined = joined || (g.mgid == mgid && !g.send_only);
    if (!joined) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(joined);

  IbatPath path;
  ASSERT_EQ(IbatResolve(driver_, kA6, kB6, &path), Status::PENDING);
  const auto is_ns = [](const Bytes& p) { return IsIpoibNs(p, kB6); };
  const auto solicitations = wire_.WaitSent(0, 1, is_ns);
  ASSERT_EQ(solicitations.size(), 1u);
  const Bytes& ns = solicitations[0];
  const uint8_t* ip = ns.data() + 4;
  ASSERT_EQ(ns.size(), 4u + 40u + 24u + 24u) << "NS + the 24-byte IPoIB link-layer option";
  EXPECT_EQ(ip[7], 255) << "hop limit";
  EXPECT_TRUE(std::equal(kA6.bytes.begin(), kA6.bytes.end(), ip + 8)) << "from A's address";
  EXPECT_TRUE(std::equal(group.bytes.begin(), group.bytes.end(), ip + 24)) << "to the group";
  EXPECT_TRUE(Icmp6ChecksumOk(ip));
  const uint8_t* option = ip + 40 + 24;
  EXPECT_EQ(option[0], 1) << "source link-layer address";
  EXPECT_EQ(option[1], 3);
  EXPECT_EQ((uint32_t{option[5]} << 16 | uint32_t{option[6]} << 8 | option[7]),
            info_a_.local.hw.qpn);
  EXPECT_TRUE(std::equal(option + 8, option + 24, info_a_.local.hw.gid.begin()));
  EXPECT_EQ(wire_.LastDgid(0, is_ns), mgid) << "the solicited-node group's MGID";

  // B's host answers with a solicited NA naming its MAC.
  Bytes solicitation;
  ASSERT_TRUE(face_b_.WaitFrame(
      [](const Bytes& f) {
        return f.size() >= 78 && Get16(f.data() + 12) == 0x86DD && f[54] == 135;
      },
      &solicitation));
  EXPECT_TRUE(Icmp6ChecksumOk(solicitation.data() + 14)) << "as B's host sees it";
  Mac requester;
  std::memcpy(requester.data(), solicitation.data() + 6, 6);
  Bytes na(24 + 8, 0);
  na[0] = 136;
  na[4] = 0x60;  // solicited, override
  std::copy(kB6.bytes.begin(), kB6.bytes.end(), na.begin() + 8);
  na[24] = 2;  // target link-layer address
  na[25] = 1;
  std::memcpy(na.data() + 26, mac_b.data(), 6);
  Transmit(b_, EthIcmp6(mac_b, requester, kB6, kA6, na));
  Bytes advert;
  ASSERT_TRUE(face_a_.WaitFrame(
      [](const Bytes& f) {
        return f.size() >= 86 && Get16(f.data() + 12) == 0x86DD && f[54] == 136;
      },
      &advert));
  Mac mac_of_b;
  std::memcpy(mac_of_b.data(), advert.data() + 54 + 26, 6);
  ASSERT_EQ(ResolveUntilSettled(kA6, kB6, &path), Status::SUCCESS);
  ExpectPathToB(path, mac_of_b);
  EXPECT_EQ(wire_.Sent(0, is_ns).size(), 1u);
}

TEST_F(IbatTest, ASilentAddressTimesOutAfterThreeTriesThenStartsOver) {
  constexpr auto kInterval = std::chrono::milliseconds(40);
  ASSERT_NO_FATAL_FAILURE(CreateBoth(kInterval));
  const auto is_request = [](const Bytes& p) { return IsIpoibArp(p, 1, kSilent4); };
  IbatPath path;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(IbatResolve(driver_, kA4, kSilent4, &path), Status::PENDING);
  EXPECT_EQ(ResolveUntilSettled(kA4, kSilent4, &path), Status::TIMEOUT);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 3 * kInterval) << "3 tries, each waited";
  EXPECT_EQ(wire_.Sent(0, is_request).size(), 3u);
  // The next call starts over: a fourth request.
  EXPECT_EQ(IbatResolve(driver_, kA4, kSilent4, &path), Status::PENDING);
  EXPECT_EQ(wire_.WaitSent(0, 4, is_request).size(), 4u);
}

TEST_F(IbatTest, OwnAddressesResolveToThemselvesAndBadRemotesAreRefused) {
  ASSERT_NO_FATAL_FAILURE(CreateBoth(std::chrono::milliseconds(1000), true));
  IbatPath path;
  ASSERT_EQ(IbatResolve(driver_, kA4, kA4, &path), Status::SUCCESS);
  EXPECT_EQ(path.sgid, info_a_.local.hw.gid);
  EXPECT_EQ(path.dgid, info_a_.local.hw.gid);
  EXPECT_EQ(path.remote_qpn, info_a_.local.hw.qpn);
  EXPECT_EQ(path.remote_mac, InterfaceMac(a_));
  EXPECT_EQ(path.pkey, 0xFFFF);
  const auto& r = path.path_record;
  EXPECT_TRUE(std::equal(r.begin() + 8, r.begin() + 24, info_a_.local.hw.gid.begin()));
  EXPECT_TRUE(std::equal(r.begin() + 24, r.begin() + 40, info_a_.local.hw.gid.begin()));
  EXPECT_EQ(Get16(r.data() + 40), info_a_.lid);
  EXPECT_EQ(Get16(r.data() + 42), info_a_.lid);
  EXPECT_EQ(Get16(r.data() + 50), 0xFFFF);
  // B's address from anywhere: B itself (one node), nothing on the wire.
  ASSERT_EQ(IbatResolve(driver_, kA4, kB6, &path), Status::INVALID_PARAMETER)
      << "an IPv4 local, an IPv6 remote";
  ASSERT_EQ(IbatResolve(driver_, IpAddr{true, {}}, kB6, &path), Status::SUCCESS);
  EXPECT_EQ(path.dgid, info_b_.local.hw.gid);
  EXPECT_EQ(path.remote_qpn, info_b_.local.hw.qpn);
  EXPECT_TRUE(
      wire_.Sent(0, [](const Bytes& p) { return IsIpoibArp(p, 1, kA4) || IsIpoibNs(p, kB6); })
          .empty());

  for (const IpAddr& bad :
       {kAny4, V4(224, 0, 0, 1), V4(239, 1, 1, 1), V4(255, 255, 255, 255),
        V6({0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}), IpAddr{true, {}}}) {
    EXPECT_EQ(IbatResolve(driver_, kAny4, bad, &path), Status::INVALID_PARAMETER)
        << static_cast<int>(bad.bytes[0]);
  }
  EXPECT_EQ(IbatResolve(driver_, kA4, kB4, nullptr), Status::INVALID_PARAMETER);
  // A local address no interface holds.
  EXPECT_EQ(IbatResolve(driver_, kSilent4, kB4, &path), Status::NOT_FOUND);
}

TEST_F(IbatTest, NoCarrierIsNotFoundAndAPortEventForgetsTheCache) {
  ASSERT_NO_FATAL_FAILURE(CreateBoth());
  IbatPath path;
  Mac mac_of_b;
  ASSERT_NO_FATAL_FAILURE(ResolveB4(&path, &mac_of_b));
  ExpectPathToB(path, mac_of_b);
  {
    kernel::SpinLockGuard guard(a_->lock);
    EXPECT_EQ(a_->ibat.entries.size(), 1u);
  }
  ASSERT_EQ(node_->SetExternalLinkUp(guids_[0], 1, false), Status::SUCCESS);
  ASSERT_TRUE(face_a_.WaitCarrier(false));
  {
    kernel::SpinLockGuard guard(a_->lock);
    EXPECT_TRUE(a_->ibat.entries.empty());
  }
  EXPECT_EQ(IbatResolve(driver_, kA4, kB4, &path), Status::NOT_FOUND);
  // Any local address: the first interface with a carrier (B) asks.
  EXPECT_EQ(IbatResolve(driver_, kAny4, kSilent4, &path), Status::PENDING);
  // The link returns: the carrier too, and B is asked for again (the cache starts over).
  const auto is_request = [](const Bytes& p) { return IsIpoibArp(p, 1, kB4); };
  const size_t before = wire_.Sent(0, is_request).size();
  ASSERT_EQ(node_->SetExternalLinkUp(guids_[0], 1, true), Status::SUCCESS);
  ASSERT_TRUE(sa_->ActivatePorts());
  ASSERT_TRUE(face_a_.WaitCarrier(true));
  EXPECT_EQ(IbatResolve(driver_, kA4, kB4, &path), Status::PENDING);
  EXPECT_EQ(wire_.WaitSent(0, before + 1, is_request).size(), before + 1);
}

}  // namespace
}  // namespace softib::ipoib::ibat_test
