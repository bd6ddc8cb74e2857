// IBAT (softib/ipoib/ibat.h): IP address -> local port, and remote IP address -> GID, P_Key,
// QPN and PathRecord, for kernel clients at IRQL <= DISPATCH.
//
// Each interface keeps a cache of remote addresses (IbatCache, under its lock), learnt from
// the ARP and ND messages it translates in either direction — an ARP's sender (from the wire)
// or the requester a host's ARP reply answers; an NS's source and its source link-layer
// option, an NA's target and its target link-layer option — through the neighbour table
// (MAC -> hardware address). A resolution of an address the cache does not know sends an ARP
// request (IPv4: an Ethernet ARP frame from the interface's MAC pushed through its own
// transmit translation, so the wire carries an IPoIB ARP on the broadcast group) or an NS to
// the solicited-node group (IPv6), then retries from a timer every ibat_retry_interval, three
// tries in all; the next resolution after the last try's interval answers TIMEOUT and
// forgets the entry. A known address gets its path from the transmit path's resolution (SA
// PathRecord, then an AV), whose record the path keeps.
//
// Locking: Driver::ibat_lock (a spin lock: DISPATCH callers) guards the list of interfaces and
// is taken before an interface's lock; nothing else takes it. Work that sends (Transmit,
// StartResolve) runs with both released and the interface held (Hold: its shutdown waits).
#include <endian.h>

#include <algorithm>
#include <cstring>

#include "internal.h"
#include "softib/ipoib/ibat.h"
#include "softib/mad/mad_sa.h"

