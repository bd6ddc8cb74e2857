// The requester: turns send work requests into packets. UD: one SEND_ONLY packet per
// request (IBA 9.8). UC: RC's packets without acknowledgements. RC (IBA 9.7): a request takes
// consecutive PSNs, one per packet of path-MTU size (reads: one per response packet), and stays on
// the send queue until the completer retires it; the same code rebuilds any packet for a
// retransmission.
#include <endian.h>

#include <memory>

#include "hca/device/hca.h"

namespace softib::hca {

using abi::QpState;
using abi::WcStatus;
using abi::WrType;
using wire::BthOpcode;

namespace {

uint8_t Op(BthOpcode op) { return static_cast<uint8_t>(op); }

bool Has(const abi::SendWorkRequest& wr, abi::SendFlags flag) {
  return abi::HasAny(wr.send_flags, flag);
}

// Opcode of packet `index` of `count` of a SEND or RDMA WRITE (IBA 9.2, table 35).
uint8_t RcRequestOpcode(const abi::SendWorkRequest& wr, uint32_t index, uint32_t count) {
  const bool first = index == 0, last = index + 1 == count;
  const bool imm = Has(wr, abi::SendFlags::IMMEDIATE);
  if (wr.wr_type == WrType::RDMA_WRITE) {
    if (first && last)
      return Op(imm ? BthOpcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE : BthOpcode::RC_RDMA_WRITE_ONLY);
    if (first) return Op(BthOpcode::RC_RDMA_WRITE_FIRST);
    if (!last) return Op(BthOpcode::RC_RDMA_WRITE_MIDDLE);
    return Op(imm ? BthOpcode::RC_RDMA_WRITE_LAST_WITH_IMMEDIATE : BthOpcode::RC_RDMA_WRITE_LAST);
  }
  const bool inv = wr.wr_type == WrType::SEND_WITH_INVALIDATE;
  if (first && last)
    return Op(inv   ? BthOpcode::RC_SEND_ONLY_WITH_INVALIDATE
              : imm ? BthOpcode::RC_SEND_ONLY_WITH_IMMEDIATE
                    : BthOpcode::RC_SEND_ONLY);
  if (first) return Op(BthOpcode::RC_SEND_FIRST);
  if (!last) return Op(BthOpcode::RC_SEND_MIDDLE);
  return Op(inv   ? BthOpcode::RC_SEND_LAST_WITH_INVALIDATE
            : imm ? BthOpcode::RC_SEND_LAST_WITH_IMMEDIATE
                  : BthOpcode::RC_SEND_LAST);
}

// UC opcodes are the RC ones with the transport bits 001 (IBA 9.2.1, table 35).
constexpr uint8_t kUcOpcodeBase = 0x20;

uint32_t PacketsFor(uint64_t bytes, uint32_t mtu) {
  return bytes == 0 ? 1 : static_cast<uint32_t>((bytes + mtu - 1) / mtu);
}

}  // namespace

abi::Status Hca::PostSend(uint32_t qpn, const abi::SendWorkRequest& wr) {
  FlushStagedWrites();  // a LOCAL_INV or a bind must not overtake bytes already accepted
  QueuePair* qp = Qp(qpn);
  if (qp == nullptr) return abi::Status::INVALID_QP_HANDLE;
  // The send queue accepts work from RTS on (IBA 10.8.2.2: posting in Reset, Init or RTR is
  // an immediate error); in SQE and Error it is accepted and flushed.
  if (qp->state == QpState::RESET || qp->state == QpState::INIT || qp->state == QpState::RTR)
    return abi::Status::INVALID_QP_STATE;
  const bool connected = qp->type == abi::QpType::RC || qp->type == abi::QpType::UC;
  const std::size_t queued = connected ? qp->rc.req.wqes.size() : qp->sq.size();
  if (queued >= qp->caps.sq_depth) return abi::Status::INSUFFICIENT_RESOURCES;
  const bool is_inline = Has(wr, abi::SendFlags::INLINE);
  if (is_inline ? wr.inline_length > qp->caps.max_inline_data || wr.inline_length > sizeof(wr.sge)
                : wr.num_sge > qp->caps.sq_sge || wr.num_sge > std::size(wr.sge))
    return is_inline ? abi::Status::INVALID_PARAMETER : abi::Status::INVALID_MAX_SGE;
  if (qp->IsDatagram() && wr.wr_type != WrType::SEND && wr.wr_type != WrType::NOP)
    return abi::Status::INVALID_WR_TYPE;
  if (qp->type == abi::QpType::GSI && wr.pkey_index >= port(qp->port).pkeys.size())
    return abi::Status::INVALID_SETTING;
  if (connected) return PostSendRc(*qp, wr);
  qp->sq.push_back(wr);
  ProgressSend(*qp);
  return abi::Status::SUCCESS;
}

abi::Status Hca::PostSendRc(QueuePair& qp, const abi::SendWorkRequest& wr) {
  switch (wr.wr_type) {
    case WrType::SEND:
    case WrType::SEND_WITH_INVALIDATE:
    case WrType::RDMA_WRITE:
      break;
    case WrType::RDMA_READ:
    case WrType::COMPARE_SWAP:
    case WrType::FETCH_ADD:
      // UC has no responses to carry data back (IBA 9.8: SEND and RDMA WRITE only).
      if (qp.type == abi::QpType::UC) return abi::Status::INVALID_WR_TYPE;
      // Data comes back into these requests' buffers: inline data and immediates mean nothing.
      if (Has(wr, abi::SendFlags::INLINE) || Has(wr, abi::SendFlags::IMMEDIATE))
        return abi::Status::INVALID_PARAMETER;
      break;
    case WrType::NOP:
    case WrType::LOCAL_INV:
    case WrType::BIND_MW:
      break;  // executed by the HCA itself, in order with the rest (mw.cc)
    default:
      return abi::Status::INVALID_WR_TYPE;
  }
  if (wr.wr_type == WrType::SEND_WITH_INVALIDATE && qp.type == abi::QpType::UC)
    return abi::Status::INVALID_WR_TYPE;  // no UC opcode carries an IETH
  if (wr.wr_type == WrType::SEND_WITH_INVALIDATE && Has(wr, abi::SendFlags::IMMEDIATE))
    return abi::Status::INVALID_PARAMETER;  // the IETH and ImmDt never travel together
  RcSendWqe wqe;
  wqe.wr = wr;
  qp.rc.req.wqes.push_back(wqe);
  ProgressSend(qp);
  return abi::Status::SUCCESS;
}

void Hca::ProgressSend(QueuePair& qp) {
  if (qp.state == QpState::SQE || qp.state == QpState::ERROR) return FlushSend(qp);
  if (qp.type == abi::QpType::RC || qp.type == abi::QpType::UC) return ProgressSendRc(qp);
  while (qp.state == QpState::RTS && !qp.sq.empty()) {
    const abi::SendWorkRequest wr = qp.sq.front();
    qp.sq.pop_front();
    uint32_t length = 0;
    const WcStatus status = wr.wr_type == WrType::NOP ? WcStatus::SUCCESS : SendUd(qp, wr, &length);
    CompleteSend(qp, wr, status, length);
    // A UD requester error stops the send queue only (IBA 10.8.3.3: the QP enters SQE).
    if (status != WcStatus::SUCCESS) EnterSqError(qp);
  }
}

void Hca::ProgressSendRc(QueuePair& qp) {
  RcRequester& req = qp.rc.req;
  // Nothing new goes out while an RNR NAK is waited out: it would only meet sequence NAKs.
  while (qp.state == QpState::RTS && !req.stopped && req.rnr_deadline == 0 &&
         req.next < req.wqes.size()) {
    RcSendWqe& wqe = req.wqes[req.next];
    const bool fenced = Has(wqe.wr, abi::SendFlags::FENCE);
    if (fenced || wqe.IsReadOrAtomic()) {
      uint32_t outstanding = 0;
      for (std::size_t i = 0; i < req.next; ++i)
        if (req.wqes[i].IsReadOrAtomic() && !req.wqes[i].done) ++outstanding;
      // A fenced request waits for every earlier read and atomic (IBA 10.8.3.3); reads and
      // atomics in flight are bounded by the initiator depth (max_rd_atomic; 0 taken as 1).
      if (fenced && outstanding != 0) break;
      if (wqe.IsReadOrAtomic() && outstanding >= std::max<uint32_t>(1, qp.max_rd_atomic)) break;
    }
    const WcStatus status = StartRc(qp, wqe);
    ++req.next;
    // UC promises nothing past the wire: the request is complete once sent (IBA 9.8.2).
    // Local operations are complete once executed.
    if (qp.type == abi::QpType::UC || wqe.num_psns == 0) wqe.done = true;
    if (status != WcStatus::SUCCESS) {
      // A local error completes this request once those before it retire, then the QP
      // goes to Error (IBA 10.8.3.3: requester local errors are class B).
      wqe.started = true;
      wqe.num_psns = 0;
      wqe.done = true;
      wqe.status = status;
      req.stopped = true;
    }
  }
  RetireRc(qp);
}

WcStatus Hca::StartRc(QueuePair& qp, RcSendWqe& wqe) {
  const abi::SendWorkRequest& wr = wqe.wr;
  if (wr.wr_type == WrType::NOP || wr.wr_type == WrType::LOCAL_INV ||
      wr.wr_type == WrType::BIND_MW) {
    wqe.started = true;
    wqe.num_psns = 0;
    wqe.first_psn = qp.sq_psn;
    if (wr.wr_type == WrType::NOP) return WcStatus::SUCCESS;
    if (wr.wr_type == WrType::LOCAL_INV) return ExecuteLocalInvalidate(qp, wr.invalidate_rkey);
    return ExecuteBind(qp, wr, wqe.type1_bind);
  }
  const uint32_t mtu = MtuBytes(qp.path_mtu);
  uint64_t total = 0;
  if (Has(wr, abi::SendFlags::INLINE)) {
    total = wr.inline_length;
  } else {
    for (uint32_t i = 0; i < wr.num_sge; ++i) total += wr.sge[i].length;
  }
  if (total > kMaxMessageBytes) return WcStatus::LOCAL_LENGTH_ERR;
  switch (wr.wr_type) {
    case WrType::RDMA_READ: {
      std::vector<ScatterSegment> plan;
      const WcStatus planned =
          PlanScatter(mrs_, qp.pd, std::span(wr.sge, wr.num_sge), total, &plan);
      if (planned != WcStatus::SUCCESS) return planned;
      wqe.num_psns = PacketsFor(total, mtu);
      break;
    }
    case WrType::COMPARE_SWAP:
    case WrType::FETCH_ADD: {
      std::vector<ScatterSegment> plan;
      total = sizeof(uint64_t);
      if (wr.num_sge == 0 || PlanScatter(mrs_, qp.pd, std::span(wr.sge, wr.num_sge), total,
                                         &plan) != WcStatus::SUCCESS)
        return WcStatus::LOCAL_PROT_ERR;
      wqe.num_psns = 1;
      break;
    }
    default:
      if (!Has(wr, abi::SendFlags::INLINE)) {
        for (uint32_t i = 0; i < wr.num_sge; ++i) {
          const MemoryRegion* mr = nullptr;
          // Reading local memory needs no right beyond a valid L_Key (IBA 10.6.3.1).
          if (mrs_.CheckLocal(wr.sge[i].lkey, qp.pd, wr.sge[i].vaddr, wr.sge[i].length,
                              abi::AccessFlags{}, &mr) != AccessError::kNone)
            return WcStatus::LOCAL_PROT_ERR;
        }
      }
      wqe.num_psns = PacketsFor(total, mtu);
  }
  wqe.total = total;
  wqe.first_psn = qp.sq_psn;
  qp.sq_psn = PsnAdd(qp.sq_psn, wqe.num_psns);
  wqe.started = true;
  // A read is one request packet however many responses it asks for.
  if (wqe.IsReadOrAtomic()) {
    TransmitRc(qp, wqe, 0);
  } else {
    TransmitRcMessage(qp, wqe);
  }
  if (qp.type == abi::QpType::RC && qp.rc.req.ack_deadline == 0) ArmAckTimer(qp);
  return WcStatus::SUCCESS;
}

WcStatus Hca::ReadLocal(const QueuePair& qp, const abi::SendWorkRequest& wr, uint64_t offset,
                        std::span<uint8_t> out) {
  if (Has(wr, abi::SendFlags::INLINE)) {
    const auto* data = reinterpret_cast<const uint8_t*>(wr.sge);
    std::copy(data + offset, data + offset + out.size(), out.begin());
    return WcStatus::SUCCESS;
  }
  for (uint32_t i = 0; i < wr.num_sge && !out.empty(); ++i) {
    const abi::LocalDataSegment& sge = wr.sge[i];
    if (offset >= sge.length) {
      offset -= sge.length;
      continue;
    }
    const std::size_t n = std::min<uint64_t>(sge.length - offset, out.size());
    const MemoryRegion* mr = nullptr;
    if (mrs_.CheckLocal(sge.lkey, qp.pd, sge.vaddr + offset, n, abi::AccessFlags{}, &mr) !=
            AccessError::kNone ||
        !mr->Read(sge.vaddr + offset, out.first(n)))
      return WcStatus::LOCAL_PROT_ERR;
    out = out.subspan(n);
    offset = 0;
  }
  return out.empty() ? WcStatus::SUCCESS : WcStatus::LOCAL_LENGTH_ERR;
}

std::span<const uint8_t> Hca::DirectLocal(const QueuePair& qp, const abi::SendWorkRequest& wr,
                                          uint64_t offset, uint64_t length) const {
  if (Has(wr, abi::SendFlags::INLINE)) return {};
  for (uint32_t i = 0; i < wr.num_sge; ++i) {
    const abi::LocalDataSegment& sge = wr.sge[i];
    if (offset >= sge.length) {
      offset -= sge.length;
      continue;
    }
    if (length > sge.length - offset) return {};  // crosses into the next SGE
    const MemoryRegion* mr = nullptr;
    if (mrs_.CheckLocal(sge.lkey, qp.pd, sge.vaddr + offset, length, abi::AccessFlags{}, &mr) !=
        AccessError::kNone)
      return {};
    const uint8_t* at = mr->dma->Direct(mr->addr + (sge.vaddr + offset - mr->iova));
    if (at == nullptr) return {};
    return {at, static_cast<std::size_t>(length)};
  }
  return {};
}

void Hca::TransmitRcMessage(QueuePair& qp, const RcSendWqe& wqe) {
  const uint32_t mtu = MtuBytes(qp.path_mtu);
  if (Has(wqe.wr, abi::SendFlags::INLINE) || wqe.num_psns <= 1) {
    for (uint32_t i = 0; i < wqe.num_psns; ++i) TransmitRc(qp, wqe, i);
    return;
  }
  const uint32_t per_window = std::max<uint32_t>(1, kGatherWindowBytes / mtu);
  // Not zero-filled: ReadLocal overwrites all of it or fails (and then it is not used).
  const std::size_t window_bytes = std::min<uint64_t>(uint64_t{per_window} * mtu, wqe.total);
  std::unique_ptr<uint8_t[]> storage;  // allocated for the first window that needs a copy
  for (uint32_t first = 0; first < wqe.num_psns; first += per_window) {
    const uint32_t count = std::min(per_window, wqe.num_psns - first);
    const uint64_t offset = uint64_t{first} * mtu;
    const uint64_t bytes = std::min<uint64_t>(uint64_t{count} * mtu, wqe.total - offset);
    // Memory of this process in one SGE (kernel clients): the packets are built from it,
    // no copy first. The key is checked per window as ReadLocal would.
    std::span<const uint8_t> gathered = DirectLocal(qp, wqe.wr, offset, bytes);
    if (gathered.empty()) {
      if (!storage) storage = std::make_unique_for_overwrite<uint8_t[]>(window_bytes);
      const std::span<uint8_t> window(storage.get(), bytes);
      // ReadLocal checks each SGE piece of the window as it would each packet's. A region
      // gone since the request started: packet by packet after all, so every packet gets
      // exactly what a read of its own would have found.
      if (ReadLocal(qp, wqe.wr, offset, window) != WcStatus::SUCCESS) {
        for (uint32_t i = 0; i < count; ++i) TransmitRc(qp, wqe, first + i);
        continue;
      }
      gathered = window;
    }
    for (uint32_t i = 0; i < count; ++i) {
      const std::size_t at = std::size_t{i} * mtu;
      const std::span<const uint8_t> payload =
          gathered.subspan(at, std::min<std::size_t>(mtu, gathered.size() - at));
      TransmitRc(qp, wqe, first + i, &payload);
    }
  }
}

void Hca::TransmitRc(QueuePair& qp, const RcSendWqe& wqe, uint32_t index,
                     const std::span<const uint8_t>* gathered) {
  const abi::SendWorkRequest& wr = wqe.wr;
  const uint32_t mtu = MtuBytes(qp.path_mtu);
  Port& out = port(qp.port);
  PacketHeaders hdr = ConnectedHeaders(qp);
  hdr.bth.PSN = PsnAdd(wqe.first_psn, index);
  std::vector<uint8_t> payload;
  std::span<const uint8_t> payload_view;  // the packet's payload: `payload` or `*gathered`
  switch (wr.wr_type) {
    case WrType::RDMA_READ: {
      // Packet `index` of a read is a (re)request for the responses from `index` on.
      const uint64_t skip = uint64_t{index} * mtu;
      hdr.bth.OpCode = Op(BthOpcode::RC_RDMA_READ_REQUEST);
      hdr.bth.A = 1;
      hdr.reth.VA = wr.remote_addr + skip;
      hdr.reth.R_Key = wr.rkey;
      hdr.reth.DMALen = static_cast<uint32_t>(wqe.total - std::min(skip, wqe.total));
      break;
    }
    case WrType::COMPARE_SWAP:
    case WrType::FETCH_ADD: {
      const bool cas = wr.wr_type == WrType::COMPARE_SWAP;
      hdr.bth.OpCode = Op(cas ? BthOpcode::RC_COMPARE_SWAP : BthOpcode::RC_FETCH_ADD);
      hdr.bth.A = 1;
      hdr.atomic_eth.VA = wr.remote_addr;
      hdr.atomic_eth.R_Key = wr.rkey;
      hdr.atomic_eth.SwapAddData = cas ? wr.swap : wr.compare_add;
      hdr.atomic_eth.CompareData = cas ? wr.compare_add : 0;
      break;
    }
    default: {
      const bool last = index + 1 == wqe.num_psns;
      const uint64_t offset = uint64_t{index} * mtu;
      if (gathered != nullptr) {
        payload_view = *gathered;
      } else {
        payload.resize(std::min<uint64_t>(mtu, wqe.total - offset));
        // Memory was checked when the request started; a region gone since leaves zeros,
        // as a device reading freed pages would.
        (void)ReadLocal(qp, wr, offset, payload);
        payload_view = payload;
      }
      const bool uc = qp.type == abi::QpType::UC;
      hdr.bth.OpCode = RcRequestOpcode(wr, index, wqe.num_psns) | (uc ? kUcOpcodeBase : 0);
      hdr.bth.SE = last && Has(wr, abi::SendFlags::SOLICITED) ? 1 : 0;
      hdr.bth.A = last && !uc ? 1 : 0;  // one ACK per message: the responder coalesces
      if (index == 0 && wr.wr_type == WrType::RDMA_WRITE) {
        hdr.reth.VA = wr.remote_addr;
        hdr.reth.R_Key = wr.rkey;
        hdr.reth.DMALen = static_cast<uint32_t>(wqe.total);
      }
      hdr.immdt.ImmediateData = be32toh(wr.immediate_data);  // the WR holds network order
      hdr.ieth.R_Key = wr.invalidate_rkey;
    }
  }
  Transmit(out, hdr, payload_view);
}

void Hca::RetransmitFrom(QueuePair& qp, uint32_t psn) {
  RcRequester& req = qp.rc.req;
  for (std::size_t i = 0; i < req.next; ++i) {
    const RcSendWqe& wqe = req.wqes[i];
    if (wqe.done || wqe.num_psns == 0) continue;
    const int32_t into = PsnDiff(psn, wqe.first_psn);
    if (into >= static_cast<int32_t>(wqe.num_psns)) continue;  // wholly before `psn`
    const uint32_t from = into < 0 ? 0 : static_cast<uint32_t>(into);
    if (wqe.wr.wr_type == WrType::RDMA_READ) {
      TransmitRc(qp, wqe, std::max(from, wqe.responses));
    } else if (wqe.IsReadOrAtomic()) {
      TransmitRc(qp, wqe, 0);
    } else {
      for (uint32_t k = from; k < wqe.num_psns; ++k) TransmitRc(qp, wqe, k);
    }
  }
  ArmAckTimer(qp);
}

void Hca::ArmAckTimer(QueuePair& qp) {
  const uint64_t timeout = AckTimeoutNs(qp.timeout);
  qp.rc.req.ack_deadline = timeout == 0 ? 0 : now_ns_ + timeout;
  if (timeout != 0) timed_qps_.insert(qp.handle);
}

void Hca::Tick(uint64_t now_ns) {
  now_ns_ = now_ns;
  // Only the RC QPs whose ACK or RNR timer runs: a node holding 20,000 connections ticks
  // for the few that wait, not for all of them.
  for (auto it = timed_qps_.begin(); it != timed_qps_.end();) {
    auto q = qps_.find(*it);
    if (q == qps_.end()) {
      it = timed_qps_.erase(it);
      continue;
    }
    RunRcTimers(*q->second);  // may re-arm (insert into timed_qps_: iterators stay valid)
    const RcRequester& req = q->second->rc.req;
    it = req.ack_deadline == 0 && req.rnr_deadline == 0 ? timed_qps_.erase(it) : std::next(it);
  }
  for (Port& p : ports_)
    if (!p.traps.empty() && now_ns_ >= p.traps.next_ns()) SendDueTraps(p);
}

void Hca::RunRcTimers(QueuePair& qp) {
  if (qp.state != QpState::RTS && qp.state != QpState::SQD) return;
  RcRequester& req = qp.rc.req;
  if (req.rnr_deadline != 0 && now_ns_ >= req.rnr_deadline) {
    req.rnr_deadline = 0;
    req.retried_from = req.rnr_psn;
    RetransmitFrom(qp, req.rnr_psn);
    ProgressSendRc(qp);
  }
  if (req.ack_deadline == 0 || now_ns_ < req.ack_deadline) return;
  RcSendWqe* oldest = nullptr;
  for (std::size_t i = 0; i < req.next && oldest == nullptr; ++i)
    if (!req.wqes[i].done && req.wqes[i].num_psns != 0) oldest = &req.wqes[i];
  if (oldest == nullptr) {
    req.ack_deadline = 0;
    return;
  }
  if (req.retry_left == 0 && qp.Armed()) {
    // The primary path is given up: the alternate takes over with a full retry budget.
    MigratePath(qp);
    req.retry_left = qp.retry_count;
  } else if (req.retry_left == 0) {
    // IBA 9.7.6.1.3: retries exhausted; the request completes in error, the QP goes to Error.
    oldest->done = true;
    oldest->status = WcStatus::RETRY_EXC_ERR;
    req.ack_deadline = 0;
    RetireRc(qp);
    return;
  } else {
    --req.retry_left;
  }
  const uint32_t resume = PsnAdd(oldest->first_psn, oldest->responses);
  req.retried_from = resume;
  RetransmitFrom(qp, resume);
}

PacketHeaders Hca::PathHeaders(const Port& out, const abi::AddressVector& av) const {
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
  return hdr;
}

PacketHeaders Hca::ConnectedHeaders(const QueuePair& qp) const {
  const Port& out = port(qp.port);
  PacketHeaders hdr = PathHeaders(out, qp.av);
  hdr.bth.P_Key = qp.pkey_index < out.pkeys.size() ? out.pkeys[qp.pkey_index] : 0;
  hdr.bth.DestQP = qp.dest_qpn;
  hdr.bth.M = qp.mig_state == abi::ApmState::MIGRATED;
  return hdr;
}

void Hca::MigratePath(QueuePair& qp) {
  qp.Migrate();
  if (async_events) async_events(DeviceEvent{abi::AsyncEventType::QP_PATH_MIGRATED, qp.handle});
}

PacketHeaders Hca::DatagramHeaders(const Port& out, const abi::AddressVector& av,
                                   abi::QpType qp_type, uint16_t pkey_index) const {
  PacketHeaders hdr = PathHeaders(out, av);
  hdr.bth.OpCode = Op(BthOpcode::UD_SEND_ONLY);
  hdr.bth.P_Key = pkey_index < out.pkeys.size() ? out.pkeys[pkey_index] : 0;
  // QP0 speaks on VL15 with the default P_Key.
  if (qp_type == abi::QpType::SMI) {
    hdr.lrh.VL = 15;
    hdr.bth.P_Key = kDefaultPkey;
  }
  return hdr;
}

bool Hca::Transmit(Port& out, const PacketHeaders& hdr, std::span<const uint8_t> payload) {
  std::vector<uint8_t> packet = BuildUnsealedPacket(hdr, payload, std::move(out.spare_buffer));
  if (packet.empty()) return false;
  PortCounters& c = out.counters;
  // No link to carry it, or (for anything but an SMP) a port the SM has not activated:
  // lost, as on a dead port (IBA 7.2.1: Init and Armed ports send SMPs only).
  if (out.link == nullptr || out.shut_down || (hdr.lrh.VL != 15 && !out.Active())) {
    ++c.xmit_discards;
    out.spare_buffer = std::move(packet);
    return true;
  }
  ++c.xmit_packets;
  c.xmit_data_words += (packet.size() - 2) / 4;  // up to the ICRC: the VCRC is 2 bytes
  ++(IsMulticastLid(hdr.lrh.DLID) ? c.xmit_multicast_packets : c.xmit_unicast_packets);
  // CRC offload: the link seals the packet if anyone can observe it on the way.
  if (ForceCrcs()) {
    SealPacket(packet);
    out.spare_buffer = out.link->Transmit(std::move(packet));
  } else {
    out.spare_buffer = out.link->TransmitUnsealed(std::move(packet));
  }
  return true;
}

WcStatus Hca::Gather(const QueuePair& qp, const abi::SendWorkRequest& wr,
                     std::vector<uint8_t>* payload) {
  payload->clear();
  if (Has(wr, abi::SendFlags::INLINE)) {
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
    // The key was good but the memory behind it is gone (its process died, the pages went
    // away): no protection rule was broken, the device simply failed (GENERAL_ERR).
    if (!mrs[i]->Read(sge.vaddr, std::span(*payload).subspan(at, sge.length)))
      return WcStatus::GENERAL_ERR;
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
  // QP1 picks its P_Key per request.
  const uint16_t pkey_index = qp.type == abi::QpType::GSI ? wr.pkey_index : qp.pkey_index;
  PacketHeaders hdr = DatagramHeaders(out, ah->av, qp.type, pkey_index);
  const bool with_imm = Has(wr, abi::SendFlags::IMMEDIATE);
  hdr.bth.OpCode = Op(with_imm ? BthOpcode::UD_SEND_ONLY_WITH_IMMEDIATE : BthOpcode::UD_SEND_ONLY);
  hdr.bth.SE = Has(wr, abi::SendFlags::SOLICITED) ? 1 : 0;
  const bool multicast = IsMulticastLid(ah->av.dlid);
  hdr.bth.DestQP = multicast ? kMulticastQpn : wr.remote_qpn & kPsnMask;
  hdr.bth.PSN = qp.sq_psn;
  qp.sq_psn = (qp.sq_psn + 1) & kPsnMask;
  // A Q_Key with its high bit set means "use the QP's own Q_Key" (IBA 10.2.5).
  hdr.deth.Q_Key = (wr.remote_qkey & 0x80000000u) != 0 ? qp.qkey : wr.remote_qkey;
  hdr.deth.SrcQP = qp.qpn;
  hdr.immdt.ImmediateData = be32toh(wr.immediate_data);  // the WR holds it in network order

  if (!Transmit(out, hdr, payload)) return WcStatus::LOCAL_LENGTH_ERR;
  if (multicast) {
    // The port's own attached QPs get their copy here, the sender excepted.
    const std::vector<uint8_t> copy = BuildPacket(hdr, payload);
    ParsedPacket parsed;
    if (ParsePacket(copy, &parsed) == DropReason::kNone) ReceiveMulticast(out, parsed, &qp);
  }
  return WcStatus::SUCCESS;
}

}  // namespace softib::hca
