// MCMemberRecord (15.2.5.17): Set creates a group (MGID 0: the SA picks one) or joins a port
// to it, Delete leaves (clears JoinState bits; the group goes with its last member), Get and
// GetTable read one record per member. The group's MTU and rate are chosen at creation from
// the selectors and the creating port's capabilities; a later joiner must support them.
// MLIDs are assigned from 0xC000. A port joins only on a P_Key its P_Key table holds
// (IBA 15.2.5.17.1: the partition is the group's). The SM turns the members into spanning
// trees and MFT blocks (mcast_routing.cc) whenever mcast_changes() moves.
#include <algorithm>

#include "sa_internal.h"
#include "softib/sm/partitions.h"

namespace softib::sm {
namespace {

// The port's P_Key table as the SM read or set it; not read: the default partition alone.
std::vector<uint16_t> PKeysOf(const SmPort& port) {
  return port.pkeys.empty() ? std::vector<uint16_t>{0xFFFF} : port.pkeys;
}

bool ZeroGid(const Gid& g) {
  return std::all_of(g.begin(), g.end(), [](uint8_t b) { return b == 0; });
}

// The largest value in [1, cap] that `selector` accepts relative to `wanted`; 0 if none.
unsigned Choose(uint8_t selector, unsigned wanted, unsigned cap) {
  for (unsigned v = cap; v >= 1; --v)
    if (sa::SelectorAccepts(selector, v, wanted)) return v;
  return 0;
}

}  // namespace

SaResult SubnetAdmin::McMembers(const SaRequest& r) {
  SaResult out;
  out.record_size = mad::MCMemberRecord::kSize;
  const auto& desc = mad::MCMemberRecord::Desc();
  auto bit = [&](std::string_view name) { return sa::ComponentBit(desc, name); };
  const uint64_t mask = r.component_mask;
  mad::MCMemberRecord q;
  q.Unpack(r.data.first(mad::MCMemberRecord::kSize));

  auto member_record = [](const McGroup& g, const Gid& port, uint8_t join, bool proxy) {
    mad::MCMemberRecord rec = g.params;
    rec.PortGID = port;
    rec.JoinState = join;
    rec.ProxyJoin = proxy;
    return rec;
  };

  if (r.method == kSaMethodGet || r.method == kSaMethodGetTable) {
    for (const auto& [mgid, g] : groups_)
      for (const auto& [port, join] : g.members) {
        const auto bytes = member_record(g, port, join, g.proxy.at(port)).Pack();
        if (sa::ComponentsMatch(desc, mask, r.data, bytes)) out.Add(bytes);
      }
    return out;
  }

  const uint64_t need = bit("MGID") | bit("PortGID") | bit("JoinState");
  if ((mask & need) != need || q.JoinState == 0) {
    out.status = kSaStatusInsufficientComponents;
    return out;
  }
  const auto port = PortByGid(q.PortGID);
  if (!port) {
    out.status = kSaStatusInvalidGid;
    return out;
  }
  const SmPort& sp = subnet_->node(port->node).ports[port->port];
  const unsigned port_mtu = sp.info.MTUCap ? sp.info.MTUCap : 4;
  const uint8_t port_rate_code =
      sa::RateCode(sp.info.LinkWidthActive, sp.info.LinkSpeedActive, sp.info.LinkSpeedExtActive);
  const uint8_t port_rate = port_rate_code ? port_rate_code : 3;

  if (r.method == kSaMethodDelete) {
    auto g = groups_.find(q.MGID);
    if (g == groups_.end() || !g->second.members.count(q.PortGID)) {
      out.status = kSaStatusReqInvalid;
      return out;
    }
    uint8_t& join = g->second.members[q.PortGID];
    const bool proxy = g->second.proxy[q.PortGID];
    join = static_cast<uint8_t>(join & ~q.JoinState);
    out.Add(member_record(g->second, q.PortGID, join, proxy).Pack());
    if (join == 0) {
      g->second.members.erase(q.PortGID);
      g->second.proxy.erase(q.PortGID);
      ++mcast_changes_;
    }
    if (g->second.members.empty() && !g->second.permanent) groups_.erase(g);
    return out;
  }

  // Set: join, creating the group when its MGID is new (or 0).
  auto g = ZeroGid(q.MGID) ? groups_.end() : groups_.find(q.MGID);
  if (g == groups_.end()) {
    const uint64_t create =
        bit("Q_Key") | bit("P_Key") | bit("SL") | bit("FlowLabel") | bit("TClass");
    if ((mask & create) != create) {
      out.status = kSaStatusInsufficientComponents;
      return out;
    }
    if (!HoldsPKey(PKeysOf(sp), q.P_Key)) {
      out.status = kSaStatusReqInvalid;  // the creator is not in that partition
      return out;
    }
    McGroup group;
    group.params = q;
    group.params.PortGID = {};
    group.params.JoinState = 0;
    group.params.ProxyJoin = 0;
    if (ZeroGid(q.MGID)) {
      // SA-assigned: ff12:a01b (link-local, signature), then the MLID-based unique part.
      group.params.MGID = MakeGid(0xff12a01bffff0000ull, 0x5a00000000000000ull | next_mlid_);
    }
    const unsigned mtu = (mask & bit("MTU")) ? Choose(q.MTUSelector, q.MTU, port_mtu) : port_mtu;
    unsigned rate_tenths = sa::RateTenthsGbps(port_rate);
    uint8_t rate = port_rate;
    if (mask & bit("Rate")) {
      rate = 0;
      for (uint8_t code = 2; code <= 18; ++code) {
        const unsigned t = sa::RateTenthsGbps(code);
        if (t == 0 || t > sa::RateTenthsGbps(port_rate)) continue;
        if (!sa::SelectorAccepts((mask & bit("RateSelector")) ? q.RateSelector : 2, t,
                                 sa::RateTenthsGbps(q.Rate)))
          continue;
        if (rate == 0 || t > rate_tenths) rate = code, rate_tenths = t;
      }
    }
    if (mtu == 0 || rate == 0) {
      out.status = kSaStatusReqInvalid;  // the creator cannot carry what it asked for
      return out;
    }
    group.params.MTUSelector = 2;
    group.params.MTU = static_cast<uint8_t>(mtu);
    group.params.RateSelector = 2;
    group.params.Rate = rate;
    group.params.PacketLifeTimeSelector = 2;
    if (!(mask & bit("PacketLifeTime"))) group.params.PacketLifeTime = 18;
    group.params.MLID = next_mlid_++;
    g = groups_.emplace(group.params.MGID, group).first;
  } else {
    const McGroup& grp = g->second;
    // A joiner's fixed components must agree with the group, its selectors must accept the
    // group's MTU and rate, and its port must carry them.
    bool ok = true;
    if ((mask & bit("Q_Key")) && q.Q_Key != grp.params.Q_Key) ok = false;
    if ((mask & bit("P_Key")) && q.P_Key != grp.params.P_Key) ok = false;
    if ((mask & bit("MTU")) && !sa::SelectorAccepts((mask & bit("MTUSelector")) ? q.MTUSelector : 2,
                                                    grp.params.MTU, q.MTU))
      ok = false;
    if ((mask & bit("Rate")) &&
        !sa::SelectorAccepts((mask & bit("RateSelector")) ? q.RateSelector : 2,
                             sa::RateTenthsGbps(grp.params.Rate), sa::RateTenthsGbps(q.Rate)))
      ok = false;
    if (!HoldsPKey(PKeysOf(sp), grp.params.P_Key)) ok = false;  // not in the partition
    if (grp.params.MTU > port_mtu ||
        sa::RateTenthsGbps(grp.params.Rate) > sa::RateTenthsGbps(port_rate))
      ok = false;
    if (!ok) {
      out.status = kSaStatusReqInvalid;
      return out;
    }
  }
  McGroup& grp = g->second;
  if (!grp.members.count(q.PortGID)) ++mcast_changes_;
  grp.members[q.PortGID] |= q.JoinState;
  grp.proxy[q.PortGID] = (mask & bit("ProxyJoin")) && q.ProxyJoin;
  out.Add(member_record(grp, q.PortGID, grp.members[q.PortGID], grp.proxy[q.PortGID]).Pack());
  return out;
}

uint16_t SubnetAdmin::AddGroup(const mad::MCMemberRecord& params) {
  McGroup group;
  group.params = params;
  group.params.PortGID = {};
  group.params.JoinState = 0;
  group.params.ProxyJoin = 0;
  if (group.params.MLID == 0) group.params.MLID = next_mlid_++;
  group.permanent = true;
  const uint16_t mlid = group.params.MLID;
  groups_.insert_or_assign(group.params.MGID, std::move(group));
  ++mcast_changes_;
  return mlid;
}

std::map<uint16_t, std::vector<EndPort>> SubnetAdmin::McastMembers() const {
  std::map<uint16_t, std::vector<EndPort>> out;
  for (const auto& [mgid, g] : groups_) {
    std::vector<EndPort>& ports = out[g.params.MLID];
    for (const auto& member : g.members)
      if (const auto port = PortByGid(member.first)) ports.push_back(*port);
  }
  return out;
}

}  // namespace softib::sm
