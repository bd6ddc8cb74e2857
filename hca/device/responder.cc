// The responder: checks an arriving packet against the port and the destination QP
// (IBA 9.6: DLID, QP, transport, P_Key, Q_Key) and executes it. UD places a datagram in
// a posted receive. RC (IBA 9.7.5) checks the PSN (duplicates answered again, a gap NAKed
// once), the opcode sequence and the remote rights, executes SEND / RDMA WRITE / RDMA READ
// / atomics, and answers with ACKs, NAKs, read responses and atomic ACKs. RC responses
// (ACKs and read responses) go to the completer. UC shares the placement code.
#include <endian.h>

#include <cstring>

#include "hca/device/hca.h"

namespace softib::hca {
namespace {

using abi::WcStatus;
using wire::BthOpcode;

// UD receive buffers start with room for a GRH whether or not the packet has one
// (IBA 10.8.2.3 / 11.4.1.1); the completion length counts those 40 bytes.
constexpr uint32_t kUdGrhRoom = wire::GRH::kSize;

uint8_t TransportOf(uint8_t opcode) { return opcode >> 5; }  // IBA 9.2.1: RC 0 UC 1 RD 2 UD 3
constexpr uint8_t kTransportRc = 0;
constexpr uint8_t kTransportUc = 1;
constexpr uint8_t kTransportUd = 3;

bool IsRcResponse(uint8_t op) {
  return op >= static_cast<uint8_t>(BthOpcode::RC_RDMA_READ_RESPONSE_FIRST) &&
         op <= static_cast<uint8_t>(BthOpcode::RC_ATOMIC_ACKNOWLEDGE);
}

constexpr std::size_t kMaxResponderResources = 16;

uint32_t ResponsePackets(uint32_t bytes, uint32_t mtu) {
  return bytes == 0 ? 1 : static_cast<uint32_t>((uint64_t{bytes} + mtu - 1) / mtu);
}

}  // namespace

void Hca::Receive(uint8_t port_number, std::span<const uint8_t> bytes, bool sealed) {
  if (port_number < 1 || port_number > ports_.size()) return;
  Port& in = port(port_number);
  PortCounters& counters = in.counters;
  const auto drop = [&](RecvDrop why) { ++counters.recv_drops[static_cast<std::size_t>(why)]; };
  if (in.shut_down) return;  // a disabled link hears nothing

  ParsedPacket packet;
  const DropReason parsed = ParsePacket(bytes, &packet, sealed);
  if (parsed != DropReason::kNone) {
    ++counters.parse_drops[static_cast<std::size_t>(parsed)];
    ++counters.rcv_errors;
    return;
  }
  // Only the next packet of the staged RDMA WRITE may find payload still staged.
  if (staged_writes_.pending() && !ContinuesStagedWrite(packet.hdr)) FlushStagedWrites();
  ++counters.rcv_packets;
  counters.rcv_data_words += (bytes.size() - 2) / 4;  // LRH..ICRC, as LRH:PktLen
  const PacketHeaders& hdr = packet.hdr;
  if (IsMulticastLid(hdr.lrh.DLID)) {
    ++counters.rcv_multicast_packets;
    if (!in.Active()) return drop(RecvDrop::kPortNotActive);
    return ReceiveMulticast(in, packet, nullptr);
  }
  ++counters.rcv_unicast_packets;
  // VL15 carries subnet management only, and QP0 hears nothing else (IBA 7.6.1: packets on
  // VL15 to another QP, or for QP0 on a data VL, are dropped).
  const bool vl15 = hdr.lrh.VL == 15;
  if (vl15 != (hdr.bth.DestQP == kSmiQpn)) {
    if (vl15) ++counters.vl15_dropped;
    return drop(RecvDrop::kWrongVl);
  }
  // Before the SM activates a port (Init, Armed) it carries SMPs only (IBA 7.2.1).
  if (!vl15 && !in.Active()) return drop(RecvDrop::kPortNotActive);
  // The permissive LID reaches any port, for directed-route SMPs only (IBA 14.2.2).
  const bool permissive = hdr.lrh.DLID == kPermissiveLid && vl15;
  if (!permissive && !in.AcceptsDlid(hdr.lrh.DLID)) return drop(RecvDrop::kWrongDlid);
  QueuePair* qp = DestinationQp(port_number, hdr.bth.DestQP);
  if (qp == nullptr && management_sink && hdr.bth.DestQP <= kGsiQpn)
    return ReceiveManagement(in, packet);
  if (qp == nullptr) {
    if (vl15) ++counters.vl15_dropped;
    return drop(RecvDrop::kUnknownQp);
  }
  const uint8_t transport = TransportOf(hdr.bth.OpCode);
  const bool rc = transport == kTransportRc && qp->type == abi::QpType::RC;
  const bool uc = transport == kTransportUc && qp->type == abi::QpType::UC;
  if (!rc && !uc && (transport != kTransportUd || !qp->IsDatagram()))
    return drop(RecvDrop::kWrongTransport);
  // The peer migrated (IBA 17.2.8): its first packet with MigReq on our alternate path
  // moves us there too.
  if ((rc || uc) && qp->CanReceive() && qp->Armed() && hdr.bth.M && port_number == qp->alt_port &&
      hdr.lrh.SLID == qp->alt_av.dlid)
    MigratePath(*qp);
  if (!qp->CanReceive() || qp->port != port_number) return drop(RecvDrop::kQpState);
  if (rc || uc) {
    const uint16_t qp_pkey = qp->pkey_index < in.pkeys.size() ? in.pkeys[qp->pkey_index] : 0;
    if (!PkeysMatch(hdr.bth.P_Key, qp_pkey)) {
      ++counters.pkey_violations;
      RaiseKeyTrap(in, smp::kTrapBadPKey, hdr, hdr.bth.P_Key);
      return drop(RecvDrop::kPkeyViolation);
    }
    // A connected QP hears only its peer (IBA 9.6.1.5.1: SLID checked against the path).
    if (hdr.lrh.SLID != qp->av.dlid) return drop(RecvDrop::kWrongSource);
    if (uc) return ReceiveUc(*qp, packet);
    if (IsRcResponse(hdr.bth.OpCode)) return ReceiveRcResponse(*qp, packet);
    return ReceiveRc(*qp, packet);
  }
  ReceiveDatagram(in, *qp, packet);
}

bool Hca::ContinuesStagedWrite(const PacketHeaders& hdr) const {
  using wire::BthOpcode;
  if (hdr.bth.DestQP != staged_writes_.owner()) return false;
  switch (static_cast<BthOpcode>(hdr.bth.OpCode)) {
    case BthOpcode::RC_RDMA_WRITE_MIDDLE:
    case BthOpcode::RC_RDMA_WRITE_LAST:
    case BthOpcode::RC_RDMA_WRITE_LAST_WITH_IMMEDIATE:
      return true;
    default:
      return false;
  }
}

void Hca::FlushStagedWrites() {
  uint32_t failed = 0;
  if (staged_writes_.Flush(&failed) || failed == 0) return;
  if (QueuePair* qp = Qp(failed)) qp->rc.resp.placement_failed = true;
}

QueuePair* Hca::DestinationQp(uint8_t port_number, uint32_t dest_qpn) {
  if (dest_qpn == kSmiQpn || dest_qpn == kGsiQpn)
    return Qp(kSpecialQpHandle | uint32_t{port_number} << 1 | dest_qpn);
  return Qp(dest_qpn);
}

void Hca::ReceiveDatagram(Port& in, QueuePair& qp, const ParsedPacket& packet) {
  PortCounters& counters = in.counters;
  const auto drop = [&](RecvDrop why) { ++counters.recv_drops[static_cast<std::size_t>(why)]; };
  const PacketHeaders& hdr = packet.hdr;
  // QP0 is exempt from partition and Q_Key enforcement: SMPs are guarded by the M_Key
  // (IBA 14.2.4). QP1 accepts any P_Key of the port's table and reports which one; other
  // QPs match their own. QP1's Q_Key is the well-known 0x80010000.
  uint16_t pkey_index = qp.pkey_index;
  if (qp.type == abi::QpType::GSI) {
    const std::optional<uint16_t> matched = GsiKeysMatch(in, hdr);
    if (!matched) return;
    pkey_index = *matched;
  } else if (qp.type != abi::QpType::SMI) {
    if (!PkeysMatch(hdr.bth.P_Key, qp.pkey_index < in.pkeys.size() ? in.pkeys[qp.pkey_index] : 0)) {
      ++counters.pkey_violations;
      RaiseKeyTrap(in, smp::kTrapBadPKey, hdr, hdr.bth.P_Key);
      return drop(RecvDrop::kPkeyViolation);
    }
    if (hdr.deth.Q_Key != qp.qkey) {
      ++counters.qkey_violations;
      RaiseKeyTrap(in, smp::kTrapBadQKey, hdr, hdr.deth.Q_Key);
      return drop(RecvDrop::kQkeyViolation);
    }
  }
  ReceiveUd(in, qp, packet, pkey_index);
}

std::optional<uint16_t> Hca::GsiKeysMatch(Port& in, const PacketHeaders& hdr) {
  PortCounters& counters = in.counters;
  for (std::size_t i = 0; i < in.pkeys.size(); ++i) {
    if (!PkeysMatch(hdr.bth.P_Key, in.pkeys[i])) continue;
    if (hdr.deth.Q_Key == kGsiQkey) return static_cast<uint16_t>(i);
    ++counters.qkey_violations;
    ++counters.recv_drops[static_cast<std::size_t>(RecvDrop::kQkeyViolation)];
    RaiseKeyTrap(in, smp::kTrapBadQKey, hdr, hdr.deth.Q_Key);
    return std::nullopt;
  }
  ++counters.pkey_violations;
  ++counters.recv_drops[static_cast<std::size_t>(RecvDrop::kPkeyViolation)];
  RaiseKeyTrap(in, smp::kTrapBadPKey, hdr, hdr.bth.P_Key);
  return std::nullopt;
}

void Hca::ReceiveUd(Port& port, QueuePair& qp, const ParsedPacket& packet, uint16_t pkey_index) {
  PortCounters& counters = port.counters;
  const PacketHeaders& hdr = packet.hdr;
  if (packet.payload.size() > port.mtu_bytes()) {
    ++counters.recv_drops[static_cast<std::size_t>(RecvDrop::kTooLong)];
    return;
  }
  // UD drops a message that finds no receive posted (IBA 9.8.3: no RNR on UD).
  if (!RecvAvailable(qp)) {
    ++counters.recv_drops[static_cast<std::size_t>(RecvDrop::kNoReceiveWqe)];
    // The PMA's resource drops (IBA 16.1.3.5): SMPs QP0 and GMPs QP1 had no room for.
    if (qp.type == abi::QpType::SMI) ++counters.vl15_dropped;
    if (qp.type == abi::QpType::GSI) ++counters.qp1_dropped;
    return;
  }
  const abi::RecvWorkRequest wr = TakeRecv(qp);

  abi::WorkCompletion wc{};
  wc.wr_id = wr.wr_id;
  wc.opcode = abi::WcOpcode::RECV;
  const uint64_t total = kUdGrhRoom + packet.payload.size();
  std::vector<ScatterSegment> plan;
  wc.status = PlanScatter(mrs_, qp.pd, std::span(wr.sge, wr.num_sge), total, &plan);
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
  if (hdr.bth.OpCode == static_cast<uint8_t>(BthOpcode::UD_SEND_ONLY_WITH_IMMEDIATE)) {
    wc.flags |= abi::WcFlags::IMMEDIATE;
    wc.immediate_data = htobe32(hdr.immdt.ImmediateData);
  }
  wc.src_qp = hdr.deth.SrcQP;
  wc.slid = hdr.lrh.SLID;
  wc.sl = hdr.lrh.SL;
  wc.dlid_path_bits = static_cast<uint8_t>(hdr.lrh.DLID & ((1u << port.lmc) - 1));
  wc.pkey_index = pkey_index;
  CompleteRecv(qp, wc, hdr.bth.SE != 0);
}

// --- RC responder -------------------------------------------------------------------------

void Hca::ReceiveRc(QueuePair& qp, const ParsedPacket& packet) {
  RcResponder& s = qp.rc.resp;
  const PacketHeaders& hdr = packet.hdr;
  const uint32_t psn = hdr.bth.PSN;
  const int32_t ahead = PsnDiff(psn, qp.rq_psn);
  if (ahead < 0) return ReceiveRcDuplicate(qp, packet);
  if (ahead > 0) {
    // A gap: one NAK per expected PSN, the rest dropped silently (IBA 9.7.5.1.3).
    if (!s.nak_sent) SendAck(qp, qp.rq_psn, aeth::kNak | aeth::kNakPsnSequence);
    s.nak_sent = true;
    return;
  }
  s.nak_sent = false;

  using Kind = RcResponder::Kind;
  const RequestShape shape = ShapeOf(hdr.bth.OpCode);
  const uint32_t mtu = MtuBytes(qp.path_mtu);
  const std::size_t length = packet.payload.size();
  // The opcode must continue the message in progress, or start one (IBA 9.7.5.1.5); the
  // QP must allow the remote operation (IBA 10.6.3.2); FIRST and MIDDLE packets are full.
  const bool continues = !shape.first && shape.kind == s.in_progress;
  const bool starts = shape.first && s.in_progress == Kind::kNone;
  const uint8_t op = hdr.bth.OpCode;
  const auto needs = [&](abi::AccessFlags right) { return !abi::HasAny(qp.access, right); };
  const bool forbidden = (shape.kind == Kind::kWrite && needs(abi::AccessFlags::REMOTE_WRITE)) ||
                         (op == static_cast<uint8_t>(BthOpcode::RC_RDMA_READ_REQUEST) &&
                          needs(abi::AccessFlags::REMOTE_READ)) ||
                         ((op == static_cast<uint8_t>(BthOpcode::RC_COMPARE_SWAP) ||
                           op == static_cast<uint8_t>(BthOpcode::RC_FETCH_ADD)) &&
                          needs(abi::AccessFlags::REMOTE_ATOMIC));
  if (!shape.known || !(continues || starts) || forbidden || length > mtu ||
      (!shape.last && length != mtu))
    return ResponderFatal(qp, psn, aeth::kNakInvalidRequest, WcStatus::LOCAL_QP_OP_ERR);

  // Anything that consumes a receive finds one posted, or is refused for now (RNR NAK,
  // IBA 9.7.5.2.8) before any of its state changes.
  const bool consumes_recv =
      (shape.kind == Kind::kSend && shape.first) || (shape.kind == Kind::kWrite && shape.immediate);
  if (consumes_recv && !s.recv && !RecvAvailable(qp)) {
    SendAck(qp, psn, aeth::kRnrNak | (qp.min_rnr_timer & aeth::kValueMask));
    s.nak_sent = true;  // what follows in this burst is out of sequence: drop it quietly
    return;
  }

  if (shape.kind == Kind::kNone) {
    if (op == static_cast<uint8_t>(BthOpcode::RC_RDMA_READ_REQUEST)) {
      const wire::RETH& reth = hdr.reth;
      if (reth.DMALen > kMaxMessageBytes)
        return ResponderFatal(qp, psn, aeth::kNakInvalidRequest, WcStatus::SUCCESS);
      const MemoryRegion* mr = nullptr;
      if (reth.DMALen != 0 &&
          mrs_.CheckRemote(reth.R_Key, qp.pd, reth.VA, reth.DMALen, abi::AccessFlags::REMOTE_READ,
                           &mr, qp.handle) != AccessError::kNone)
        return ResponderFatal(qp, psn, aeth::kNakRemoteAccess, WcStatus::SUCCESS);
      const uint32_t responses = ResponsePackets(reth.DMALen, mtu);
      s.resources.push_back({psn, false, 0});
      qp.rq_psn = PsnAdd(psn, responses);
      s.msn = PsnAdd(s.msn, 1);
      RespondRead(qp, psn, reth);
    } else {
      const wire::AtomicETH& a = hdr.atomic_eth;
      if (a.VA % sizeof(uint64_t) != 0)  // IBA 9.4.5: atomics are naturally aligned
        return ResponderFatal(qp, psn, aeth::kNakInvalidRequest, WcStatus::SUCCESS);
      const MemoryRegion* mr = nullptr;
      uint64_t value = 0;
      std::array<uint8_t, sizeof(uint64_t)> bytes{};
      if (mrs_.CheckRemote(a.R_Key, qp.pd, a.VA, sizeof value, abi::AccessFlags::REMOTE_ATOMIC, &mr,
                           qp.handle) != AccessError::kNone ||
          !mr->Read(a.VA, bytes))
        return ResponderFatal(qp, psn, aeth::kNakRemoteAccess, WcStatus::SUCCESS);
      std::memcpy(&value, bytes.data(), sizeof value);  // the responder CPU's view
      const uint64_t original = value;
      if (op == static_cast<uint8_t>(BthOpcode::RC_FETCH_ADD))
        value += a.SwapAddData;
      else if (value == a.CompareData)
        value = a.SwapAddData;
      std::memcpy(bytes.data(), &value, sizeof value);
      if (!mr->Write(a.VA, bytes))
        return ResponderFatal(qp, psn, aeth::kNakRemoteOperational, WcStatus::SUCCESS);
      s.resources.push_back({psn, true, original});
      qp.rq_psn = PsnAdd(psn, 1);
      s.msn = PsnAdd(s.msn, 1);
      SendAtomicAck(qp, psn, original);
    }
    while (s.resources.size() >
           std::max<std::size_t>(kMaxResponderResources, qp.max_dest_rd_atomic))
      s.resources.pop_front();
    return;
  }

  if (shape.invalidate && !RemoteInvalidate(qp, hdr.ieth.R_Key)) {
    // The key to invalidate is not a type 2 window this QP may invalidate: the message
    // fails as a remote access violation, and the receive it lands in reports it.
    if (!s.recv) s.recv = TakeRecv(qp);
    return ResponderFatal(qp, psn, aeth::kNakRemoteAccess, WcStatus::LOCAL_ACCESS_ERR);
  }
  const Placement placed = PlacePacket(qp, shape, packet);
  if (placed.nak_code != kPlaced)
    return ResponderFatal(qp, psn, placed.nak_code, placed.recv_status);
  qp.rq_psn = PsnAdd(psn, 1);
  if (shape.last) FinishMessage(qp, shape, hdr);
  if (hdr.bth.A != 0) SendAck(qp, psn, aeth::kAck | aeth::kInvalidCredits);
}

Hca::Placement Hca::PlacePacket(QueuePair& qp, const RequestShape& shape,
                                const ParsedPacket& packet) {
  using Kind = RcResponder::Kind;
  RcResponder& s = qp.rc.resp;
  const PacketHeaders& hdr = packet.hdr;
  const std::size_t length = packet.payload.size();
  if (shape.kind == Kind::kSend) {
    if (shape.first) {
      s.recv = TakeRecv(qp);
      uint64_t capacity = 0;
      for (uint32_t i = 0; i < s.recv->num_sge; ++i) capacity += s.recv->sge[i].length;
      if (PlanScatter(mrs_, qp.pd, std::span(s.recv->sge, s.recv->num_sge), capacity, &s.plan) !=
          WcStatus::SUCCESS)
        return {aeth::kNakRemoteOperational, WcStatus::LOCAL_PROT_ERR};
      s.offset = 0;
    }
    if (s.offset + length > PlanCapacity(s.plan))
      return {aeth::kNakInvalidRequest, WcStatus::LOCAL_LENGTH_ERR};
    if (!WriteAt(s.plan, s.offset, packet.payload))
      return {aeth::kNakRemoteOperational, WcStatus::LOCAL_PROT_ERR};
    s.offset += length;
  } else {
    if (shape.first) {
      const wire::RETH& reth = hdr.reth;
      const MemoryRegion* mr = nullptr;
      // A zero-length write names no memory, so its R_Key is not checked (IBA 9.7.4.1.4).
      if (reth.DMALen != 0 &&
          mrs_.CheckRemote(reth.R_Key, qp.pd, reth.VA, reth.DMALen, abi::AccessFlags::REMOTE_WRITE,
                           &mr, qp.handle) != AccessError::kNone) {
        // An RDMA WRITE with immediate that the R_Key refuses still consumes the receive
        // it would have completed, which reports the violation (IBA's local access error).
        if (qp.type == abi::QpType::RC && shape.immediate && shape.last) {
          s.recv = TakeRecv(qp);
          return {aeth::kNakRemoteAccess, WcStatus::LOCAL_ACCESS_ERR};
        }
        return {aeth::kNakRemoteAccess, WcStatus::SUCCESS};
      }
      s.write_va = reth.VA;
      s.write_rkey = reth.R_Key;
      s.write_length = reth.DMALen;
      s.offset = 0;
    }
    if (s.offset + length > s.write_length || (shape.last && s.offset + length != s.write_length))
      return {aeth::kNakInvalidRequest, WcStatus::SUCCESS};
    if (shape.first) s.placement_failed = false;
    if (length != 0) {
      // Checked per packet; placed through the combiner (write_combiner.h).
      const uint64_t va = s.write_va + s.offset;
      const MemoryRegion* mr = nullptr;
      if (mrs_.CheckRemote(s.write_rkey, qp.pd, va, length, abi::AccessFlags::REMOTE_WRITE, &mr,
                           qp.handle) != AccessError::kNone ||
          !staged_writes_.Write(qp.handle, mr->dma, mr->addr + (va - mr->iova), packet.payload))
        return {aeth::kNakRemoteAccess, WcStatus::SUCCESS};
    }
    if (shape.last) {
      // The ACK or the completion that follows makes the data visible: place it first.
      if (staged_writes_.owner() == qp.handle) FlushStagedWrites();
      if (s.placement_failed) {
        s.placement_failed = false;
        return {aeth::kNakRemoteAccess, WcStatus::SUCCESS};
      }
    }
    s.offset += length;
  }
  s.in_progress = shape.last ? Kind::kNone : shape.kind;
  return {kPlaced, WcStatus::SUCCESS};
}

void Hca::FinishMessage(QueuePair& qp, const RequestShape& shape, const PacketHeaders& hdr) {
  using Kind = RcResponder::Kind;
  RcResponder& s = qp.rc.resp;
  s.msn = PsnAdd(s.msn, 1);
  if (shape.kind == Kind::kSend || shape.immediate) {
    abi::RecvWorkRequest recv;
    if (s.recv) {
      recv = *s.recv;
      s.recv.reset();
    } else {
      recv = TakeRecv(qp);
    }
    abi::WorkCompletion wc{};
    wc.wr_id = recv.wr_id;
    wc.opcode = shape.kind == Kind::kSend ? abi::WcOpcode::RECV : abi::WcOpcode::RECV_RDMA_WRITE;
    wc.length = static_cast<uint32_t>(s.offset);
    if (shape.immediate) {
      wc.flags |= abi::WcFlags::IMMEDIATE;
      wc.immediate_data = htobe32(hdr.immdt.ImmediateData);
    }
    if (shape.invalidate) {  // the window was invalidated on arrival (RemoteInvalidate)
      wc.flags |= abi::WcFlags::INVALIDATE;
      wc.immediate_data = hdr.ieth.R_Key;
    }
    wc.src_qp = qp.dest_qpn;
    wc.slid = hdr.lrh.SLID;
    wc.sl = hdr.lrh.SL;
    wc.pkey_index = qp.pkey_index;
    CompleteRecv(qp, wc, hdr.bth.SE != 0);
  }
}

void Hca::ReceiveUc(QueuePair& qp, const ParsedPacket& packet) {
  // UC (IBA 9.8.1, 9.8.3): no ACKs, no NAKs, no RNR. A gap in the PSNs loses the message
  // in progress (its receive is kept for the next one) and the responder resynchronises
  // on the next FIRST or ONLY; anything it cannot place is dropped silently.
  using Kind = RcResponder::Kind;
  RcResponder& s = qp.rc.resp;
  const PacketHeaders& hdr = packet.hdr;
  const auto abandon = [&] {
    if (s.recv) UntakeRecv(qp, *s.recv);
    s.recv.reset();
    s.in_progress = Kind::kNone;
  };
  const uint8_t op = hdr.bth.OpCode & 0x1F;
  const RequestShape shape =
      op <= static_cast<uint8_t>(BthOpcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE) ? ShapeOf(op)
                                                                               : RequestShape{};
  const bool in_sequence = hdr.bth.PSN == qp.rq_psn;
  qp.rq_psn = PsnAdd(hdr.bth.PSN, 1);
  if (!in_sequence || (shape.first && s.in_progress != Kind::kNone)) abandon();
  const bool continues = !shape.first && shape.kind == s.in_progress;
  const bool starts = shape.first && s.in_progress == Kind::kNone;
  const uint32_t mtu = MtuBytes(qp.path_mtu);
  const std::size_t length = packet.payload.size();
  if (!shape.known || shape.kind == Kind::kNone || !(continues || starts) || length > mtu ||
      (!shape.last && length != mtu) ||
      (shape.kind == Kind::kWrite && !abi::HasAny(qp.access, abi::AccessFlags::REMOTE_WRITE)))
    return abandon();
  const bool consumes_recv =
      (shape.kind == Kind::kSend && shape.first) || (shape.kind == Kind::kWrite && shape.immediate);
  if (consumes_recv && !s.recv && !RecvAvailable(qp)) return abandon();
  const Placement placed = PlacePacket(qp, shape, packet);
  if (placed.nak_code == kPlaced) {
    if (shape.last) FinishMessage(qp, shape, hdr);
    return;
  }
  if (placed.recv_status != WcStatus::SUCCESS) {
    // The receive cannot hold the message: it completes in error and the QP goes to Error,
    // as on UD (IBA 10.8.3.4: responder local errors).
    abi::WorkCompletion wc{};
    wc.wr_id = s.recv ? s.recv->wr_id : 0;
    wc.opcode = abi::WcOpcode::RECV;
    wc.status = placed.recv_status;
    s.recv.reset();
    CompleteRecv(qp, wc, false);
    EnterError(qp);
    return;
  }
  abandon();  // a remote key or length fault of the sender: the message is dropped
}

void Hca::ReceiveRcDuplicate(QueuePair& qp, const ParsedPacket& packet) {
  // IBA 9.7.5.1.3: a duplicate is never executed twice. SEND and WRITE are answered with
  // an ACK of everything so far; a READ is executed again from its (possibly shortened)
  // request; an atomic gets the result saved the first time.
  RcResponder& s = qp.rc.resp;
  const PacketHeaders& hdr = packet.hdr;
  const uint8_t op = hdr.bth.OpCode;
  if (op == static_cast<uint8_t>(BthOpcode::RC_RDMA_READ_REQUEST)) {
    const wire::RETH& reth = hdr.reth;
    const MemoryRegion* mr = nullptr;
    if (reth.DMALen == 0 ||
        mrs_.CheckRemote(reth.R_Key, qp.pd, reth.VA, reth.DMALen, abi::AccessFlags::REMOTE_READ,
                         &mr, qp.handle) == AccessError::kNone)
      RespondRead(qp, hdr.bth.PSN, reth);
    return;
  }
  if (op == static_cast<uint8_t>(BthOpcode::RC_COMPARE_SWAP) ||
      op == static_cast<uint8_t>(BthOpcode::RC_FETCH_ADD)) {
    for (const RcResponderResource& r : s.resources)
      if (r.atomic && r.psn == hdr.bth.PSN) return SendAtomicAck(qp, r.psn, r.original);
    return;  // too old to answer: the requester has moved on long ago
  }
  SendAck(qp, PsnAdd(qp.rq_psn, kPsnModulo - 1), aeth::kAck | aeth::kInvalidCredits);
}

void Hca::RespondRead(QueuePair& qp, uint32_t psn, const wire::RETH& reth) {
  const uint32_t mtu = MtuBytes(qp.path_mtu);
  const uint32_t count = ResponsePackets(reth.DMALen, mtu);
  Port& out = port(qp.port);
  std::vector<uint8_t> payload;
  for (uint32_t k = 0; k < count; ++k) {
    const uint64_t offset = uint64_t{k} * mtu;
    payload.resize(std::min<uint64_t>(mtu, reth.DMALen - offset));
    if (!payload.empty() && ReadRemote(mrs_, reth.R_Key, qp.pd, reth.VA + offset, payload,
                                       qp.handle) != AccessError::kNone)
      return;  // memory vanished mid-read: the requester's timer takes it from here
    PacketHeaders hdr = ConnectedHeaders(qp);
    hdr.bth.OpCode =
        static_cast<uint8_t>(count == 1       ? BthOpcode::RC_RDMA_READ_RESPONSE_ONLY
                             : k == 0         ? BthOpcode::RC_RDMA_READ_RESPONSE_FIRST
                             : k + 1 == count ? BthOpcode::RC_RDMA_READ_RESPONSE_LAST
                                              : BthOpcode::RC_RDMA_READ_RESPONSE_MIDDLE);
    hdr.bth.PSN = PsnAdd(psn, k);
    hdr.aeth.Syndrome = aeth::kAck | aeth::kInvalidCredits;
    hdr.aeth.MSN = qp.rc.resp.msn;
    Transmit(out, hdr, payload);
  }
}

void Hca::SendAck(QueuePair& qp, uint32_t psn, uint8_t syndrome) {
  Port& out = port(qp.port);
  PacketHeaders hdr = ConnectedHeaders(qp);
  hdr.bth.OpCode = static_cast<uint8_t>(BthOpcode::RC_ACKNOWLEDGE);
  hdr.bth.PSN = psn;
  hdr.aeth.Syndrome = syndrome;
  hdr.aeth.MSN = qp.rc.resp.msn;
  Transmit(out, hdr, {});
}

void Hca::SendAtomicAck(QueuePair& qp, uint32_t psn, uint64_t original) {
  Port& out = port(qp.port);
  PacketHeaders hdr = ConnectedHeaders(qp);
  hdr.bth.OpCode = static_cast<uint8_t>(BthOpcode::RC_ATOMIC_ACKNOWLEDGE);
  hdr.bth.PSN = psn;
  hdr.aeth.Syndrome = aeth::kAck | aeth::kInvalidCredits;
  hdr.aeth.MSN = qp.rc.resp.msn;
  hdr.atomic_ack_eth.OrigRemoteData = original;
  Transmit(out, hdr, {});
}

void Hca::ResponderFatal(QueuePair& qp, uint32_t psn, uint8_t nak_code, WcStatus recv_status) {
  SendAck(qp, psn, aeth::kNak | nak_code);
  RcResponder& s = qp.rc.resp;
  if (s.recv && recv_status != WcStatus::SUCCESS) {
    abi::WorkCompletion wc{};
    wc.wr_id = s.recv->wr_id;
    wc.opcode = abi::WcOpcode::RECV;
    wc.status = recv_status;
    s.recv.reset();
    CompleteRecv(qp, wc, false);
  }
  EnterError(qp);
}

abi::Status Hca::PostRecv(uint32_t qpn, const abi::RecvWorkRequest& wr) {
  QueuePair* qp = Qp(qpn);
  if (qp == nullptr) return abi::Status::INVALID_QP_HANDLE;
  if (qp->srq != 0) return abi::Status::INVALID_SETTING;  // its receives come from the SRQ
  if (qp->state == abi::QpState::RESET) return abi::Status::INVALID_QP_STATE;
  if (qp->rq.size() >= qp->caps.rq_depth) return abi::Status::INSUFFICIENT_RESOURCES;
  if (wr.num_sge > qp->caps.rq_sge || wr.num_sge > std::size(wr.sge))
    return abi::Status::INVALID_MAX_SGE;
  qp->rq.push_back(wr);
  if (qp->state == abi::QpState::ERROR) Flush(*qp);
  return abi::Status::SUCCESS;
}

}  // namespace softib::hca
