// The requester: turns send work requests into packets (UD for now: one SEND_ONLY packet
// per request, IBA 9.8).
#include <endian.h>

#include "hca/device/hca.h"

namespace softib::hca {

using abi::QpState;
using abi::WcStatus;

abi::Status Hca::PostSend(uint32_t qpn, const abi::SendWorkRequest& wr) {
  QueuePair* qp = Qp(qpn);
  if (qp == nullptr) return abi::Status::INVALID_QP_HANDLE;
  // The send queue accepts work from RTS on (IBA 10.8.2.2: posting in Reset, Init or RTR is
  // an immediate error); in SQE and Error it is accepted and flushed.
  if (qp->state == QpState::RESET || qp->state == QpState::INIT || qp->state == QpState::RTR)
    return abi::Status::INVALID_QP_STATE;
  if (qp->sq.size() >= qp->caps.sq_depth) return abi::Status::INSUFFICIENT_RESOURCES;
  const bool is_inline = abi::HasAny(wr.send_flags, abi::SendFlags::INLINE);
  if (is_inline ? wr.inline_length > qp->caps.max_inline_data
                : wr.num_sge > qp->caps.sq_sge || wr.num_sge > std::size(wr.sge))
    return is_inline ? abi::Status::INVALID_PARAMETER : abi::Status::INVALID_MAX_SGE;
  if (qp->IsDatagram() && wr.wr_type != abi::WrType::SEND) return abi::Status::INVALID_WR_TYPE;
  if (!qp->IsDatagram()) return abi::Status::UNSUPPORTED;  // RC/UC transports: next step
  qp->sq.push_back(wr);
  ProgressSend(*qp);
  return abi::Status::SUCCESS;
}

void Hca::ProgressSend(QueuePair& qp) {
  if (qp.state == QpState::SQE || qp.state == QpState::ERROR) return FlushSend(qp);
  while (qp.state == QpState::RTS && !qp.sq.empty()) {
    const abi::SendWorkRequest wr = qp.sq.front();
    qp.sq.pop_front();
    uint32_t length = 0;
    const WcStatus status = SendUd(qp, wr, &length);
    CompleteSend(qp, wr, status, length);
    // A UD requester error stops the send queue only (IBA 10.8.3.3: the QP enters SQE).
    if (status != WcStatus::SUCCESS) EnterSqError(qp);
  }
}

WcStatus Hca::Gather(const QueuePair& qp, const abi::SendWorkRequest& wr,
                     std::vector<uint8_t>* payload) {
  payload->clear();
  if (abi::HasAny(wr.send_flags, abi::SendFlags::INLINE)) {
    const auto* data = reinterpret_cast<const uint8_t*>(wr.sge);
    payload->assign(data, data + wr.inline_length);
    return WcStatus::SUCCESS;
  }
  uint64_t total = 0;
  const MemoryRegion* mrs[std::size(wr.sge)];
  for (uint32_t i = 0; i < wr.num_sge; ++i) {
    const abi::LocalDataSegment& sge = wr.sge[i];
    // Reading local memory for a send needs no right beyond a valid L_Key (IBA 10.6.3.1).
    if (mrs_.CheckLocal(sge.lkey, qp.pd, sge.vaddr, sge.length, abi::AccessFlags{}, &mrs[i]) !=
        AccessError::kNone)
      return WcStatus::LOCAL_PROT_ERR;
    total += sge.length;
  }
  if (total > port(qp.port).mtu_bytes()) return WcStatus::LOCAL_LENGTH_ERR;
  payload->resize(total);
  std::size_t at = 0;
  for (uint32_t i = 0; i < wr.num_sge; ++i) {
    const abi::LocalDataSegment& sge = wr.sge[i];
    if (!mrs[i]->Read(sge.vaddr, std::span(*payload).subspan(at, sge.length)))
      return WcStatus::LOCAL_PROT_ERR;
    at += sge.length;
  }
  return WcStatus::SUCCESS;
}

WcStatus Hca::SendUd(QueuePair& qp, const abi::SendWorkRequest& wr, uint32_t* length) {
  const AddressHandle* ah = ahs_.Find(static_cast<uint32_t>(wr.av.value));
  if (ah == nullptr || ah->pd != qp.pd || ah->av.port_num != qp.port)
    return WcStatus::LOCAL_QP_OP_ERR;
  std::vector<uint8_t> payload;
  const WcStatus gathered = Gather(qp, wr, &payload);
  if (gathered != WcStatus::SUCCESS) return gathered;
  if (payload.size() > port(qp.port).mtu_bytes()) return WcStatus::LOCAL_LENGTH_ERR;
  *length = static_cast<uint32_t>(payload.size());

  Port& out = port(qp.port);
  const abi::AddressVector& av = ah->av;
  PacketHeaders hdr;
  hdr.lrh.VL = 0;  // data VL; SL→VL mapping arrives with the SMA
  hdr.lrh.SL = av.sl;
  hdr.lrh.DLID = av.dlid;
  hdr.lrh.SLID = static_cast<uint16_t>(out.lid | (av.src_path_bits & ((1u << out.lmc) - 1)));
  if (av.grh_present) {
    wire::GRH grh;
    grh.TClass = av.grh.traffic_class;
    grh.FlowLabel = av.grh.flow_label;
    grh.HopLmt = av.grh.hop_limit;
    const abi::Gid sgid = out.Gid(av.grh.sgid_index);
    std::copy(std::begin(sgid.raw), std::end(sgid.raw), grh.SGID.begin());
    std::copy(std::begin(av.grh.dgid.raw), std::end(av.grh.dgid.raw), grh.DGID.begin());
    hdr.grh = grh;
  }
  const bool with_imm = abi::HasAny(wr.send_flags, abi::SendFlags::IMMEDIATE);
  hdr.bth.OpCode = static_cast<uint8_t>(with_imm ? wire::BthOpcode::UD_SEND_ONLY_WITH_IMMEDIATE
                                                 : wire::BthOpcode::UD_SEND_ONLY);
  hdr.bth.SE = abi::HasAny(wr.send_flags, abi::SendFlags::SOLICITED) ? 1 : 0;
  hdr.bth.P_Key = qp.pkey_index < out.pkeys.size() ? out.pkeys[qp.pkey_index] : 0;
  hdr.bth.DestQP = wr.remote_qpn & kPsnMask;
  hdr.bth.PSN = qp.sq_psn;
  qp.sq_psn = (qp.sq_psn + 1) & kPsnMask;
  // A Q_Key with its high bit set means "use the QP's own Q_Key" (IBA 10.2.5).
  hdr.deth.Q_Key = (wr.remote_qkey & 0x80000000u) != 0 ? qp.qkey : wr.remote_qkey;
  hdr.deth.SrcQP = qp.qpn;
  hdr.immdt.ImmediateData = be32toh(wr.immediate_data);  // the WR holds it in network order

  std::vector<uint8_t> packet = BuildPacket(hdr, payload);
  if (packet.empty()) return WcStatus::LOCAL_LENGTH_ERR;
  ++out.counters.xmit_packets;
  if (out.link != nullptr) out.link->Transmit(std::move(packet));
  return WcStatus::SUCCESS;
}

}  // namespace softib::hca
