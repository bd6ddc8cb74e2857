// The responder: checks an arriving packet against the port and the destination QP
// (IBA 9.6: DLID, QP, transport, P_Key, Q_Key) and places its data in a posted receive.
#include <endian.h>

#include "hca/device/hca.h"

namespace softib::hca {
namespace {

using abi::WcStatus;

// UD receive buffers start with room for a GRH whether or not the packet has one
// (IBA 10.8.2.3 / 11.4.1.1); the completion length counts those 40 bytes.
constexpr uint32_t kUdGrhRoom = wire::GRH::kSize;

struct Segment {
  const MemoryRegion* mr;
  uint64_t va;
  uint32_t length;
};

// Checks every segment the first `total` bytes land in (local write needed), before any
// byte moves: a protection error must leave memory untouched.
WcStatus PlanScatter(const MrTable& mrs, PdId pd, const abi::RecvWorkRequest& wr, uint64_t total,
                     std::vector<Segment>* plan) {
  uint64_t covered = 0;
  for (uint32_t i = 0; i < wr.num_sge && covered < total; ++i) {
    const abi::LocalDataSegment& sge = wr.sge[i];
    const MemoryRegion* mr = nullptr;
    if (mrs.CheckLocal(sge.lkey, pd, sge.vaddr, sge.length, abi::AccessFlags::LOCAL_WRITE, &mr) !=
        AccessError::kNone)
      return WcStatus::LOCAL_PROT_ERR;
    plan->push_back({mr, sge.vaddr, sge.length});
    covered += sge.length;
  }
  return covered >= total ? WcStatus::SUCCESS : WcStatus::LOCAL_LENGTH_ERR;
}

// Writes `data` at byte `offset` of the buffer the plan describes.
bool WriteAt(const std::vector<Segment>& plan, uint64_t offset, std::span<const uint8_t> data) {
  for (const Segment& seg : plan) {
    if (data.empty()) break;
    if (offset >= seg.length) {
      offset -= seg.length;
      continue;
    }
    const std::size_t n = std::min<uint64_t>(seg.length - offset, data.size());
    if (!seg.mr->Write(seg.va + offset, data.first(n))) return false;
    data = data.subspan(n);
    offset = 0;
  }
  return data.empty();
}

uint8_t TransportOf(uint8_t opcode) { return opcode >> 5; }  // IBA 9.2.1: RC 0 UC 1 RD 2 UD 3
constexpr uint8_t kTransportUd = 3;

}  // namespace

void Hca::Receive(uint8_t port_number, std::span<const uint8_t> bytes) {
  if (port_number < 1 || port_number > ports_.size()) return;
  Port& in = port(port_number);
  PortCounters& counters = in.counters;
  const auto drop = [&](RecvDrop why) { ++counters.recv_drops[static_cast<std::size_t>(why)]; };

  ParsedPacket packet;
  const DropReason parsed = ParsePacket(bytes, &packet);
  if (parsed != DropReason::kNone) {
    ++counters.parse_drops[static_cast<std::size_t>(parsed)];
    return;
  }
  ++counters.rcv_packets;
  const PacketHeaders& hdr = packet.hdr;
  if (!in.AcceptsDlid(hdr.lrh.DLID)) return drop(RecvDrop::kWrongDlid);
  QueuePair* qp = Qp(hdr.bth.DestQP);
  if (qp == nullptr) return drop(RecvDrop::kUnknownQp);
  if (TransportOf(hdr.bth.OpCode) != kTransportUd || !qp->IsDatagram())
    return drop(RecvDrop::kWrongTransport);
  if (!qp->CanReceive() || qp->port != port_number) return drop(RecvDrop::kQpState);
  const uint16_t qp_pkey = qp->pkey_index < in.pkeys.size() ? in.pkeys[qp->pkey_index] : 0;
  if (!PkeysMatch(hdr.bth.P_Key, qp_pkey)) {
    ++counters.pkey_violations;
    return drop(RecvDrop::kPkeyViolation);
  }
  if (hdr.deth.Q_Key != qp->qkey) {
    ++counters.qkey_violations;
    return drop(RecvDrop::kQkeyViolation);
  }
  ReceiveUd(in, *qp, packet);
}

void Hca::ReceiveUd(Port& port, QueuePair& qp, const ParsedPacket& packet) {
  PortCounters& counters = port.counters;
  const PacketHeaders& hdr = packet.hdr;
  if (packet.payload.size() > port.mtu_bytes()) {
    ++counters.recv_drops[static_cast<std::size_t>(RecvDrop::kTooLong)];
    return;
  }
  // UD drops a message that finds no receive posted (IBA 9.8.3: no RNR on UD).
  if (qp.rq.empty()) {
    ++counters.recv_drops[static_cast<std::size_t>(RecvDrop::kNoReceiveWqe)];
    return;
  }
  const abi::RecvWorkRequest wr = qp.rq.front();
  qp.rq.pop_front();

  abi::WorkCompletion wc{};
  wc.wr_id = wr.wr_id;
  wc.opcode = abi::WcOpcode::RECV;
  const uint64_t total = kUdGrhRoom + packet.payload.size();
  std::vector<Segment> plan;
  wc.status = PlanScatter(mrs_, qp.pd, wr, total, &plan);
  if (wc.status == WcStatus::SUCCESS) {
    bool ok = true;
    if (hdr.grh) ok = WriteAt(plan, 0, hdr.grh->Pack());
    ok = ok && WriteAt(plan, kUdGrhRoom, packet.payload);
    if (!ok) wc.status = WcStatus::LOCAL_PROT_ERR;
  }
  if (wc.status != WcStatus::SUCCESS) {
    // A receive that cannot be placed completes in error and takes the QP to Error.
    CompleteRecv(qp, wc, false);
    EnterError(qp);
    return;
  }
  wc.length = static_cast<uint32_t>(total);
  if (hdr.grh) wc.flags |= abi::WcFlags::GRH;
  if (hdr.bth.OpCode == static_cast<uint8_t>(wire::BthOpcode::UD_SEND_ONLY_WITH_IMMEDIATE)) {
    wc.flags |= abi::WcFlags::IMMEDIATE;
    wc.immediate_data = htobe32(hdr.immdt.ImmediateData);
  }
  wc.src_qp = hdr.deth.SrcQP;
  wc.slid = hdr.lrh.SLID;
  wc.sl = hdr.lrh.SL;
  wc.dlid_path_bits = static_cast<uint8_t>(hdr.lrh.DLID & ((1u << port.lmc) - 1));
  wc.pkey_index = qp.pkey_index;
  CompleteRecv(qp, wc, hdr.bth.SE != 0);
}

abi::Status Hca::PostRecv(uint32_t qpn, const abi::RecvWorkRequest& wr) {
  QueuePair* qp = Qp(qpn);
  if (qp == nullptr) return abi::Status::INVALID_QP_HANDLE;
  if (qp->state == abi::QpState::RESET) return abi::Status::INVALID_QP_STATE;
  if (qp->rq.size() >= qp->caps.rq_depth) return abi::Status::INSUFFICIENT_RESOURCES;
  if (wr.num_sge > qp->caps.rq_sge || wr.num_sge > std::size(wr.sge))
    return abi::Status::INVALID_MAX_SGE;
  qp->rq.push_back(wr);
  if (qp->state == abi::QpState::ERROR) Flush(*qp);
  return abi::Status::SUCCESS;
}

}  // namespace softib::hca
