// InformInfo (13.4.8.3) subscriptions, InformInfoRecord (15.2.5.12) reads, and the Reports
// the SA sends its subscribers: traps 64 (GID in service) and 65 (GID out of service) when a
// sweep finds end ports appear or disappear (13.4.8.2, 14.2.5.1 Trap64_65Details), and the
// traps the SM receives from SMAs (128, 144, 256-259), forwarded with IssuerGID added.
#include <algorithm>
#include <set>

#include "sa_internal.h"
#include "softib/smp/traps.h"

namespace softib::sm {
namespace {

using sa::kQKeyGsi;
using smp::kProducerClassManager;
using smp::kTrapGidInService;
using smp::kTrapGidOutOfService;

bool SameSubscription(const mad::InformInfo& a, const mad::InformInfo& b) {
  return a.GID == b.GID && a.LIDRangeBegin == b.LIDRangeBegin && a.LIDRangeEnd == b.LIDRangeEnd &&
         a.IsGeneric == b.IsGeneric && a.Type == b.Type &&
         a.TrapNumberDeviceID == b.TrapNumberDeviceID && a.QPN == b.QPN &&
         a.ProducerTypeVendorID == b.ProducerTypeVendorID;
}

}  // namespace

SaResult SubnetAdmin::Inform(const SaRequest& r) {
  SaResult out;
  out.record_size = mad::InformInfo::kSize;
  mad::InformInfo info;
  info.Unpack(r.data.first(mad::InformInfo::kSize));
  const auto requester = subnet_->Owner(r.requester_lid);
  if (!requester || info.Subscribe > 1) {
    out.status = kSaStatusReqInvalid;
    return out;
  }
  const Gid subscriber = GidOf(*requester);
  auto same = [&](const Subscription& s) {
    return s.subscriber == subscriber && SameSubscription(s.info, info);
  };
  if (info.Subscribe == 1) {
    if (std::none_of(subscriptions_.begin(), subscriptions_.end(), same))
      subscriptions_.push_back({info, subscriber, r.requester_lid, info.QPN});
  } else {
    const auto before = subscriptions_.size();
    std::erase_if(subscriptions_, same);
    if (subscriptions_.size() == before) {
      out.status = kSaStatusReqInvalid;  // unsubscribing from nothing
      return out;
    }
  }
  out.Add(info.Pack());
  return out;
}

SaResult SubnetAdmin::InformRecords(const SaRequest& r) {
  SaResult out;
  out.record_size = mad::InformInfoRecord::kSize;
  uint16_t index = 0;
  for (const Subscription& s : subscriptions_) {
    mad::InformInfoRecord rec;
    rec.SubscriberGID = s.subscriber;
    rec.Enum = index++;
    rec.GID = s.info.GID;
    rec.LIDRangeBegin = s.info.LIDRangeBegin;
    rec.LIDRangeEnd = s.info.LIDRangeEnd;
    rec.IsGeneric = s.info.IsGeneric;
    rec.Subscribe = s.info.Subscribe;
    rec.Type = s.info.Type;
    rec.TrapNumberDeviceID = s.info.TrapNumberDeviceID;
    rec.QPN = s.info.QPN;
    rec.RespTimeValue = s.info.RespTimeValue;
    rec.ProducerTypeVendorID = s.info.ProducerTypeVendorID;
    sa::AddIfMatches(r, rec, out);
  }
  return out;
}

std::vector<SaOutgoing> SubnetAdmin::NoticesForChanges(const Subnet& before) {
  std::vector<SaOutgoing> out;
  if (!subnet_) return out;
  auto gids_of = [this](const Subnet& s) {
    std::map<Gid, uint16_t> gids;  // GID -> LID
    for (const EndPort& e : s.EndPorts()) {
      const SmNode& n = s.node(e.node);
      const SmPort& p = n.ports[e.port];
      const uint64_t guid = n.is_switch() ? n.guid : p.guid;
      gids[MakeGid(PrefixOf(p), guid)] = p.lid;
    }
    return gids;
  };
  const auto old_gids = gids_of(before);
  const auto new_gids = gids_of(*subnet_);
  std::vector<std::tuple<uint16_t, Gid, uint16_t>> events;  // trap, GID, LID
  for (const auto& [gid, lid] : new_gids)
    if (!old_gids.count(gid)) events.emplace_back(kTrapGidInService, gid, lid);
  for (const auto& [gid, lid] : old_gids)
    if (!new_gids.count(gid)) events.emplace_back(kTrapGidOutOfService, gid, lid);

  const EndPort sm{subnet_->sm_node, subnet_->sm_port};
  const uint16_t sm_lid = subnet_->sm_node == kNoNode ? 0 : LidOf(sm);
  for (const auto& [trap, gid, lid] : events) {
    mad::Notice notice;
    notice.IsGeneric = 1;
    notice.Type = smp::kNoticeInformational;
    notice.ProducerTypeVendorID = kProducerClassManager;
    notice.TrapNumberDeviceID = trap;
    notice.IssuerLID = sm_lid;
    mad::Trap64_65Details details;
    details.GIDADDR = gid;
    const auto d = details.Pack();
    std::copy(d.begin(), d.end(), notice.DataDetails.begin());
    if (subnet_->sm_node != kNoNode) notice.IssuerGID = GidOf(sm);
    // Traps 64/65 are about the port they name, not about the SM that issues them.
    for (SaOutgoing& o : ReportsFor(notice, gid, lid)) out.push_back(std::move(o));
  }
  return out;
}

std::vector<SaOutgoing> SubnetAdmin::ForwardTrap(std::span<const uint8_t> smp_notice) {
  if (!subnet_ || smp_notice.size() < mad::SmpNotice::kSize) return {};
  mad::SmpNotice trap;
  trap.Unpack(smp_notice.first(mad::SmpNotice::kSize));
  mad::Notice notice;
  notice.IsGeneric = trap.IsGeneric;
  notice.Type = trap.Type;
  notice.ProducerTypeVendorID = trap.ProducerTypeVendorID;
  notice.TrapNumberDeviceID = trap.TrapNumberDeviceID;
  notice.IssuerLID = trap.IssuerLID;
  notice.NoticeToggle = trap.NoticeToggle;
  notice.NoticeCount = trap.NoticeCount;
  notice.DataDetails = trap.DataDetails;
  // The SMP has no room for IssuerGID: the SM adds it (IBA 13.4.8.2), from the issuer's LID.
  const auto issuer = subnet_->Owner(trap.IssuerLID);
  if (issuer) notice.IssuerGID = GidOf(*issuer);
  return ReportsFor(notice, notice.IssuerGID, trap.IssuerLID);
}

// IBA 13.4.8.3 / 14.4.11: a subscription matches a notice when IsGeneric is the same and its
// trap number (device ID), type and producer type (vendor ID) are equal or 0xFFFF(FF); its GID,
// when not zero, names the subject port, otherwise its LID range (LIDRangeBegin 0xFFFF: all
// LIDs; LIDRangeEnd 0: just LIDRangeBegin) holds the subject's LID.
std::vector<SaOutgoing> SubnetAdmin::ReportsFor(const mad::Notice& notice, const Gid& subject_gid,
                                                uint16_t subject_lid) {
  std::vector<SaOutgoing> out;
  for (const Subscription& s : subscriptions_) {
    const mad::InformInfo& i = s.info;
    if (i.IsGeneric != notice.IsGeneric) continue;
    if (i.TrapNumberDeviceID != 0xFFFF && i.TrapNumberDeviceID != notice.TrapNumberDeviceID)
      continue;
    if (i.Type != 0xFFFF && i.Type != notice.Type) continue;
    if (i.ProducerTypeVendorID != 0xFFFFFF && i.ProducerTypeVendorID != notice.ProducerTypeVendorID)
      continue;
    const bool any_gid = std::all_of(i.GID.begin(), i.GID.end(), [](uint8_t b) { return !b; });
    if (!any_gid && i.GID != subject_gid) continue;
    if (any_gid && i.LIDRangeBegin != 0xFFFF) {
      const uint16_t end = i.LIDRangeEnd ? i.LIDRangeEnd : i.LIDRangeBegin;
      if (subject_lid < i.LIDRangeBegin || subject_lid > end) continue;
    }
    SaOutgoing o;
    MadBytes& m = o.mad;
    m[0] = 1;
    m[1] = kClassSubnAdm;
    m[2] = kSaClassVersion;
    m[3] = kSaMethodReport;
    const uint64_t tid = 0x5A00000000ull | ++notice_count_;
    for (int b = 0; b < 8; ++b) m[8 + b] = static_cast<uint8_t>(tid >> (56 - 8 * b));
    m[16] = 0;
    m[17] = static_cast<uint8_t>(kSaAttrNotice);
    const auto bytes = notice.Pack();
    std::copy(bytes.begin(), bytes.end(), m.begin() + kSaHeaderBytes);
    o.to.lid = s.lid;
    o.to.qpn = s.qpn;
    o.to.qkey = kQKeyGsi;
    out.push_back(o);
  }
  return out;
}

}  // namespace softib::sm