namespace softib::ipoib {

using kernel::Status;

namespace {

using IbatKey = std::array<uint8_t, 17>;

size_t IbatLength(const IpAddr& a) { return a.v6 ? 16 : 4; }

IbatKey IbatKeyOf(const IpAddr& a) {
  IbatKey key{};
  key[0] = a.v6 ? 1 : 0;
  std::memcpy(key.data() + 1, a.bytes.data(), IbatLength(a));
  return key;
}

bool IbatSame(const IpAddr& a, const IpAddr& b) { return IbatKeyOf(a) == IbatKeyOf(b); }

bool IbatUnspecified(const IpAddr& a) {
  return std::all_of(a.bytes.begin(), a.bytes.begin() + static_cast<ptrdiff_t>(IbatLength(a)),
                     [](uint8_t b) { return b == 0; });
}

// A unicast address a remote host may hold: not unspecified, multicast or broadcast (IPv4
// 224.0.0.0 and above: multicast, reserved, limited broadcast).
bool IbatRemoteValid(const IpAddr& a) {
  if (IbatUnspecified(a)) return false;
  return a.v6 ? a.bytes[0] != 0xFF : a.bytes[0] < 224;
}

bool IbatLinkLocal6(const IpAddr& a) {
  return a.v6 && a.bytes[0] == 0xFE && (a.bytes[1] & 0xC0) == 0x80;
}

uint16_t IbatBe16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

void IbatPut16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

bool HoldsLocked(const Interface* i, const IpAddr& address) {
  return std::any_of(i->addresses.begin(), i->addresses.end(),
                     [&](const IpAddr& a) { return IbatSame(a, address); });
}

// Usable for IBAT: not shutting down (under i->lock).
bool IbatLiveLocked(const Interface* i) { return !i->stopping && i->port != nullptr; }

IbatLocalAddress LocalEntryLocked(const Interface* i, const IpAddr& address) {
  IbatLocalAddress out;
  out.ip = address;
  out.ca_guid = i->port->ca_guid;
  out.port_guid = be64toh(i->port_guid_be);
  out.port = i->port->port;
  out.pkey = i->local.pkey;
  out.gid = i->local.hw.gid;
  return out;
}

uint8_t IbatMtuCode(uint32_t bytes) {
  uint8_t code = 1;
  while (code < 5 && (128u << code) < bytes) ++code;
  return code;
}

// Loopback: the interface itself, with a PathRecord to its own port made here (no SA).
void SelfPathLocked(const Interface* i, IbatPath* out) {
  out->sgid = out->dgid = i->local.hw.gid;
  out->pkey = i->local.pkey;
  out->remote_qpn = i->local.hw.qpn;
  out->remote_mac = i->local.mac;
  mad::PathRecord record{};
  record.DGID = record.SGID = i->local.hw.gid;
  record.DLID = record.SLID = i->lid;
  record.Reversible = 1;
  record.NumbPath = 1;
  record.P_Key = i->local.pkey;
  record.MTUSelector = 2;  // exactly
  record.MTU = IbatMtuCode(i->ib_mtu);
  out->path_record = record.Pack();
}

void EvictLocked(Interface* i) {
  auto& entries = i->ibat.entries;
  while (entries.size() >= kIbatMaxEntries) {
    auto oldest = std::min_element(
        entries.begin(), entries.end(),
        [](const auto& a, const auto& b) { return a.second.touched < b.second.touched; });
    entries.erase(oldest);
  }
}

IbatEntry& NewEntryLocked(Interface* i, const IbatKey& key) {
  EvictLocked(i);
  IbatEntry& e = i->ibat.entries[key];
  e = IbatEntry{};
  return e;
}

void LearnLocked(Interface* i, const IpAddr& ip, const uint8_t* mac_bytes) {
  Mac mac;
  std::memcpy(mac.data(), mac_bytes, mac.size());
  if ((mac[0] & 1) != 0 || mac == i->local.mac || !IbatRemoteValid(ip)) return;
  const Neighbour* n = i->neighbours.FindByMac(mac);
  if (n == nullptr) return;
  const IbatKey key = IbatKeyOf(ip);
  auto it = i->ibat.entries.find(key);
  IbatEntry& e = it != i->ibat.entries.end() ? it->second : NewEntryLocked(i, key);
  // The peer moved (another port or QP) or dropped 'C': its old connection goes (cm.cc).
  if (e.known && (!(e.hw.gid == n->hw.gid && e.hw.qpn == n->hw.qpn) ||
                  (e.hw.connected() && !n->hw.connected())))
    CmPeerChangedLocked(i, e.hw);
  if (!e.known || !(e.hw.gid == n->hw.gid && e.hw.qpn == n->hw.qpn)) {
    e = IbatEntry{};
    e.known = true;
  }
  e.hw = n->hw;
  e.mac = mac;
  e.touched = ++i->ibat.clock;
}

// The source address of a request for `remote` through `i`: `local` when given, else the
// interface's first address of the family (IPv6: of the same link-local-ness first).
std::array<uint8_t, 16> SourceLocked(const Interface* i, const IpAddr& local,
                                     const IpAddr& remote) {
  if (!IbatUnspecified(local)) return local.bytes;
  const IpAddr* fallback = nullptr;
  for (const IpAddr& a : i->addresses) {
    if (a.v6 != remote.v6) continue;
    if (!a.v6 || IbatLinkLocal6(a) == IbatLinkLocal6(remote)) return a.bytes;
    if (fallback == nullptr) fallback = &a;
  }
  return fallback != nullptr ? fallback->bytes : std::array<uint8_t, 16>{};
}

// An Ethernet ARP request from the interface's MAC and `source` for `target` (RFC 826).
std::vector<uint8_t> ArpRequest(const Mac& mac, const std::array<uint8_t, 16>& source,
                                const IpAddr& target) {
  std::vector<uint8_t> f(14 + 28, 0);
  std::fill_n(f.begin(), 6, 0xFF);
  std::memcpy(f.data() + 6, mac.data(), 6);
  IbatPut16(f.data() + 12, kEthertypeArp);
  uint8_t* a = f.data() + 14;
  IbatPut16(a, 1);  // Ethernet
  IbatPut16(a + 2, kEthertypeIpv4);
  a[4] = 6;
  a[5] = 4;
  IbatPut16(a + 6, 1);  // request
  std::memcpy(a + 8, mac.data(), 6);
  std::memcpy(a + 14, source.data(), 4);
  std::memcpy(a + 24, target.bytes.data(), 4);
  return f;
}

// An ICMPv6 neighbour solicitation (RFC 4861 §4.3) for `target` from `source` to its
// solicited-node group FF02::1:FFxx:xxxx, with our link-layer address unless the source is
// unspecified (§7.2.2).
std::vector<uint8_t> NeighbourSolicitation(const Mac& mac, const std::array<uint8_t, 16>& source,
                                           const IpAddr& target) {
  const bool with_option =
      !std::all_of(source.begin(), source.end(), [](uint8_t b) { return b == 0; });
  const size_t icmp_bytes = 24 + (with_option ? 8 : 0);
  std::vector<uint8_t> f(14 + 40 + icmp_bytes, 0);
  uint8_t group[16] = {0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xFF, 0, 0, 0};
  std::memcpy(group + 13, target.bytes.data() + 13, 3);
  f[0] = 0x33;
  f[1] = 0x33;
  std::memcpy(f.data() + 2, group + 12, 4);
  std::memcpy(f.data() + 6, mac.data(), 6);
  IbatPut16(f.data() + 12, kEthertypeIpv6);
  uint8_t* ip = f.data() + 14;
  ip[0] = 0x60;
  IbatPut16(ip + 4, static_cast<uint16_t>(icmp_bytes));
  ip[6] = 58;   // ICMPv6
  ip[7] = 255;  // hop limit (RFC 4861 §7.1.1)
  std::memcpy(ip + 8, source.data(), 16);
  std::memcpy(ip + 24, group, 16);
  uint8_t* icmp = ip + 40;
  icmp[0] = 135;
  std::memcpy(icmp + 8, target.bytes.data(), 16);
  if (with_option) {
    icmp[24] = 1;  // source link-layer address
    icmp[25] = 1;  // 8 bytes
    std::memcpy(icmp + 26, mac.data(), 6);
  }
  // Checksum over the pseudo-header (RFC 8200 §8.1) and the message.
  uint32_t sum = 0;
  for (size_t k = 8; k < 40; k += 2) sum += IbatBe16(ip + k);
  sum += static_cast<uint32_t>(icmp_bytes) + 58;
  for (size_t k = 0; k < icmp_bytes; k += 2) sum += IbatBe16(icmp + k);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  IbatPut16(icmp + 2, static_cast<uint16_t>(~sum));
  return f;
}

std::vector<uint8_t> RequestFrameLocked(const Interface* i, const IbatKey& key,
                                        const IbatEntry& e) {
  IpAddr target;
  target.v6 = key[0] != 0;
  std::memcpy(target.bytes.data(), key.data() + 1, IbatLength(target));
  return target.v6 ? NeighbourSolicitation(i->local.mac, e.source, target)
                   : ArpRequest(i->local.mac, e.source, target);
}

// Arms the retry timer for the earliest pending entry (under i->lock).
void ArmLocked(Interface* i) {
  if (!i->ibat.attached || i->stopping) return;
  const auto now = std::chrono::steady_clock::now();
  const auto interval = i->config.ibat_retry_interval;
  bool any = false;
  auto due = std::chrono::steady_clock::time_point::max();
  for (const auto& [key, e] : i->ibat.entries) {
    if (e.known || e.timed_out) continue;
    any = true;
    due = std::min(due, e.last_sent + interval);
  }
  if (!any) return;
  const auto wait = std::max<std::chrono::nanoseconds>(due - now, std::chrono::nanoseconds(0));
  kernel::KeSetTimer(&i->ibat.timer, wait, &i->ibat.dpc);
  i->ibat.timer_armed = true;
}

// The retry timer: a pending entry whose interval passed gets its next try, or, after the
// last, is marked timed out (the next IbatResolve says TIMEOUT).
void IbatRetryDpc(kernel::Kdpc*, void* context, void*, void*) {
  auto* i = static_cast<Interface*>(context);
  std::vector<std::vector<uint8_t>> frames;
  {
    kernel::SpinLockGuard guard(i->lock);
    i->ibat.timer_armed = false;
    if (i->stopping || !i->ibat.attached) return;
    const auto now = std::chrono::steady_clock::now();
    for (auto& [key, e] : i->ibat.entries) {
      if (e.known || e.timed_out || now - e.last_sent < i->config.ibat_retry_interval) continue;
      if (e.tries >= kIbatTries) {
        e.timed_out = true;
        continue;
      }
      ++e.tries;
      e.last_sent = now;
      frames.push_back(RequestFrameLocked(i, key, e));
    }
    ArmLocked(i);
  }
  // IbatDetach flushes this DPC before the interface goes.
  for (const auto& frame : frames) Transmit(i, frame);
}

// The interface a resolution goes through (under driver->ibat_lock), or null.
Interface* ChooseLocked(Driver* driver, const IpAddr& local, const IpAddr& remote,
                        bool* local_missing) {
  *local_missing = false;
  if (!IbatUnspecified(local)) {
    for (Interface* i : driver->ibat_interfaces) {
      kernel::SpinLockGuard guard(i->lock);
      if (IbatLiveLocked(i) && HoldsLocked(i, local)) return i;
    }
    *local_missing = true;
    return nullptr;
  }
  const IbatKey key = IbatKeyOf(remote);
  Interface* with_family = nullptr;
  Interface* first = nullptr;
  for (Interface* i : driver->ibat_interfaces) {
    kernel::SpinLockGuard guard(i->lock);
    if (!IbatLiveLocked(i) || !i->carrier) continue;
    auto it = i->ibat.entries.find(key);
    if (it != i->ibat.entries.end() && it->second.known) return i;  // its link has the remote
    if (with_family == nullptr && std::any_of(i->addresses.begin(), i->addresses.end(),
                                              [&](const IpAddr& a) { return a.v6 == remote.v6; }))
      with_family = i;
    if (first == nullptr) first = i;
  }
  return with_family != nullptr ? with_family : first;
}

}  // namespace

void IbatAttach(Interface* i) {
  kernel::KeInitializeDpc(&i->ibat.dpc, i->node, &IbatRetryDpc, i);
  kernel::KeInitializeTimer(&i->ibat.timer, i->node);
  {
    kernel::SpinLockGuard guard(i->lock);
    i->ibat.attached = true;
  }
  kernel::SpinLockGuard guard(i->driver->ibat_lock);
  i->driver->ibat_interfaces.push_back(i);
}

void IbatDetach(Interface* i) {
  {
    kernel::SpinLockGuard guard(i->driver->ibat_lock);
    auto& list = i->driver->ibat_interfaces;
    list.erase(std::remove(list.begin(), list.end(), i), list.end());
  }
  bool was_attached;
  {
    kernel::SpinLockGuard guard(i->lock);
    was_attached = i->ibat.attached;
    i->ibat.attached = false;
    i->ibat.entries.clear();
  }
  if (!was_attached) return;
  kernel::KeCancelTimer(&i->ibat.timer);
  kernel::KeFlushQueuedDpcs(i->node);
}

void IbatForgetLocked(Interface* i) { i->ibat.entries.clear(); }

void IbatLearnLocked(Interface* i, std::span<const uint8_t> f, bool from_host) {
  if (f.size() < kEthHeaderBytes) return;
  const uint16_t type = IbatBe16(f.data() + 12);
  if (type == kEthertypeArp) {
    // Ethernet/IPv4 ARP: op 20, sha 22, spa 28, tha 32, tpa 38.
    if (f.size() < 42 || IbatBe16(f.data() + 14) != 1 ||
        IbatBe16(f.data() + 16) != kEthertypeIpv4 || f[18] != 6 || f[19] != 4)
      return;
    IpAddr ip;
    if (!from_host) {
      std::memcpy(ip.bytes.data(), f.data() + 28, 4);
      LearnLocked(i, ip, f.data() + 22);
    } else if (IbatBe16(f.data() + 20) == 2) {  // the host answers a requester
      std::memcpy(ip.bytes.data(), f.data() + 38, 4);
      LearnLocked(i, ip, f.data() + 32);
    }
    return;
  }
  // ND without extension headers (RFC 4861: hop limit 255): NS (135) and NA (136).
  if (type != kEthertypeIpv6 || from_host || f.size() < 14 + 40 + 24 || f[20] != 58 || f[21] != 255)
    return;
  const size_t end = std::min(f.size(), size_t{54} + IbatBe16(f.data() + 18));
  const uint8_t* icmp = f.data() + 54;
  if (end < 54 + 24 || (icmp[0] != 135 && icmp[0] != 136)) return;
  IpAddr ip;
  ip.v6 = true;
  std::memcpy(ip.bytes.data(), icmp[0] == 135 ? f.data() + 22 : icmp + 8, 16);
  const uint8_t wanted = icmp[0] == 135 ? 1 : 2;  // source / target link-layer address
  for (size_t at = 54 + 24; at + 2 <= end;) {
    const size_t length = size_t{f[at + 1]} * 8;
    if (length == 0 || at + length > end) return;
    if (f[at] == wanted && length == 8) return LearnLocked(i, ip, f.data() + at + 2);
    at += length;
  }
}

std::vector<IbatLocalAddress> IbatGetIpList(Driver* driver, uint64_t port_guid) {
  std::vector<IbatLocalAddress> list;
  if (driver == nullptr) return list;
  kernel::SpinLockGuard outer(driver->ibat_lock);
  for (Interface* i : driver->ibat_interfaces) {
    kernel::SpinLockGuard guard(i->lock);
    if (!IbatLiveLocked(i)) continue;
    if (port_guid != 0 && be64toh(i->port_guid_be) != port_guid) continue;
    for (const IpAddr& a : i->addresses) list.push_back(LocalEntryLocked(i, a));
  }
  return list;
}

Status IbatIpToPort(Driver* driver, const IpAddr& local, IbatLocalAddress* out) {
  if (driver == nullptr || out == nullptr) return Status::INVALID_PARAMETER;
  kernel::SpinLockGuard outer(driver->ibat_lock);
  for (Interface* i : driver->ibat_interfaces) {
    kernel::SpinLockGuard guard(i->lock);
    if (!IbatLiveLocked(i)) continue;
    for (const IpAddr& a : i->addresses) {
      if (!IbatSame(a, local)) continue;
      *out = LocalEntryLocked(i, a);
      return Status::SUCCESS;
    }
  }
  return Status::NOT_FOUND;
}

Status IbatResolve(Driver* driver, const IpAddr& local, const IpAddr& remote, IbatPath* out) {
  if (driver == nullptr || out == nullptr || !IbatRemoteValid(remote)) {
    return Status::INVALID_PARAMETER;
  }
  if (!IbatUnspecified(local) && local.v6 != remote.v6) return Status::INVALID_PARAMETER;
  Interface* i = nullptr;
  std::vector<uint8_t> request;  // an ARP/NS frame to send
  bool resolve = false;          // start the path query of `gid`
  Gid gid{};
  {
    kernel::SpinLockGuard outer(driver->ibat_lock);
    bool local_missing = false;
    i = ChooseLocked(driver, local, remote, &local_missing);
    if (local_missing) return Status::NOT_FOUND;
    // Loopback: an address of one of our interfaces.
    for (Interface* self : driver->ibat_interfaces) {
      kernel::SpinLockGuard guard(self->lock);
      if (IbatLiveLocked(self) && HoldsLocked(self, remote)) {
        SelfPathLocked(self, out);
        return Status::SUCCESS;
      }
    }
    if (i == nullptr) return Status::NOT_FOUND;
    kernel::SpinLockGuard guard(i->lock);
    if (!IbatLiveLocked(i) || !i->carrier || !i->ibat.attached) return Status::NOT_FOUND;
    const IbatKey key = IbatKeyOf(remote);
    auto it = i->ibat.entries.find(key);
    if (it == i->ibat.entries.end()) {
      IbatEntry& e = NewEntryLocked(i, key);
      e.source = SourceLocked(i, local, remote);
      e.tries = 1;
      e.last_sent = std::chrono::steady_clock::now();
      e.touched = ++i->ibat.clock;
      request = RequestFrameLocked(i, key, e);
      if (!i->ibat.timer_armed) ArmLocked(i);
    } else if (!it->second.known) {
      if (!it->second.timed_out) return Status::PENDING;
      i->ibat.entries.erase(it);  // the next call starts over
      return Status::TIMEOUT;
    } else {
      IbatEntry& e = it->second;
      e.touched = ++i->ibat.clock;
      auto path = i->paths.find(e.hw.gid);
      if (path != i->paths.end() && path->second.state == Path::State::kReady) {
        out->sgid = i->local.hw.gid;
        out->dgid = e.hw.gid;
        out->pkey = i->local.pkey;
        out->remote_qpn = e.hw.qpn;
        out->remote_mac = e.mac;
        out->path_record = path->second.record;
        return Status::SUCCESS;
      }
      if (path != i->paths.end() && path->second.state == Path::State::kResolving) {
        e.path_asked = true;
        return Status::PENDING;
      }
      if (e.path_asked) {  // asked, and the resolution failed (the path went)
        e.path_asked = false;
        return Status::TIMEOUT;
      }
      i->paths[e.hw.gid].state = Path::State::kResolving;
      e.path_asked = true;
      resolve = true;
      gid = e.hw.gid;
    }
    i->Hold();  // released below; the interface's shutdown waits for it
  }
  if (!request.empty()) Transmit(i, request);
  if (resolve) StartResolve(i, gid);
  i->Release();
  return Status::PENDING;
}

}  // namespace softib::ipoib
