// Multicast groups: joins through the AL's SA client (JoinMcast, which attaches the QP for a
// full member), an address vector per group (MLID, GRH with the MGID), and leaves. The
// broadcast group FF1s:401B:<P_Key>::FFFF:FFFF is joined first as a full member — as it is
// (MGID, PortGID, JoinState), or created with the port's MTU and the default Q_Key when the
// SA does not know it, as Linux's ipoib does — and its answer gives the interface its Q_Key
// and MTU and brings the carrier up; then the all-nodes group ff02::1 is joined as a full
// member (the host listens to it unasked). Groups the host listens to (IGMP/MLD snooped on
// transmit) are joined as full members with the broadcast group's parameters; groups it
// only sends to, as send-only full members (IBA 1.3's JoinState bit 3: OpenSM creates a group
// only for a full or send-only full member, so a send-only non-member join of a group nobody
// listens to yet fails there; an SA that refuses bit 3 gets the send-only non-member join
// instead), left when idle for kSendOnlyIdle. A timer
// (every second) ages them and retries a broadcast join that failed.
#include <endian.h>

#include <cstring>
#include <memory>

#include "internal.h"
#include "kernel/verbs_al_direct.h"
#include "kernel/verbs_pd_av_direct.h"
#include "kernel/verbs_qp_direct.h"
#include "softib/mad/mad_sa.h"

