// LBFO: one interface over two ports of a CA (InterfaceConfig::ports = {primary, other}).
// The team's Interface has no QP of its own: it holds two member interfaces, ordinary
// single-port interfaces (their own QP, registration, broadcast join, paths, neighbours,
// port events), each with a MemberFace of the team's in place of the host's face. Both
// members stay joined to the broadcast group, so the standby is ready at once.
//
// The face sees one MAC (the primary member's; the other member translates with it too)
// and one carrier (up while a member's is). The active member carries every frame in
// active/standby mode; in balance mode unicast IP is spread across the members whose carrier
// is up by a hash of the flow (addresses, protocol, ports), while ARP, ND and multicast stay
// on the active (advertised) one. Receive: unicast from either member, broadcast and
// multicast only from the active one (both are joined: the host would see each twice) —
// except ARP and ND, taken from either: a peer that failed over announces itself on the link
// of our standby member before our own port event made it active (the two ports may be on
// different links), and a repeated ARP or ND message is harmless to the host.
//
// ATS: the host's addresses (SetAddresses) are registered by the active member only — a
// resolver asking the SA for an address must get the GID traffic uses — and move with it:
// the old member deregisters them, the new one registers them with its GID.
//
// A move (the active member's carrier went down and the other's is up; or, with failback,
// the primary's came back) hands the neighbours over (their paths are resolved again on the
// new port), joins the host's full-member groups on the new member, and announces the new
// hardware address: a gratuitous ARP request for each IPv4 address and an unsolicited
// Neighbour Advertisement (override) for each IPv6 address the host used (snooped from its
// frames, plus SetAddresses'), sent as host frames through the new member's translation, and
// sent again kLbfoAnnounceRepeats times, 200 ms after the first then at doubling intervals
// (a timer's DPC; bonding's num_grat_arp / num_unsol_na repeat too): a peer whose own port
// came back with ours joins the broadcast group after our first announcement went out — a
// second later when its first join request was lost (the SA's timeout).
//
// Locking: Lbfo::lock guards the state below it; member interfaces are called with it
// released, the face too. Members never call each other.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include "internal.h"

namespace softib::ipoib {

using kernel::Status;

class Lbfo;

namespace {

constexpr size_t kMaxLbfoAddresses = 16;
constexpr int kLbfoAnnounceRepeats = 4;  // at 0.2, 0.6, 1.4 and 3 s after the move
constexpr auto kLbfoAnnounceFirstDelay = std::chrono::milliseconds(200);

void OnMemberCarrier(Lbfo* t, int index, bool up);
void OnMemberDeliver(Lbfo* t, int index, std::span<const uint8_t> frame);
void OnMemberMtu(Lbfo* t, int index, uint32_t mtu);
void OnMemberQueue(Lbfo* t, bool stop);

}  // namespace

// The face a member interface talks to: the team.
class LbfoMemberFace final : public EthernetFace {
 public:
  LbfoMemberFace(Lbfo* team, int index) : team_(team), index_(index) {}
  void DeliverToHost(std::span<const uint8_t> frame) override {
    OnMemberDeliver(team_, index_, frame);
  }
  void SetCarrier(bool up) override { OnMemberCarrier(team_, index_, up); }
  void SetMtu(uint32_t mtu) override { OnMemberMtu(team_, index_, mtu); }
  void StopQueue() override { OnMemberQueue(team_, true); }
  void WakeQueue() override { OnMemberQueue(team_, false); }

