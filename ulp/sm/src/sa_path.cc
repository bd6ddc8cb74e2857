// PathRecord (15.2.5.16) and MultiPathRecord (15.2.5.20): paths are walked through the LFTs
// the SM computed, from the source end port to the destination LID; the path's MTU and rate
// are the smallest of its links, and it is reversible when the walk back also arrives. With
// LMC > 0 every (SLID, DLID) pair of the two blocks is a path; the "diagonal" pairs come
// first (SLID base+i with DLID base+i), since LMC routing spreads those over distinct links.
#include <algorithm>
#include <optional>

#include "sa_internal.h"
#include "softib/sm/partitions.h"

namespace softib::sm::sa {
namespace {

constexpr uint8_t kPacketLifeTime = 18;  // OpenSM's default subnet packet lifetime
constexpr unsigned kMaxHops = 64;

struct Walk {
  bool ok = false;
  unsigned links = 0;
  uint8_t mtu = 0xFF;
  unsigned rate_tenths = ~0u;
  uint8_t rate = 0;
};

void AddLink(const SmPort& a, const SmPort* b, Walk& w) {
  uint8_t mtu = a.info.MTUCap;
  if (b && b->known && b->info.MTUCap) mtu = std::min(mtu, b->info.MTUCap);
  if (mtu) w.mtu = std::min(w.mtu, mtu);
  const uint8_t rate =
      RateCode(a.info.LinkWidthActive, a.info.LinkSpeedActive, a.info.LinkSpeedExtActive);
  const unsigned tenths = RateTenthsGbps(rate);
  if (rate && tenths < w.rate_tenths) {
    w.rate_tenths = tenths;
    w.rate = rate;
  }
  ++w.links;
}

Walk WalkPath(const Subnet& s, EndPort src, uint16_t dlid) {
  Walk w;
  const auto owner = s.Owner(dlid);
  if (!owner) return w;
  NodeId cur = src.node;
  uint8_t in_port = src.port;
  if (!s.node(cur).is_switch()) {
    if (owner->node == cur && owner->port == src.port) {
      AddLink(s.node(cur).ports[src.port], nullptr, w);  // loopback: the port's own limits
      w.links = 0;
      w.ok = true;
      return w;
    }
    const SmPort& out = s.node(cur).ports[src.port];
    if (!out.linked()) return w;
    AddLink(out, &s.node(out.peer).ports[out.peer_port], w);
    cur = out.peer;
    in_port = out.peer_port;
  }
  for (unsigned hop = 0; hop < kMaxHops; ++hop) {
    const SmNode& node = s.node(cur);
    if (!node.is_switch()) {
      w.ok = owner->node == cur && owner->port == in_port;
      return w;
    }
    if (owner->node == cur) {
      if (w.links == 0) AddLink(node.ports[0], nullptr, w), w.links = 0;
      w.ok = true;
      return w;
    }
    if (dlid >= node.lft.size() || node.lft[dlid] == kNoPort || node.lft[dlid] > node.num_ports)
      return w;
    const SmPort& out = node.ports[node.lft[dlid]];
    if (!out.linked()) return w;
    AddLink(out, &s.node(out.peer).ports[out.peer_port], w);
    cur = out.peer;
    in_port = out.peer_port;
  }
  return w;
}

struct Fields {
  uint64_t sgid, dgid, slid, dlid, reversible, numb_path, pkey, sl, mtu_sel, mtu, rate_sel, rate,
      life_sel, life, flow, tclass, hop_limit, sid_msb, sid_lsb;
};

const Fields& Bits() {
  static const Fields f = [] {
    const auto& d = mad::PathRecord::Desc();
    return Fields{ComponentBit(d, "SGID"),
                  ComponentBit(d, "DGID"),
                  ComponentBit(d, "SLID"),
                  ComponentBit(d, "DLID"),
                  ComponentBit(d, "Reversible"),
                  ComponentBit(d, "NumbPath"),
                  ComponentBit(d, "P_Key"),
                  ComponentBit(d, "SL"),
                  ComponentBit(d, "MTUSelector"),
                  ComponentBit(d, "MTU"),
                  ComponentBit(d, "RateSelector"),
                  ComponentBit(d, "Rate"),
                  ComponentBit(d, "PacketLifeTimeSelector"),
                  ComponentBit(d, "PacketLifeTime"),
                  ComponentBit(d, "FlowLabel"),
                  ComponentBit(d, "TClass"),
                  ComponentBit(d, "HopLimit"),
                  ComponentBit(d, "ServiceID8MSB"),
                  ComponentBit(d, "ServiceID56LSB")};
  }();
  return f;
}

// The LIDs of an end port's block, or just `only` when the request names one.
std::vector<uint16_t> Lids(const Subnet& s, EndPort e, std::optional<uint16_t> only) {
  if (only) return {*only};
  const SmPort& p = s.node(e.node).ports[e.port];
  std::vector<uint16_t> out;
  if (p.lid == 0) return out;
  for (unsigned i = 0; i < (1u << p.lmc); ++i) out.push_back(static_cast<uint16_t>(p.lid + i));
  return out;
}

// Whether the path meets the request's selectors and fixed values; fills what the request
// chose (SL, P_Key, flow label, traffic class, hop limit, service id). `pkey_ok`: both end
// ports hold the request's P_Key (when it names one).
bool Constrain(const mad::PathRecord& q, uint64_t mask, mad::PathRecord& pr, bool pkey_ok) {
  const Fields& b = Bits();
  if (mask & b.pkey) {
    if (!pkey_ok) return false;
    pr.P_Key = q.P_Key;
  }
  if (mask & b.sl) pr.SL = q.SL;
  if (mask & b.flow) pr.FlowLabel = q.FlowLabel;
  if (mask & b.tclass) pr.TClass = q.TClass;
  if (mask & b.hop_limit) pr.HopLimit = q.HopLimit;
  if (mask & b.sid_msb) pr.ServiceID8MSB = q.ServiceID8MSB;
  if (mask & b.sid_lsb) pr.ServiceID56LSB = q.ServiceID56LSB;
  if ((mask & b.mtu) && (mask & b.mtu_sel) && !SelectorAccepts(q.MTUSelector, pr.MTU, q.MTU))
    return false;
  if ((mask & b.mtu) && !(mask & b.mtu_sel) && pr.MTU != q.MTU) return false;
  if ((mask & b.rate) && (mask & b.rate_sel) &&
      !SelectorAccepts(q.RateSelector, RateTenthsGbps(pr.Rate), RateTenthsGbps(q.Rate)))
    return false;
  if ((mask & b.rate) && !(mask & b.rate_sel) && pr.Rate != q.Rate) return false;
  if ((mask & b.life) && (mask & b.life_sel) &&
      !SelectorAccepts(q.PacketLifeTimeSelector, pr.PacketLifeTime, q.PacketLifeTime))
    return false;
  if ((mask & b.reversible) && q.Reversible && !pr.Reversible) return false;
  return true;
}

// Paths from `src` to `dst` (each end port; optionally one named LID), at most `max`.
void PathsBetween(const SubnetAdmin& sa, EndPort src, std::optional<uint16_t> slid, EndPort dst,
                  std::optional<uint16_t> dlid, const mad::PathRecord& q, uint64_t mask,
                  unsigned max, SaResult& out) {
  const Subnet& s = *sa.subnet();
  const auto slids = Lids(s, src, slid);
  const auto dlids = Lids(s, dst, dlid);
  if (slids.empty() || dlids.empty()) return;
  std::vector<std::pair<uint16_t, uint16_t>> pairs;
  const std::size_t diag = std::max(slids.size(), dlids.size());
  for (std::size_t i = 0; i < diag; ++i)
    pairs.emplace_back(slids[i % slids.size()], dlids[i % dlids.size()]);
  for (uint16_t sl : slids)
    for (uint16_t dl : dlids)
      if (std::find(pairs.begin(), pairs.end(), std::make_pair(sl, dl)) == pairs.end())
        pairs.emplace_back(sl, dl);
  // A P_Key the request names: both ends must hold it (a port whose table was never read
  // holds the default partition only).
  bool pkey_ok = true;
  if (mask & Bits().pkey) {
    const auto keys = [&](EndPort e) {
      const SmPort& p = s.node(e.node).ports[e.port];
      return p.pkeys.empty() ? std::vector<uint16_t>{0xFFFF} : p.pkeys;
    };
    pkey_ok =
        sm::HoldsPKey(keys(src), q.P_Key & 0x7FFF) && sm::HoldsPKey(keys(dst), q.P_Key & 0x7FFF);
  }
  unsigned added = 0;
  for (auto [sl, dl] : pairs) {
    if (added >= max) break;
    const Walk there = WalkPath(s, src, dl);
    if (!there.ok) continue;
    const Walk back = WalkPath(s, dst, sl);
    mad::PathRecord pr;
    pr.SGID = sa.GidOf(src);
    pr.DGID = sa.GidOf(dst);
    pr.SLID = sl;
    pr.DLID = dl;
    pr.Reversible = back.ok;
    pr.NumbPath = 0;
    pr.P_Key = 0xFFFF;
    pr.MTUSelector = 2;
    pr.MTU = there.mtu == 0xFF ? 4 : there.mtu;
    pr.RateSelector = 2;
    pr.Rate = there.rate ? there.rate : 3;
    pr.PacketLifeTimeSelector = 2;
    pr.PacketLifeTime = kPacketLifeTime;
    if (!Constrain(q, mask, pr, pkey_ok)) continue;
    out.Add(pr.Pack());
    ++added;
  }
}

}  // namespace

SaResult PathRecords(const SubnetAdmin& sa, const SaRequest& r) {
  SaResult out;
  out.record_size = mad::PathRecord::kSize;
  const Subnet& s = *sa.subnet();
  const Fields& b = Bits();
  mad::PathRecord q;
  q.Unpack(r.data.first(mad::PathRecord::kSize));
  const uint64_t mask = r.component_mask;
  // Neither end named: every pair of end ports (OpenSM's "world" query), for GetTable only.
  if (!(mask & (b.sgid | b.slid)) && !(mask & (b.dgid | b.dlid)) && r.method != kSaMethodGetTable) {
    out.status = kSaStatusInsufficientComponents;
    return out;
  }
  if ((mask & b.sid_msb) != 0 && (mask & b.sid_lsb) == 0) {
    out.status = kSaStatusInsufficientComponents;  // ServiceID is one value in two fields
    return out;
  }

  // One side: the port its GID names, the port owning its LID, or every end port.
  auto side = [&](uint64_t gid_bit, uint64_t lid_bit, const Gid& gid, uint16_t lid,
                  std::vector<EndPort>& ports, std::optional<uint16_t>& only) -> uint16_t {
    if (mask & gid_bit) {
      auto p = sa.PortByGid(gid);
      if (!p) return kSaStatusInvalidGid;
      ports.push_back(*p);
    }
    if (mask & lid_bit) {
      auto p = s.Owner(lid);
      if (!p) return kSaStatusNoRecords;
      if (!ports.empty() && (ports[0].node != p->node || ports[0].port != p->port))
        return kSaStatusNoRecords;  // a GID and a LID of different ports
      if (ports.empty()) ports.push_back(*p);
      only = lid;
    }
    if (!(mask & (gid_bit | lid_bit))) ports = s.EndPorts();
    return kSaStatusOk;
  };
  std::vector<EndPort> srcs, dsts;
  std::optional<uint16_t> slid, dlid;
  uint16_t st = side(b.sgid, b.slid, q.SGID, q.SLID, srcs, slid);
  if (st == kSaStatusOk) st = side(b.dgid, b.dlid, q.DGID, q.DLID, dsts, dlid);
  if (st == kSaStatusNoRecords) return out;  // GetTable: empty; Get: ERR_NO_RECORDS
  if (st != kSaStatusOk) {
    out.status = st;
    return out;
  }
  unsigned max = (mask & b.numb_path) && q.NumbPath ? q.NumbPath : 0xFFFF;
  if (r.method == kSaMethodGet) max = 1;
  for (const EndPort& src : srcs)
    for (const EndPort& dst : dsts) {
      PathsBetween(sa, src, slid, dst, dlid, q, mask, max, out);
      if (r.method == kSaMethodGet && !out.records.empty()) return out;
      if (out.records.size() >= r.max_records) return out;
    }
  return out;
}

SaResult MultiPathRecords(const SubnetAdmin& sa, const SaRequest& r) {
  SaResult out;
  out.record_size = mad::PathRecord::kSize;
  mad::MultiPathRecord q;
  q.Unpack(r.data.first(mad::MultiPathRecord::kSize));
  const std::size_t gids = std::size_t{q.SGIDCount} + q.DGIDCount;
  if (q.SGIDCount == 0 || q.DGIDCount == 0 || gids * 16 > q.SDGID.size()) {
    // More GIDs than one MAD carries would need a multi-segment request.
    out.status =
        gids * 16 > q.SDGID.size() ? kSaStatusNoResources : kSaStatusInsufficientComponents;
    return out;
  }
  auto gid_at = [&](std::size_t i) {
    Gid g{};
    std::copy_n(q.SDGID.begin() + static_cast<std::ptrdiff_t>(i * 16), 16, g.begin());
    return g;
  };
  // The fields a MultiPathRecord shares with PathRecord constrain the paths the same way.
  mad::PathRecord pq;
  pq.P_Key = q.P_Key;
  pq.SL = q.SL;
  pq.MTUSelector = q.MTUSelector;
  pq.MTU = q.MTU;
  pq.RateSelector = q.RateSelector;
  pq.Rate = q.Rate;
  pq.PacketLifeTimeSelector = q.PacketLifeTimeSelector;
  pq.PacketLifeTime = q.PacketLifeTime;
  pq.Reversible = q.Reversible;
  const auto& md = mad::MultiPathRecord::Desc();
  const Fields& b = Bits();
  uint64_t mask = 0;
  auto map = [&](std::string_view name, uint64_t bit) {
    if (r.component_mask & ComponentBit(md, name)) mask |= bit;
  };
  map("P_Key", b.pkey), map("SL", b.sl), map("MTUSelector", b.mtu_sel), map("MTU", b.mtu);
  map("RateSelector", b.rate_sel), map("Rate", b.rate), map("Reversible", b.reversible);
  map("PacketLifeTimeSelector", b.life_sel), map("PacketLifeTime", b.life);
  const unsigned max =
      (r.component_mask & ComponentBit(md, "NumbPath")) && q.NumbPath ? q.NumbPath : 0xFFFF;
  for (std::size_t i = 0; i < q.SGIDCount; ++i) {
    auto src = sa.PortByGid(gid_at(i));
    if (!src) {
      out.status = kSaStatusInvalidGid;
      return out;
    }
    for (std::size_t j = 0; j < q.DGIDCount; ++j) {
      auto dst = sa.PortByGid(gid_at(q.SGIDCount + j));
      if (!dst) {
        out.status = kSaStatusInvalidGid;
        return out;
      }
      PathsBetween(sa, *src, std::nullopt, *dst, std::nullopt, pq, mask, max, out);
      if (out.records.size() >= r.max_records) return out;
    }
  }
  return out;
}

}  // namespace softib::sm::sa