namespace softib::ipoib {

using kernel::Status;

namespace {

constexpr uint8_t kFullMember = 1, kSendOnlyNonMember = 4, kSendOnlyFullMember = 8;

// ComponentMask bits of MCMemberRecord (IBA 15.2.5.17).
constexpr uint64_t kMgid = 1ull << 0, kPortGid = 1ull << 1, kQkey = 1ull << 2,
                   kMtuSelector = 1ull << 4, kMtu = 1ull << 5, kTclass = 1ull << 6,
                   kPkey = 1ull << 7, kSl = 1ull << 12, kFlowLabel = 1ull << 13,
                   kJoinState = 1ull << 16;

struct Join {
  Interface* interface;
  Gid mgid;
  uint32_t generation;
  bool create;
  abi::JoinMcastOut out{};
  mad::MCMemberRecord record{};
  abi::CreateAvOut av{};
};

void SendJoin(Interface* i, const Gid& mgid, uint32_t generation, bool create);

// The join failed for good: frames dropped; the broadcast group is retried by the timer.
void JoinFailed(const std::shared_ptr<Join>& j) {
  Interface* i = j->interface;
  kernel::SpinLockGuard guard(i->lock);
  auto it = i->groups.find(j->mgid);
  if (it == i->groups.end() || it->second.generation != j->generation) return;
  Group& group = it->second;
  i->counters.drops[static_cast<size_t>(Drop::kNoNeighbour)] += group.queued.size();
  i->counters.tx_dropped += group.queued.size();
  group.queued.clear();
  group.state = Group::State::kFailed;
}

// The all-nodes group ff02::1, full member once the carrier is up: a host listens to it without
// reporting it (RFC 2710 §5), so the snooping never asks; unsolicited Neighbour Advertisements
// (LBFO's move announces one) and MLD queries go there. (A join already made — the carrier came
// back — is not repeated.) The all-hosts group 224.0.0.1 is not joined yet: only IGMP queries
// use it, and no test has a querier.
void JoinAllNodesGroup(Interface* i) {
  uint16_t pkey;
  {
    kernel::SpinLockGuard guard(i->lock);
    pkey = i->local.pkey;
  }
  static constexpr uint8_t kAllNodes[16] = {0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  JoinGroup(i, Ipv6MulticastMgid(kAllNodes, pkey), true, false);
}

void Joined(const std::shared_ptr<Join>& j) {
  Interface* i = j->interface;
  bool carrier = false, stale = false;
  {
    kernel::SpinLockGuard guard(i->lock);
    auto it = i->groups.find(j->mgid);
    if (i->stopping || it == i->groups.end() || it->second.generation != j->generation) {
      stale = true;
    } else {
      Group& group = it->second;
      group.state = Group::State::kJoined;
      group.join = j->out.join.value;
      group.av = j->av.av.value;
      group.mlid = j->record.MLID;
      group.qkey = j->record.Q_Key;
      for (const auto& packet : group.queued) {
        PostPacketLocked(i, packet, group.av, kBroadcastQpn, group.qkey);
      }
      group.queued.clear();
      carrier = group.broadcast && i->port_up;
    }
  }
  if (stale) {
    // Left or re-joined meanwhile: this join and its AV are not wanted.
    if (!Stopping(i)) {
      SendVerb(i, kernel::BuildLeaveMcastIrp(i->pdo, i->file, {j->out.join}), nullptr, 0,
               [](Status, uint64_t) {});
    }
    DestroyAvs(i, {j->av.av.value});
    return;
  }
  if (carrier) {
    SetCarrier(i, true);
    ReRegisterAts(i);
    JoinAllNodesGroup(i);
  }
}

void CreateGroupAv(const std::shared_ptr<Join>& j) {
  Interface* i = j->interface;
  abi::CreateAvIn in{};
  in.pd.value = i->pd;
  in.attributes.port_num = i->port != nullptr ? i->port->port : 1;
  in.attributes.sl = j->record.SL;
  in.attributes.dlid = j->record.MLID;
  in.attributes.grh_present = 1;
  std::memcpy(in.attributes.grh.dgid.raw, j->mgid.data(), 16);
  in.attributes.grh.hop_limit = j->record.HopLimit;
  in.attributes.grh.flow_label = j->record.FlowLabel;
  in.attributes.grh.traffic_class = j->record.TClass;
  SendVerb(i, kernel::BuildCreateAvIrp(i->pdo, i->file, in, &j->av), &j->av, sizeof j->av,
           [j](Status status, uint64_t) {
             if (status != Status::SUCCESS) {
               JoinFailed(j);
               return;
             }
             Joined(j);
           });
}

// The broadcast group's answer sets the interface's Q_Key (the QP's too) and MTU.
void BroadcastAnswered(const std::shared_ptr<Join>& j) {
  Interface* i = j->interface;
  bool modify = false;
  {
    kernel::SpinLockGuard guard(i->lock);
    const uint32_t group_mtu = MtuBytes(static_cast<abi::PathMtu>(j->record.MTU));
    if (group_mtu != 0 && group_mtu < i->ib_mtu) i->ib_mtu = group_mtu;
    i->local.mtu = i->cm != nullptr ? kCmMtu : i->ib_mtu - static_cast<uint32_t>(kEncapBytes);
    modify = j->record.Q_Key != i->bcast_qkey;
    i->bcast_qkey = j->record.Q_Key;
  }
  if (!modify) {
    CreateGroupAv(j);
    return;
  }
  abi::ModifyQpIn in{};
  in.qp.value = i->qp;
  in.attributes.mask = abi::QpAttrMask::STATE | abi::QpAttrMask::QKEY;
  in.attributes.state = abi::QpState::RTS;
  in.attributes.qkey = htobe32(j->record.Q_Key);
  SendVerb(i, kernel::BuildModifyQpIrp(i->pdo, i->file, in), nullptr, 0,
           [j](Status status, uint64_t) {
             if (status != Status::SUCCESS) {
               JoinFailed(j);
               return;
             }
             CreateGroupAv(j);
           });
}

// A send-only full-member join the SA refused: asked again as a send-only non-member (an SA
// before IBA 1.3). False when the group's join was something else or is gone.
bool FallBackToSendOnlyNonMember(Interface* i, const Gid& mgid, uint32_t generation) {
  kernel::SpinLockGuard guard(i->lock);
  auto it = i->groups.find(mgid);
  if (it == i->groups.end() || it->second.generation != generation ||
      it->second.join_state != kSendOnlyFullMember)
    return false;
  it->second.join_state = kSendOnlyNonMember;
  return true;
}

void SendJoin(Interface* i, const Gid& mgid, uint32_t generation, bool create) {
  auto j = std::make_shared<Join>();
  j->interface = i;
  j->mgid = mgid;
  j->generation = generation;
  j->create = create;
  abi::JoinMcastIn in{};
  mad::MCMemberRecord record{};
  bool broadcast = false;
  {
    kernel::SpinLockGuard guard(i->lock);
    auto it = i->groups.find(mgid);
    if (i->stopping || it == i->groups.end() || it->second.generation != generation) return;
    broadcast = it->second.broadcast;
    record.JoinState = it->second.join_state;
    record.PortGID = i->local.hw.gid;
    record.Q_Key = i->bcast_qkey;
    record.P_Key = i->local.pkey;
    record.MTUSelector = 2;  // exactly
    record.MTU = static_cast<uint8_t>(i->ib_mtu == 4096   ? 5
                                      : i->ib_mtu == 2048 ? 4
                                      : i->ib_mtu == 1024 ? 3
                                      : i->ib_mtu == 512  ? 2
                                                          : 1);
    in.port_guid = i->port_guid_be;
    in.pkey_index = i->pkey_index;
  }
  record.MGID = mgid;
  record.Scope = static_cast<uint8_t>(mgid[1] & 0x0F);
  in.qp.value = i->qp;
  in.component_mask = kMgid | kPortGid | kJoinState;
  // The broadcast group is joined as it is first; other groups (and the broadcast group
  // the SA did not know) are created with the broadcast group's parameters.
  if (!broadcast || create) {
    in.component_mask |= kQkey | kMtuSelector | kMtu | kTclass | kPkey | kSl | kFlowLabel;
  }
  in.context = reinterpret_cast<uint64_t>(i);
  in.timeout_ms = 1000;
  in.retry_count = 3;
  const auto bytes = record.Pack();
  std::memcpy(in.member_record, bytes.data(), bytes.size());
  SendVerb(i, kernel::BuildJoinMcastIrp(i->pdo, i->file, in, &j->out), &j->out, sizeof j->out,
           [j, broadcast](Status status, uint64_t) {
             Interface* i = j->interface;
             if (status == Status::REMOTE_ERROR && broadcast && !j->create && !Stopping(i)) {
               SendJoin(i, j->mgid, j->generation, true);  // the SA does not know it: create
               return;
             }
             if (status == Status::REMOTE_ERROR && !broadcast && !Stopping(i) &&
                 FallBackToSendOnlyNonMember(i, j->mgid, j->generation)) {
               SendJoin(i, j->mgid, j->generation, false);
               return;
             }
             if (status != Status::SUCCESS ||
                 !j->record.Unpack({j->out.joined_record, sizeof j->out.joined_record})) {
               JoinFailed(j);
               return;
             }
             if (broadcast) {
               BroadcastAnswered(j);
             } else {
               CreateGroupAv(j);
             }
           });
}

void AgeDpc(kernel::Kdpc*, void* context, void*, void*) {
  auto* i = static_cast<Interface*>(context);
  std::vector<Gid> leave;
  std::vector<std::pair<Gid, uint32_t>> retry;
  {
    kernel::SpinLockGuard guard(i->lock);
    if (i->stopping) return;
    const auto now = std::chrono::steady_clock::now();
    for (auto& [mgid, group] : i->groups) {
      if (!group.full && !group.broadcast && group.state == Group::State::kJoined &&
          now - group.last_used > kSendOnlyIdle) {
        leave.push_back(mgid);
      } else if (group.state == Group::State::kFailed && (group.broadcast || group.full) &&
                 i->port_up) {
        group.state = Group::State::kJoining;
        retry.emplace_back(mgid, ++group.generation);
      } else if (group.state == Group::State::kFailed) {
        leave.push_back(mgid);  // a send-only join that failed: the next frame tries again
      }
    }
  }
  for (const Gid& mgid : leave) LeaveGroup(i, mgid);
  for (const auto& [mgid, generation] : retry) SendJoin(i, mgid, generation, false);
}

}  // namespace

void JoinGroup(Interface* i, const Gid& mgid, bool full, bool broadcast) {
  uint64_t old_join = 0, old_av = 0;
  uint32_t generation = 0;
  bool start = false;
  {
    kernel::SpinLockGuard guard(i->lock);
    if (i->stopping) return;
    auto [it, inserted] = i->groups.try_emplace(mgid);
    Group& group = it->second;
    if (inserted) {
      group.mgid = mgid;
      group.join_state = full ? kFullMember : kSendOnlyFullMember;
      group.last_used = std::chrono::steady_clock::now();
    }
    group.broadcast = group.broadcast || broadcast;
    if (full && !group.full) {
      group.full = true;
      group.join_state = kFullMember;
      if (!inserted) {  // a send-only join becomes a full one
        old_join = std::exchange(group.join, 0);
        old_av = std::exchange(group.av, 0);
        group.state = Group::State::kJoining;
      }
      start = true;
    } else if (inserted || (group.state == Group::State::kJoining && group.join == 0 &&
                            group.generation == 0)) {
      start = true;  // new, or the send-only entry Transmit made
    }
    if (start) generation = ++group.generation;
  }
  if (old_join != 0) {
    SendVerb(i, kernel::BuildLeaveMcastIrp(i->pdo, i->file, {{old_join}}), nullptr, 0,
             [](Status, uint64_t) {});
  }
  if (old_av != 0) DestroyAvs(i, {old_av});
  if (start) SendJoin(i, mgid, generation, false);
}

void LeaveGroup(Interface* i, const Gid& mgid) {
  uint64_t join = 0, av = 0;
  {
    kernel::SpinLockGuard guard(i->lock);
    auto it = i->groups.find(mgid);
    if (i->stopping || it == i->groups.end() || it->second.broadcast) return;
    join = it->second.join;
    av = it->second.av;
    i->counters.tx_dropped += it->second.queued.size();
    i->groups.erase(it);  // an answer still in flight finds no group: left then
  }
  if (join != 0) {
    SendVerb(i, kernel::BuildLeaveMcastIrp(i->pdo, i->file, {{join}}), nullptr, 0,
             [](Status, uint64_t) {});
  }
  if (av != 0) DestroyAvs(i, {av});
}

void RejoinAll(Interface* i) {
  std::vector<uint64_t> joins, avs;
  std::vector<std::pair<Gid, uint32_t>> rejoin;
  {
    kernel::SpinLockGuard guard(i->lock);
    if (i->stopping) return;
    for (auto& [mgid, group] : i->groups) {
      if (group.join != 0) joins.push_back(std::exchange(group.join, 0));
      if (group.av != 0) avs.push_back(std::exchange(group.av, 0));
      group.state = Group::State::kJoining;
      rejoin.emplace_back(mgid, ++group.generation);
    }
  }
  for (uint64_t join : joins) {
    SendVerb(i, kernel::BuildLeaveMcastIrp(i->pdo, i->file, {{join}}), nullptr, 0,
             [](Status, uint64_t) {});
  }
  DestroyAvs(i, avs);
  for (const auto& [mgid, generation] : rejoin) SendJoin(i, mgid, generation, false);
}

void StartAgeing(Interface* i) {
  kernel::KeInitializeDpc(&i->age_dpc, i->node, &AgeDpc, i);
  kernel::KeInitializeTimer(&i->age_timer, i->node);
  kernel::KeSetTimer(&i->age_timer, std::chrono::seconds(1), &i->age_dpc, std::chrono::seconds(1));
}

void StopAgeing(Interface* i) {
  if (i->age_timer.node == nullptr) return;
  kernel::KeCancelTimer(&i->age_timer);
  kernel::KeFlushQueuedDpcs(i->node);
}

}  // namespace softib::ipoib