 private:
  Lbfo* team_;
  int index_;
};

class Lbfo {
 public:
  Interface* team = nullptr;
  EthernetFace* face = nullptr;
  InterfaceConfig config;
  Interface* members[2] = {nullptr, nullptr};  // set during creation, constant afterwards
  std::unique_ptr<LbfoMemberFace> member_faces[2];
  kernel::Kdpc announce_dpc;
  kernel::Ktimer announce_timer;
  kernel::KSpinLock lock;
  // ---- under `lock` ----
  bool carriers[2] = {false, false};
  uint32_t mtus[2] = {0, 0};
  int active = -1;
  bool carrier = false;  // what the face was told
  uint32_t face_mtu = 0;
  bool stopping = false;
  Mac mac{};
  std::vector<IpAddr> addresses;  // snooped from the host and SetAddresses
  std::vector<IpAddr> ats;        // SetAddresses: registered by the active member
  uint64_t moves = 0;
  uint64_t tx_dropped = 0;
  int announce_left = 0;      // repeats of the last move's announcement still due
  bool primary_seen = false;  // member 0 has had a carrier
  // Back-pressure: the host's face is stopped while either member's send ring is full. A
  // leaf lock: taken under a member's interface lock, which its Stop/WakeQueue come with.
  kernel::KSpinLock queue_lock;
  int stopped_members = 0;  // under queue_lock
};

namespace {

uint16_t LbfoBe16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

void LbfoPutBe16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

// Remembers an address the host uses on the interface (under the team's lock).
void RememberLocked(Lbfo* t, const IpAddr& address) {
  if (std::find(t->addresses.begin(), t->addresses.end(), address) != t->addresses.end()) return;
  if (t->addresses.size() >= kMaxLbfoAddresses) t->addresses.erase(t->addresses.begin());
  t->addresses.push_back(address);
}

// The host's own addresses, from what it sends: an ARP's sender (our MAC), an IPv4 or IPv6
// unicast source.
void SnoopAddresses(Lbfo* t, std::span<const uint8_t> f) {
  if (f.size() < kEthHeaderBytes) return;
  const uint16_t type = LbfoBe16(f.data() + 12);
  IpAddr address;
  if (type == kEthertypeArp && f.size() >= 42) {
    std::memcpy(address.bytes.data(), f.data() + 28, 4);
  } else if (type == kEthertypeIpv4 && f.size() >= 34) {
    std::memcpy(address.bytes.data(), f.data() + 26, 4);
  } else if (type == kEthertypeIpv6 && f.size() >= 54) {
    address.v6 = true;
    std::memcpy(address.bytes.data(), f.data() + 22, 16);
    if (address.bytes[0] == 0xFF) return;
  } else {
    return;
  }
  const size_t length = address.v6 ? 16 : 4;
  if (std::all_of(address.bytes.begin(), address.bytes.begin() + length,
                  [](uint8_t b) { return b == 0; })) {
    return;
  }
  if (!address.v6 && (address.bytes[0] >= 224 || address.bytes[0] == 127)) return;
  kernel::SpinLockGuard guard(t->lock);
  RememberLocked(t, address);
}

// Balance mode: the flow hash of a unicast IP frame (FNV-1a over addresses, protocol and
// the TCP/UDP ports), or false when the frame stays on the advertised port (not IP, ND, or
// multicast).
bool FlowHash(std::span<const uint8_t> f, uint32_t* hash) {
  if (f.size() < kEthHeaderBytes || (f[0] & 1) != 0) return false;
  const uint16_t type = LbfoBe16(f.data() + 12);
  size_t addr = 0, addr_bytes = 0, l4 = 0;
  uint8_t protocol = 0;
  if (type == kEthertypeIpv4 && f.size() >= 34) {
    const size_t ihl = static_cast<size_t>(f[14] & 0x0F) * 4;
    protocol = f[23];
    addr = 26;
    addr_bytes = 8;
    const bool fragment = (LbfoBe16(f.data() + 20) & 0x3FFF) != 0;
    l4 = fragment ? 0 : 14 + ihl;
  } else if (type == kEthertypeIpv6 && f.size() >= 54) {
    protocol = f[20];
    if (protocol == 58 && f.size() >= 55 && f[54] >= 133 && f[54] <= 137) return false;  // ND
    addr = 22;
    addr_bytes = 32;
    l4 = 54;
  } else {
    return false;
  }
  uint32_t h = 2166136261u;
  auto mix = [&h](uint8_t b) { h = (h ^ b) * 16777619u; };
  for (size_t k = 0; k < addr_bytes; ++k) mix(f[addr + k]);
  mix(protocol);
  if ((protocol == 6 || protocol == 17) && l4 != 0 && f.size() >= l4 + 4) {
    for (size_t k = 0; k < 4; ++k) mix(f[l4 + k]);
  }
  *hash = h;
  return true;
}

// ARP, or ICMPv6 neighbour discovery (router/neighbour solicitation and advertisement,
// redirect) without extension headers.
bool IsArpOrNd(std::span<const uint8_t> f) {
  if (f.size() < kEthHeaderBytes) return false;
  const uint16_t type = LbfoBe16(f.data() + 12);
  if (type == kEthertypeArp) return true;
  return type == kEthertypeIpv6 && f.size() >= 55 && f[20] == 58 && f[54] >= 133 && f[54] <= 137;
}

// Gives `to` the neighbour `from` knows by `mac` (its path resolved on demand there). False
// when `from` does not know it or `to` would give it another MAC.
bool CopyNeighbour(Interface* from, Interface* to, const Mac& mac) {
  Neighbour n;
  {
    kernel::SpinLockGuard guard(from->lock);
    const Neighbour* found = from->neighbours.FindByMac(mac);
    if (found == nullptr) return false;
    n = *found;
  }
  kernel::SpinLockGuard guard(to->lock);
  if (to->neighbours.FindByMac(mac) != nullptr) return true;
  const Neighbour* learnt = to->neighbours.Learn(n.hw, n.lid);
  return learnt != nullptr && learnt->mac == mac;
}

bool KnowsMac(Interface* i, const Mac& mac) {
  kernel::SpinLockGuard guard(i->lock);
  return i->neighbours.FindByMac(mac) != nullptr;
}

uint16_t InternetChecksum(uint32_t sum, const uint8_t* p, size_t n) {
  for (size_t k = 0; k + 1 < n; k += 2) sum += LbfoBe16(p + k);
  if (n % 2) sum += uint32_t{p[n - 1]} << 8;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

// A gratuitous ARP request for `ip` from `mac` (Ethernet broadcast).
std::vector<uint8_t> GratuitousArp(const Mac& mac, const IpAddr& ip) {
  std::vector<uint8_t> f(42, 0);
  std::memset(f.data(), 0xFF, 6);
  std::memcpy(f.data() + 6, mac.data(), 6);
  LbfoPutBe16(f.data() + 12, kEthertypeArp);
  uint8_t* a = f.data() + 14;
  LbfoPutBe16(a, 1);
  LbfoPutBe16(a + 2, kEthertypeIpv4);
  a[4] = 6;
  a[5] = 4;
  LbfoPutBe16(a + 6, 1);
  std::memcpy(a + 8, mac.data(), 6);
  std::memcpy(a + 14, ip.bytes.data(), 4);
  std::memcpy(a + 24, ip.bytes.data(), 4);  // target = sender: gratuitous
  return f;
}

// An unsolicited Neighbour Advertisement (override, RFC 4861 §7.2.6) for `ip` to ff02::1,
// with the target link-layer address option (the translation makes it the IPoIB one).
std::vector<uint8_t> UnsolicitedNa(const Mac& mac, const IpAddr& ip) {
  constexpr size_t kIcmp = 32;  // NA 24 + option 8
  std::vector<uint8_t> f(kEthHeaderBytes + 40 + kIcmp, 0);
  const uint8_t all_nodes[16] = {0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  f[0] = 0x33;
  f[1] = 0x33;
  f[5] = 1;
  std::memcpy(f.data() + 6, mac.data(), 6);
  LbfoPutBe16(f.data() + 12, kEthertypeIpv6);
  uint8_t* ip6 = f.data() + 14;
  ip6[0] = 0x60;
  LbfoPutBe16(ip6 + 4, kIcmp);
  ip6[6] = 58;
  ip6[7] = 255;
  std::memcpy(ip6 + 8, ip.bytes.data(), 16);
  std::memcpy(ip6 + 24, all_nodes, 16);
  uint8_t* icmp = ip6 + 40;
  icmp[0] = 136;
  icmp[4] = 0x20;  // override
  std::memcpy(icmp + 8, ip.bytes.data(), 16);
  icmp[24] = 2;  // target link-layer address
  icmp[25] = 1;
  std::memcpy(icmp + 26, mac.data(), 6);
  uint32_t pseudo = 0;
  for (size_t k = 0; k < 32; k += 2) pseudo += LbfoBe16(ip6 + 8 + k);
  pseudo += kIcmp + 58;
  LbfoPutBe16(icmp + 2, InternetChecksum(pseudo, icmp, kIcmp));
  return f;
}

// The host's addresses announced through `member` with the team's MAC: a gratuitous ARP per
// IPv4 address, an unsolicited NA per IPv6 address.
void Announce(Lbfo* t, Interface* member) {
  std::vector<IpAddr> addresses;
  Mac mac;
  {
    kernel::SpinLockGuard guard(t->lock);
    addresses = t->addresses;
    mac = t->mac;
  }
  for (const IpAddr& address : addresses) {
    const std::vector<uint8_t> frame =
        address.v6 ? UnsolicitedNa(mac, address) : GratuitousArp(mac, address);
    Transmit(member, frame);
  }
}

// The announcement timer: the last move's announcement again, through the member active now.
void AnnounceDpc(kernel::Kdpc*, void* context, void*, void*) {
  auto* t = static_cast<Lbfo*>(context);
  Interface* member = nullptr;
  {
    kernel::SpinLockGuard guard(t->lock);
    if (t->stopping || t->announce_left <= 0 || t->active < 0) return;
    --t->announce_left;
    if (t->announce_left > 0) {  // armed under the lock: DestroyLbfo's cancel sees it
      kernel::KeSetTimer(&t->announce_timer,
                         kLbfoAnnounceFirstDelay * (1 << (kLbfoAnnounceRepeats - t->announce_left)),
                         &t->announce_dpc);
    }
    member = t->members[t->active];
  }
  if (member != nullptr) Announce(t, member);
}

// The active member changed from `from` to `to` (both set): neighbours, groups, announce.
void MoveTraffic(Lbfo* t, Interface* from, Interface* to) {
  std::vector<Neighbour> neighbours;
  std::vector<Gid> groups;
  {
    kernel::SpinLockGuard guard(from->lock);
    neighbours = from->neighbours.Snapshot();
    for (const auto& [mgid, group] : from->groups) {
      if (group.full && !group.broadcast && group.state != Group::State::kLeaving) {
        groups.push_back(mgid);
      }
    }
  }
  {
    kernel::SpinLockGuard guard(to->lock);
    for (const Neighbour& n : neighbours) {
      if (to->neighbours.FindByHw(n.hw) == nullptr) to->neighbours.Learn(n.hw, n.lid);
    }
  }
  for (const Gid& mgid : groups) JoinGroup(to, mgid, true, false);
  std::vector<IpAddr> ats;
  {
    kernel::SpinLockGuard guard(t->lock);
    ats = t->ats;
  }
  SetAddresses(from, {});
  SetAddresses(to, ats);
  Announce(t, to);
  kernel::SpinLockGuard guard(t->lock);
  if (t->stopping) return;
  t->announce_left = kLbfoAnnounceRepeats;
  kernel::KeSetTimer(&t->announce_timer, kLbfoAnnounceFirstDelay, &t->announce_dpc);
}

void OnMemberCarrier(Lbfo* t, int index, bool up) {
  Interface* from = nullptr;
  Interface* to = nullptr;
  int tell = -1;  // the face's new carrier, -1: unchanged
  uint32_t mtu = 0;
  {
    kernel::SpinLockGuard guard(t->lock);
    t->carriers[index] = up;
    if (t->stopping) return;
    const int old = t->active;
    if (t->active < 0 || !t->carriers[t->active]) {
      if (t->carriers[0]) {
        t->active = 0;
      } else if (t->carriers[1]) {
        t->active = 1;
      }
    } else if (up && index == 0 && t->active != 0 && (t->config.failback || !t->primary_seen)) {
      // Failback to the primary; or its first carrier, the other member's join having been
      // answered first at creation: a team starts on its primary, failback or not.
      t->active = 0;
    }
    if (up && index == 0) t->primary_seen = true;
    if (old >= 0 && t->active != old && t->members[old] != nullptr &&
        t->members[t->active] != nullptr) {
      from = t->members[old];
      to = t->members[t->active];
      ++t->moves;
    }
    const bool carrier = t->carriers[0] || t->carriers[1];
    if (carrier != t->carrier) {
      t->carrier = carrier;
      tell = carrier ? 1 : 0;
      if (carrier && t->active >= 0 && t->mtus[t->active] != 0 &&
          t->mtus[t->active] != t->face_mtu) {
        mtu = t->face_mtu = t->mtus[t->active];
      }
    }
  }
  if (mtu != 0) t->face->SetMtu(mtu);
  if (tell >= 0) t->face->SetCarrier(tell == 1);
  if (to != nullptr) MoveTraffic(t, from, to);
}

void OnMemberDeliver(Lbfo* t, int index, std::span<const uint8_t> frame) {
  {
    kernel::SpinLockGuard guard(t->lock);
    if (t->stopping) return;
    // Broadcast and multicast come to both members: the active one's copy only (ARP and
    // ND from either: see the top).
    if (!frame.empty() && (frame[0] & 1) != 0 && index != t->active && !IsArpOrNd(frame)) {
      return;
    }
  }
  t->face->DeliverToHost(frame);
}

// A member's StopQueue / WakeQueue (each member's come in pairs): the face stops with the
// first full ring and wakes when none is full.
void OnMemberQueue(Lbfo* t, bool stop) {
  kernel::SpinLockGuard guard(t->queue_lock);
  if (stop) {
    if (t->stopped_members++ == 0) t->face->StopQueue();
  } else if (t->stopped_members > 0 && --t->stopped_members == 0) {
    t->face->WakeQueue();
  }
}

void OnMemberMtu(Lbfo* t, int index, uint32_t mtu) {
  bool tell = false;
  {
    kernel::SpinLockGuard guard(t->lock);
    t->mtus[index] = mtu;
    if (t->stopping || mtu == t->face_mtu) return;
    // Told before the member's carrier: the face hears the MTU of the member it will use.
    tell = index == t->active || t->active < 0;
    if (tell) t->face_mtu = mtu;
  }
  if (tell) t->face->SetMtu(mtu);
}

}  // namespace

Status CreateLbfo(Driver* driver, const InterfaceConfig& config, EthernetFace* face,
                  Interface** out) {
  if (config.ports[0] == config.ports[1]) return Status::INVALID_PARAMETER;
  auto* team = new Interface;
  auto* t = new Lbfo;
  team->driver = driver;
  team->face = face;
  team->config = config;
  team->node = driver->node;
  team->lbfo = t;
  t->team = team;
  t->face = face;
  t->config = config;
  for (int n = 0; n < 2; ++n) t->member_faces[n] = std::make_unique<LbfoMemberFace>(t, n);
  kernel::KeInitializeDpc(&t->announce_dpc, driver->node, &AnnounceDpc, t);
  kernel::KeInitializeTimer(&t->announce_timer, driver->node);
  Status status = Status::SUCCESS;
  for (int n = 0; n < 2 && status == Status::SUCCESS; ++n) {
    InterfaceConfig one = config;
    one.ports = {config.ports[static_cast<size_t>(n)]};
    one.name = config.name + (n == 0 ? ".p" : ".s");
    Interface* member = nullptr;
    status = CreateInterface(driver, one, t->member_faces[n].get(), &member);
    if (status != Status::SUCCESS) break;
    member->team = team;
    if (n == 0) {
      const Mac mac = InterfaceMac(member);
      kernel::SpinLockGuard guard(t->lock);
      t->mac = mac;
      t->face_mtu = InterfaceMtu(member);
    } else {
      // The other member speaks for the same MAC (the host's frames carry it).
      kernel::SpinLockGuard guard(member->lock);
      member->local.mac = t->mac;
    }
    kernel::SpinLockGuard guard(t->lock);
    t->members[n] = member;
  }
  if (status != Status::SUCCESS) {
    DestroyLbfo(team);
    return status;
  }
  // Each member drops what the other sends to a group both hear (one subnet): the host would
  // get its own ARP requests and Neighbour Advertisements back, from a stranger's MAC.
  HwAddr hw[2];
  for (int n = 0; n < 2; ++n) {
    kernel::SpinLockGuard guard(t->members[n]->lock);
    hw[n] = t->members[n]->local.hw;
  }
  for (int n = 0; n < 2; ++n) {
    kernel::SpinLockGuard guard(t->members[n]->lock);
    t->members[n]->lbfo_sibling = hw[1 - n];
  }
  {
    std::lock_guard guard(driver->mutex);
    driver->interfaces.push_back(team);
  }
  *out = team;
  return Status::SUCCESS;
}

void DestroyLbfo(Interface* team) {
  Lbfo* t = team->lbfo;
  bool was_up;
  Interface* members[2];
  {
    kernel::SpinLockGuard guard(t->lock);
    t->stopping = true;
    was_up = t->carrier;
    t->carrier = false;
    members[0] = t->members[0];
    members[1] = t->members[1];
  }
  // The announcement timer is armed under the lock unless `stopping`: cancelled now, and a DPC
  // already running (it transmits through the members) finished, it never runs again.
  kernel::KeCancelTimer(&t->announce_timer);
  kernel::KeFlushQueuedDpcs(team->node);
  // After DestroyInterface no member calls its MemberFace any more.
  for (Interface* member : members) {
    if (member != nullptr) DestroyInterface(member);
  }
  if (was_up) t->face->SetCarrier(false);
  Driver* driver = team->driver;
  {
    std::lock_guard guard(driver->mutex);
    driver->interfaces.erase(
        std::remove(driver->interfaces.begin(), driver->interfaces.end(), team),
        driver->interfaces.end());
  }
  delete t;
  delete team;
}

void LbfoTransmit(Interface* team, std::span<const uint8_t> frame) {
  Lbfo* t = team->lbfo;
  SnoopAddresses(t, frame);
  int use = -1, advertised = -1;
  {
    kernel::SpinLockGuard guard(t->lock);
    if (t->stopping || t->active < 0) {
      ++t->tx_dropped;
      return;
    }
    advertised = use = t->active;
    uint32_t hash = 0;
    if (t->config.lbfo == LbfoMode::kBalance && t->carriers[0] && t->carriers[1] &&
        FlowHash(frame, &hash)) {
      use = static_cast<int>(hash % 2);
    }
  }
  if (use != advertised) {
    // The other member may not know the destination yet (ARP ran on the advertised one).
    Mac dst;
    std::memcpy(dst.data(), frame.data(), 6);
    if (!KnowsMac(t->members[use], dst) &&
        !CopyNeighbour(t->members[advertised], t->members[use], dst)) {
      use = advertised;
    }
  }
  Transmit(t->members[use], frame);
}

bool LbfoFromSiblingLocked(const Interface* member, const RxSource& source) {
  const HwAddr& sibling = member->lbfo_sibling;
  return source.has_grh && sibling.qpn != 0 && (source.qpn & 0xFFFFFF) == sibling.qpn &&
         source.sgid == sibling.gid;
}

Mac LbfoMac(Interface* team) {
  kernel::SpinLockGuard guard(team->lbfo->lock);
  return team->lbfo->mac;
}

uint32_t LbfoMtu(Interface* team) {
  Lbfo* t = team->lbfo;
  uint32_t mtu = 0;
  for (Interface* member : t->members) {
    const uint32_t m = InterfaceMtu(member);
    mtu = mtu == 0 ? m : std::min(mtu, m);
  }
  return mtu;
}

Status LbfoQuery(Interface* team, InterfaceInfo* info) {
  Lbfo* t = team->lbfo;
  int active;
  bool carrier, carriers[2];
  uint64_t moves, tx_dropped;
  {
    kernel::SpinLockGuard guard(t->lock);
    active = t->active < 0 ? 0 : t->active;
    carrier = t->carrier;
    carriers[0] = t->carriers[0];
    carriers[1] = t->carriers[1];
    moves = t->moves;
    tx_dropped = t->tx_dropped;
  }
  InterfaceInfo other;
  const Status status = Query(t->members[active], info);
  (void)Query(t->members[1 - active], &other);
  info->name = t->config.name;
  info->carrier = carrier;
  info->lbfo = t->config.lbfo;
  info->lbfo_moves = moves;
  info->lbfo_ports.clear();
  for (int n = 0; n < 2; ++n) {
    const InterfaceInfo& m = n == active ? *info : other;
    info->lbfo_ports.push_back({t->config.ports[static_cast<size_t>(n)], carriers[n], n == active,
                                m.local.hw.qpn, m.counters.tx_packets, m.counters.rx_packets});
  }
  Counters& c = info->counters;
  const Counters& o = other.counters;
  c.tx_packets += o.tx_packets;
  c.tx_bytes += o.tx_bytes;
  c.rx_packets += o.rx_packets;
  c.rx_bytes += o.rx_bytes;
  c.tx_dropped += o.tx_dropped + tx_dropped;
  c.rx_dropped += o.rx_dropped;
  for (size_t d = 0; d < c.drops.size(); ++d) c.drops[d] += o.drops[d];
  return status;
}

void LbfoSetAddresses(Interface* team, std::span<const IpAddr> addresses) {
  Lbfo* t = team->lbfo;
  int active;
  {
    kernel::SpinLockGuard guard(t->lock);
    for (const IpAddr& address : addresses) RememberLocked(t, address);
    t->ats.assign(addresses.begin(), addresses.end());
    active = t->active < 0 ? 0 : t->active;
  }
  // The active member's GID only (a move hands them over: MoveTraffic).
  SetAddresses(t->members[active], addresses);
  SetAddresses(t->members[1 - active], {});
}

size_t LbfoAtsRecords(Interface* team) {
  size_t count = 0;
  for (Interface* member : team->lbfo->members) count += RegisteredAtsRecords(member);
  return count;
}

}  // namespace softib::ipoib
