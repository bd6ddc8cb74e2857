// Transmit: a host frame is copied into a free send slot of the one registration,
// translated in place (TranslateFromHost), and posted on the UD QP — to a neighbour's
// address vector (resolved from the SA's PathRecord through the AL's path cache, then
// CreateAv; frames wait, a bounded number per destination, while it resolves) or to a
// multicast group's (joined as a send-only non-member when the host only sends to it).
// Nothing here blocks: IRQL <= DISPATCH, the resolution runs in completion routines.
#include <endian.h>

#include <cstring>
#include <memory>

#include "internal.h"
#include "kernel/verbs_al_direct.h"
#include "kernel/verbs_pd_av_direct.h"
#include "softib/al/access_layer.h"
#include "softib/mad/mad_sa.h"

namespace softib::ipoib {

using kernel::Status;

void CountDropLocked(Interface* i, Drop drop, bool transmit) {
  if (drop == Drop::kNone || drop >= Drop::kCount) return;
  ++i->counters.drops[static_cast<size_t>(drop)];
  if (drop == Drop::kLoopedBack) return;  // not an error
  ++(transmit ? i->counters.tx_dropped : i->counters.rx_dropped);
}

void PostSlotLocked(Interface* i, uint32_t slot, size_t offset, size_t length, uint64_t av,
                    uint32_t qpn, uint32_t qkey) {
  abi::SendWorkRequest wr{};
  wr.wr_id = kSendWrBit | slot;
  wr.wr_type = abi::WrType::SEND;
  wr.send_flags = abi::SendFlags::SIGNALED;
  wr.num_sge = 1;
  wr.sge[0] = {
      reinterpret_cast<uint64_t>(i->tx_base + static_cast<size_t>(slot) * kSlotBytes + offset),
      static_cast<uint32_t>(length), i->lkey};
  wr.av.value = av;
  wr.remote_qpn = qpn & 0xFFFFFF;
  wr.remote_qkey = qkey;
  uint32_t posted = 0;
  if (i->stopping || kernel::IbPostSend(i->al, i->qp, {&wr, 1}, &posted) != Status::SUCCESS ||
      posted != 1) {
    i->tx_free.push_back(slot);
    ++i->counters.tx_dropped;
    return;
  }
  ++i->counters.tx_packets;
  i->counters.tx_bytes += length;
}

void PostPacketLocked(Interface* i, std::span<const uint8_t> packet, uint64_t av, uint32_t qpn,
                      uint32_t qkey) {
  if (i->tx_free.empty() || packet.size() > kSlotBytes) {
    CountDropLocked(i, i->tx_free.empty() ? Drop::kSendQueueFull : Drop::kOversize, true);
    return;
  }
  const uint32_t slot = i->tx_free.back();
  i->tx_free.pop_back();
  std::memcpy(i->tx_base + static_cast<size_t>(slot) * kSlotBytes, packet.data(), packet.size());
  PostSlotLocked(i, slot, 0, packet.size(), av, qpn, qkey);
}

void DestroyAvs(Interface* i, const std::vector<uint64_t>& avs) {
  for (uint64_t av : avs) {
    if (av == 0 || Stopping(i)) continue;
    SendVerb(i, kernel::BuildDestroyAvIrp(i->pdo, i->file, {{av}}), nullptr, 0,
             [](Status, uint64_t) {});
  }
}

void FlushPathsLocked(Interface* i, std::vector<uint64_t>* avs) {
  for (auto& [gid, path] : i->paths) {
    avs->push_back(path.av);
    i->counters.tx_dropped += path.queued.size();
  }
  i->paths.clear();
}

namespace {

// One resolution in flight: SendSaRequest (PathRecord Get), GetSaResponse, CreateAv.
struct Resolution {
  Interface* interface;
  Gid gid;
  uint32_t generation;
  abi::SendSaRequestOut request{};
  std::vector<uint8_t> response = std::vector<uint8_t>(sizeof(abi::GetSaResponseOut) + 256);
  abi::CreateAvOut av{};
  uint16_t dlid = 0;
  std::array<uint8_t, mad::PathRecord::kSize> record{};  // as the SA sent it (IBAT)
};

// The resolution ended: the path is ready (frames sent) or failed (frames dropped, the
// next frame tries again).
void Resolved(const std::shared_ptr<Resolution>& r, uint64_t av) {
  Interface* i = r->interface;
  std::vector<uint64_t> stale;
  {
    kernel::SpinLockGuard guard(i->lock);
    auto it = i->paths.find(r->gid);
    if (it == i->paths.end() || it->second.state != Path::State::kResolving ||
        r->generation != i->generation) {
      stale.push_back(av);  // flushed meanwhile (port change): a newer resolution owns it
    } else if (av == 0) {
      Path& path = it->second;
      i->counters.drops[static_cast<size_t>(Drop::kNoNeighbour)] += path.queued.size();
      i->counters.tx_dropped += path.queued.size();
      i->paths.erase(it);
    } else {
      Path& path = it->second;
      path.av = av;
      path.dlid = r->dlid;
      path.record = r->record;
      path.state = Path::State::kReady;
      for (auto& [qpn, packet] : path.queued) PostPacketLocked(i, packet, av, qpn, i->bcast_qkey);
      path.queued.clear();
    }
  }
  DestroyAvs(i, stale);
}

void CreatePathAv(const std::shared_ptr<Resolution>& r, const mad::PathRecord& record) {
  Interface* i = r->interface;
  abi::CreateAvIn in{};
  in.pd.value = i->pd;
  in.attributes.port_num = i->port != nullptr ? i->port->port : 1;
  in.attributes.sl = record.SL;
  in.attributes.dlid = record.DLID;
  in.attributes.static_rate = 0;
  // A GRH always, so that the receiver learns the sender's GID from every packet.
  in.attributes.grh_present = 1;
  std::memcpy(in.attributes.grh.dgid.raw, r->gid.data(), 16);
  in.attributes.grh.hop_limit = record.HopLimit;
  in.attributes.grh.flow_label = record.FlowLabel;
  in.attributes.grh.traffic_class = record.TClass;
  r->dlid = record.DLID;
  SendVerb(i, kernel::BuildCreateAvIrp(i->pdo, i->file, in, &r->av), &r->av, sizeof r->av,
           [r](Status status, uint64_t) {
             Resolved(r, status == Status::SUCCESS ? r->av.av.value : 0);
           });
}

void AwaitPath(const std::shared_ptr<Resolution>& r) {
  Interface* i = r->interface;
  SendVerb(i,
           kernel::BuildGetSaResponseIrp(i->pdo, i->file, {r->request.req}, r->response.data(),
                                         static_cast<uint32_t>(r->response.size())),
           r->response.data(), static_cast<uint32_t>(r->response.size()),
           [r](Status status, uint64_t) {
             abi::GetSaResponseOut out{};
             std::memcpy(&out, r->response.data(), sizeof out);
             mad::PathRecord record{};
             if (status != Status::SUCCESS || out.mad_status != 0 || out.num_records == 0 ||
                 out.data_length < mad::PathRecord::kSize ||
                 !record.Unpack({r->response.data() + sizeof out, mad::PathRecord::kSize}) ||
                 record.DLID == 0 || Stopping(r->interface)) {
               Resolved(r, 0);
               return;
             }
             std::memcpy(r->record.data(), r->response.data() + sizeof out, r->record.size());
             CreatePathAv(r, record);
           });
}

}  // namespace

void StartResolve(Interface* i, const Gid& gid) {
  auto r = std::make_shared<Resolution>();
  r->interface = i;
  r->gid = gid;
  abi::SendSaRequestIn in{};
  mad::PathRecord record{};
  {
    kernel::SpinLockGuard guard(i->lock);
    if (i->stopping) return;
    r->generation = i->generation;
    in.port_guid = i->port_guid_be;
    record.SGID = i->local.hw.gid;
    record.P_Key = i->local.pkey;
  }
  record.DGID = gid;
  record.Reversible = 1;
  record.NumbPath = 1;
  // ComponentMask (IBA 15.2.5.16): DGID 2, SGID 3, Reversible 11, NumbPath 12, P_Key 13.
  in.al.value = i->al_handle;
  in.component_mask = (1ull << 2) | (1ull << 3) | (1ull << 11) | (1ull << 12) | (1ull << 13);
  in.timeout_ms = 500;
  in.retry_count = 3;
  in.attribute_id = mad::PathRecord::kAttributeId;
  in.method = 0x01;  // Get
  in.attribute_length = mad::PathRecord::kSize;
  const auto bytes = record.Pack();
  SendVerb(i, kernel::BuildSendSaRequestIrp(i->pdo, i->file, in, bytes, &r->request), &r->request,
           sizeof r->request, [r](Status status, uint64_t) {
             if (status != Status::SUCCESS || Stopping(r->interface)) {
               Resolved(r, 0);
               return;
             }
             AwaitPath(r);
           });
}

void Transmit(Interface* i, std::span<const uint8_t> frame) {
  if (i->lbfo != nullptr) return LbfoTransmit(i, frame);
  TransmitFrame(i, frame, false);
}

void TransmitFrame(Interface* i, std::span<const uint8_t> frame, bool resend) {
  LocalIdentity local;
  {
    kernel::SpinLockGuard guard(i->lock);
    if (i->stopping || !i->carrier) {
      ++i->counters.tx_dropped;
      return;
    }
    local = i->local;
    // Older frames wait for the send ring (flow.cc): this one goes behind them.
    if (HoldFrameLocked(i, frame, false, resend)) return;
  }
  for (const GroupChange& change : SnoopHostMembership(frame, local)) {
    if (change.join) {
      JoinGroup(i, change.mgid, true, false);
    } else {
      LeaveGroup(i, change.mgid);
    }
  }
  if (CmTransmit(i, frame, resend)) return;
  bool resolve = false, join = false;
  Gid target{};
  {
    kernel::SpinLockGuard guard(i->lock);
    if (i->stopping || !i->carrier) {
      ++i->counters.tx_dropped;
      return;
    }
    if (frame.size() > kSlotBytes - kTxFrameOffset - kTxTailroom) {
      CountDropLocked(i, Drop::kOversize, true);
      return;
    }
    if (i->tx_free.empty()) {
      HoldFrameLocked(i, frame, true, resend);
      return;
    }
    const uint32_t slot = i->tx_free.back();
    i->tx_free.pop_back();
    uint8_t* buffer = i->tx_base + static_cast<size_t>(slot) * kSlotBytes;
    std::memcpy(buffer + kTxFrameOffset, frame.data(), frame.size());
    const TxResult r = TranslateFromHost({buffer, kSlotBytes}, kTxFrameOffset, frame.size(),
                                         i->local, i->neighbours);
    if (r.drop != Drop::kNone) {
      i->tx_free.push_back(slot);
      CountDropLocked(i, r.drop, true);
      return;
    }
    IbatLearnLocked(i, frame, true);
    const std::span<const uint8_t> packet(buffer + r.offset, r.length);
    if (r.multicast) {
      auto it = i->groups.find(r.mgid);
      if (it == i->groups.end()) {
        Group& group = i->groups[r.mgid];
        group.mgid = r.mgid;
        group.join_state = 8;  // send-only full member (multicast.cc)
        group.last_used = std::chrono::steady_clock::now();
        group.queued.emplace_back(packet.begin(), packet.end());
        i->tx_free.push_back(slot);
        join = true;
        target = r.mgid;
      } else if (it->second.state == Group::State::kJoined) {
        it->second.last_used = std::chrono::steady_clock::now();
        PostSlotLocked(i, slot, r.offset, r.length, it->second.av, kBroadcastQpn, it->second.qkey);
      } else if (it->second.state == Group::State::kJoining &&
                 it->second.queued.size() < kMaxQueuedPerTarget) {
        it->second.queued.emplace_back(packet.begin(), packet.end());
        i->tx_free.push_back(slot);
      } else {
        i->tx_free.push_back(slot);
        CountDropLocked(i, Drop::kNoNeighbour, true);
      }
    } else if (r.neighbour == nullptr) {
      i->tx_free.push_back(slot);
      CountDropLocked(i, Drop::kNoNeighbour, true);
    } else {
      const Neighbour* n = r.neighbour;
      Path& path = i->paths[n->hw.gid];
      if (path.state == Path::State::kReady) {
        PostSlotLocked(i, slot, r.offset, r.length, path.av, n->hw.qpn, i->bcast_qkey);
      } else {
        if (path.queued.size() < kMaxQueuedPerTarget) {
          path.queued.emplace_back(n->hw.qpn, std::vector<uint8_t>(packet.begin(), packet.end()));
        } else {
          CountDropLocked(i, Drop::kNoNeighbour, true);
        }
        i->tx_free.push_back(slot);
        if (path.state == Path::State::kIdle || path.state == Path::State::kFailed) {
          path.state = Path::State::kResolving;
          resolve = true;
          target = n->hw.gid;
        }
      }
    }
  }
  if (resolve) StartResolve(i, target);
  if (join) JoinGroup(i, target, false, false);
}

}  // namespace softib::ipoib
