// UD multicast: attachments and delivery (IBA 10.5). The port replicates a multicast packet
// to each attached QP; the sending HCA also delivers a copy to its own attached QPs on the
// sending port, but never to the QP that sent it.
#include "hca/device/mcast.h"

#include "hca/device/hca.h"

namespace softib::hca {

bool McastTable::Attach(const Group& group, uint32_t qp, uint32_t max_groups,
                        uint32_t max_qps_per_group) {
  auto it = groups_.find(group);
  if (it == groups_.end()) {
    if (groups_.size() >= max_groups) return false;
    it = groups_.emplace(group, std::set<uint32_t>{}).first;
  }
  if (it->second.count(qp) != 0) return true;
  if (it->second.size() >= max_qps_per_group) {
    if (it->second.empty()) groups_.erase(it);
    return false;
  }
  it->second.insert(qp);
  ++attachments_;
  return true;
}

bool McastTable::Detach(const Group& group, uint32_t qp) {
  const auto it = groups_.find(group);
  if (it == groups_.end() || it->second.erase(qp) == 0) return false;
  --attachments_;
  if (it->second.empty()) groups_.erase(it);
  return true;
}

void McastTable::DetachAll(uint32_t qp) {
  for (auto it = groups_.begin(); it != groups_.end();) {
    attachments_ -= it->second.erase(qp);
    it = it->second.empty() ? groups_.erase(it) : std::next(it);
  }
}

bool McastTable::Attached(uint32_t qp) const {
  for (const auto& [group, qps] : groups_)
    if (qps.count(qp) != 0) return true;
  return false;
}

const std::set<uint32_t>* McastTable::Members(const Group& group) const {
  const auto it = groups_.find(group);
  return it == groups_.end() ? nullptr : &it->second;
}

abi::Status Hca::AttachMcast(uint32_t qpn, const abi::Gid& mgid, uint16_t mlid) {
  QueuePair* qp = Qp(qpn);
  if (qp == nullptr) return abi::Status::INVALID_QP_HANDLE;
  if (qp->type != abi::QpType::UD) return abi::Status::INVALID_SERVICE_TYPE;
  if (!IsMulticastLid(mlid)) return abi::Status::INVALID_LID;
  if (!IsMulticastGid(mgid)) return abi::Status::INVALID_GID;
  if (mcast_.attachments() >= config_.max_mcast_qp_attach)
    return abi::Status::INSUFFICIENT_RESOURCES;
  const McastTable::Group group{qp->port, ToMgid(mgid), mlid};
  const std::set<uint32_t>* members = mcast_.Members(group);
  if (members == nullptr && mcast_.groups() >= config_.max_mcast_grps)
    return abi::Status::INSUFFICIENT_RESOURCES;
  if (!mcast_.Attach(group, qp->handle, config_.max_mcast_grps, config_.max_qps_per_mcast_grp))
    return abi::Status::MAX_MCAST_QPS_REACHED;
  return abi::Status::SUCCESS;
}

abi::Status Hca::DetachMcast(uint32_t qpn, const abi::Gid& mgid, uint16_t mlid) {
  QueuePair* qp = Qp(qpn);
  if (qp == nullptr) return abi::Status::INVALID_QP_HANDLE;
  return mcast_.Detach({qp->port, ToMgid(mgid), mlid}, qp->handle) ? abi::Status::SUCCESS
                                                                   : abi::Status::NOT_FOUND;
}

void Hca::ReceiveMulticast(Port& in, const ParsedPacket& packet, const QueuePair* except) {
  const auto drop = [&](RecvDrop why) { ++in.counters.recv_drops[static_cast<std::size_t>(why)]; };
  const PacketHeaders& hdr = packet.hdr;
  // Multicast is UD only, to the multicast QPN, always with a GRH naming the group.
  constexpr uint8_t kTransportUd = 3;
  if ((hdr.bth.OpCode >> 5) != kTransportUd || hdr.bth.DestQP != kMulticastQpn)
    return drop(RecvDrop::kWrongTransport);
  if (!hdr.grh) return drop(RecvDrop::kNoGrh);
  McastTable::Mgid mgid;
  std::copy(hdr.grh->DGID.begin(), hdr.grh->DGID.end(), mgid.begin());
  const std::set<uint32_t>* members = mcast_.Members({in.number, mgid, hdr.lrh.DLID});
  if (members == nullptr) return drop(RecvDrop::kNoMcastGroup);
  const std::set<uint32_t> copy = *members;  // delivery must not see the set change
  for (const uint32_t handle : copy) {
    QueuePair* qp = Qp(handle);
    if (qp == nullptr || qp == except) continue;
    if (!qp->CanReceive()) {
      drop(RecvDrop::kQpState);
      continue;
    }
    ReceiveDatagram(in, *qp, packet);
  }
}

}  // namespace softib::hca
