// Work completions: what the requester and responder report, and the flushing of work
// that will never run (IBA 10.3.1: a QP in Error completes everything with flush errors).
// For RC this is also the completer of IBA 9.7.5: ACKs, NAKs, read responses and atomic
// ACKs, matched to send WQEs by PSN, retire them strictly in posting order.
#include "hca/device/hca.h"

#include <cstring>

namespace softib::hca {

using abi::WcStatus;
using abi::WrType;
using wire::BthOpcode;

namespace {

abi::WcOpcode WcOpcodeOf(WrType type) {
  switch (type) {
    case WrType::RDMA_WRITE:
      return abi::WcOpcode::RDMA_WRITE;
    case WrType::RDMA_READ:
      return abi::WcOpcode::RDMA_READ;
    case WrType::COMPARE_SWAP:
      return abi::WcOpcode::COMPARE_SWAP;
    case WrType::FETCH_ADD:
      return abi::WcOpcode::FETCH_ADD;
    case WrType::NOP:
      return abi::WcOpcode::NOP;
    case WrType::LOCAL_INV:
      return abi::WcOpcode::LOCAL_INV;
    case WrType::BIND_MW:
      return abi::WcOpcode::MW_BIND;
    default:
      return abi::WcOpcode::SEND;
  }
}

bool Is(uint8_t opcode, BthOpcode op) { return opcode == static_cast<uint8_t>(op); }

WcStatus NakStatus(uint8_t code) {
  switch (code) {
    case aeth::kNakInvalidRequest:
      return WcStatus::REM_INV_REQ_ERR;
    case aeth::kNakRemoteAccess:
      return WcStatus::REM_ACCESS_ERR;
    case aeth::kNakRemoteOperational:
      return WcStatus::REM_OP_ERR;
    default:  // reserved codes: the responder said something this requester cannot follow
      return WcStatus::BAD_RESPONSE_ERR;
  }
}

}  // namespace

void Hca::CompleteSend(QueuePair& qp, const abi::SendWorkRequest& wr, WcStatus status,
                       uint32_t length) {
  // Unsignaled successes are silent; errors always complete (IBA 10.8.3).
  const bool signaled = qp.sq_signaled || abi::HasAny(wr.send_flags, abi::SendFlags::SIGNALED);
  if (status == WcStatus::SUCCESS && !signaled) return;
  abi::WorkCompletion wc{};
  wc.wr_id = wr.wr_id;
  wc.opcode = WcOpcodeOf(wr.wr_type);
  wc.status = status;
  wc.length = length;
  wc.qp_num = qp.qpn;
  CompletionQueue* cq = Cq(qp.send_cq);
  if (cq != nullptr && !cq->Push(wc)) CqOverrun(qp);
}

void Hca::CompleteRecv(QueuePair& qp, abi::WorkCompletion wc, bool solicited) {
  wc.qp_num = qp.qpn;
  CompletionQueue* cq = Cq(qp.recv_cq);
  if (cq != nullptr && !cq->Push(wc, solicited)) CqOverrun(qp);
}

void Hca::CqOverrun(QueuePair& qp) {
  // IBA 11.6.3: a work queue whose CQ overran cannot report anything any more: the QP is
  // in error (a catastrophic work-queue error, QP_FATAL). Its outstanding work is flushed
  // later, by the next post or modify, into a CQ that will refuse it.
  if (qp.state == abi::QpState::ERROR) return;
  qp.state = abi::QpState::ERROR;
  qp.rc.req.stopped = true;
  if (async_events) async_events(DeviceEvent{abi::AsyncEventType::QP_FATAL, qp.handle});
  ReportLastWqe(qp);
}

void Hca::FlushSend(QueuePair& qp) {
  while (!qp.sq.empty()) {
    const abi::SendWorkRequest wr = qp.sq.front();
    qp.sq.pop_front();
    CompleteSend(qp, wr, WcStatus::WR_FLUSH_ERR, 0);
  }
  RcRequester& req = qp.rc.req;
  while (!req.wqes.empty()) {
    const abi::SendWorkRequest wr = req.wqes.front().wr;
    req.wqes.pop_front();
    CompleteSend(qp, wr, WcStatus::WR_FLUSH_ERR, 0);
  }
  req = RcRequester{};
}

void Hca::Flush(QueuePair& qp) {
  FlushSend(qp);
  RcResponder& resp = qp.rc.resp;
  if (resp.recv) {  // the receive an unfinished RC message was landing in is the oldest
    if (qp.srq == 0) {
      qp.rq.push_front(*resp.recv);
    } else {  // taken from the SRQ: it is this QP's to flush, not the SRQ's
      abi::WorkCompletion wc{};
      wc.wr_id = resp.recv->wr_id;
      wc.opcode = abi::WcOpcode::RECV;
      wc.status = WcStatus::WR_FLUSH_ERR;
      CompleteRecv(qp, wc, false);
    }
    resp.recv.reset();
  }
  resp.in_progress = RcResponder::Kind::kNone;
  while (!qp.rq.empty()) {
    abi::WorkCompletion wc{};
    wc.wr_id = qp.rq.front().wr_id;
    wc.opcode = abi::WcOpcode::RECV;
    wc.status = WcStatus::WR_FLUSH_ERR;
    qp.rq.pop_front();
    CompleteRecv(qp, wc, false);
  }
  if (qp.state == abi::QpState::ERROR) ReportLastWqe(qp);
}

void Hca::EnterError(QueuePair& qp) {
  qp.state = abi::QpState::ERROR;
  Flush(qp);
}

void Hca::EnterSqError(QueuePair& qp) {
  if (qp.state == abi::QpState::ERROR) return;  // e.g. its CQ overran meanwhile
  qp.state = abi::QpState::SQE;
  FlushSend(qp);
}

// --- RC completer -------------------------------------------------------------------------

void Hca::RetireRc(QueuePair& qp) {
  RcRequester& req = qp.rc.req;
  while (!req.wqes.empty() && req.wqes.front().done) {
    const RcSendWqe wqe = req.wqes.front();
    req.wqes.pop_front();
    --req.next;
    CompleteSend(qp, wqe.wr, wqe.status, static_cast<uint32_t>(wqe.total));
    if (wqe.status != WcStatus::SUCCESS) {
      // Requester errors on RC are fatal to the QP (IBA 10.8.3.3): the rest is flushed.
      EnterError(qp);
      return;
    }
  }
  bool outstanding = false;
  for (std::size_t i = 0; i < req.next; ++i) outstanding |= !req.wqes[i].done;
  if (!outstanding) req.ack_deadline = 0;
  ReportSqDrained(qp);  // the last completion of a drain
}

void Hca::RetryFrom(QueuePair& qp, uint32_t psn) {
  RcRequester& req = qp.rc.req;
  if (req.retried_from == psn) return;
  req.retried_from = psn;
  RetransmitFrom(qp, psn);
}

void Hca::ReceiveRcResponse(QueuePair& qp, const ParsedPacket& packet) {
  // Responses only mean something to a QP whose send queue runs (IBA 10.3.1).
  if (qp.state != abi::QpState::RTS && qp.state != abi::QpState::SQD) return;
  const PacketHeaders& hdr = packet.hdr;
  const uint8_t op = hdr.bth.OpCode;
  const uint32_t psn = hdr.bth.PSN;
  const bool has_aeth = !Is(op, BthOpcode::RC_RDMA_READ_RESPONSE_MIDDLE);
  if (has_aeth && (hdr.aeth.Syndrome & aeth::kKindMask) != aeth::kAck) {
    if (Is(op, BthOpcode::RC_ACKNOWLEDGE)) ReceiveRcNak(qp, psn, hdr.aeth.Syndrome);
    return;  // a NAK syndrome on anything but an ACKNOWLEDGE packet is malformed
  }
  const bool read_response = op >= static_cast<uint8_t>(BthOpcode::RC_RDMA_READ_RESPONSE_FIRST) &&
                             op <= static_cast<uint8_t>(BthOpcode::RC_RDMA_READ_RESPONSE_ONLY);
  const bool atomic_ack = Is(op, BthOpcode::RC_ATOMIC_ACKNOWLEDGE);

  RcRequester& req = qp.rc.req;
  bool progress = false;
  for (std::size_t i = 0; i < req.next; ++i) {
    RcSendWqe& wqe = req.wqes[i];
    if (wqe.done) continue;
    if (wqe.num_psns == 0) break;
    const int32_t into = PsnDiff(psn, wqe.first_psn);
    const bool past = PsnDiff(psn, wqe.last_psn()) > 0;
    if (wqe.wr.wr_type == WrType::RDMA_READ) {
      if (read_response && into >= 0 && !past) {
        if (static_cast<uint32_t>(into) == wqe.responses) {
          progress = AcceptReadResponse(qp, wqe, packet);
        } else if (static_cast<uint32_t>(into) > wqe.responses) {
          RetryFrom(qp, PsnAdd(wqe.first_psn, wqe.responses));  // responses were lost
        }                                                       // else a duplicate response
      } else if (past) {
        // Responses come in PSN order: an answer to something after this read means its
        // responses were lost (an implied NAK, IBA 9.7.5.1.4).
        RetryFrom(qp, PsnAdd(wqe.first_psn, wqe.responses));
      }
      break;
    }
    if (wqe.IsReadOrAtomic()) {  // atomic
      if (atomic_ack && into == 0) {
        std::vector<ScatterSegment> plan;
        uint8_t bytes[sizeof(uint64_t)];
        const uint64_t original = hdr.atomic_ack_eth.OrigRemoteData;
        std::memcpy(bytes, &original, sizeof bytes);  // host order, as the CPU reads it
        wqe.status =
            PlanScatter(mrs_, qp.pd, std::span(wqe.wr.sge, wqe.wr.num_sge), sizeof bytes, &plan);
        if (wqe.status == WcStatus::SUCCESS && !WriteAt(plan, 0, bytes))
          wqe.status = WcStatus::LOCAL_PROT_ERR;
        wqe.done = true;
        progress = true;
      } else if (past) {
        RetryFrom(qp, wqe.first_psn);
      }
      break;
    }
    // SEND / RDMA WRITE: acknowledged by any response at or past its last PSN.
    if (into < 0 || PsnDiff(psn, wqe.last_psn()) < 0) break;
    wqe.done = true;
    progress = true;
  }
  if (progress) {
    req.retry_left = qp.retry_count;
    req.rnr_retry_left = qp.rnr_retry;
    req.retried_from.reset();
    ArmAckTimer(qp);
  }
  RetireRc(qp);
  ProgressSendRc(qp);
}

bool Hca::AcceptReadResponse(QueuePair& qp, RcSendWqe& wqe, const ParsedPacket& packet) {
  const uint32_t mtu = MtuBytes(qp.path_mtu);
  const uint32_t index = wqe.responses, count = wqe.num_psns;
  const uint8_t op = packet.hdr.bth.OpCode;
  const uint64_t offset = uint64_t{index} * mtu;
  const uint64_t expected_length = std::min<uint64_t>(mtu, wqe.total - offset);
  // A re-requested read (retransmitted from response `index` on) is answered as a new
  // read: FIRST or ONLY may then start at any index, so the opcode is checked by where it
  // sits, not against the one original sequence.
  const bool first = index == 0, last = index + 1 == count;
  const bool starts = Is(op, BthOpcode::RC_RDMA_READ_RESPONSE_FIRST) ||
                      Is(op, BthOpcode::RC_RDMA_READ_RESPONSE_ONLY);
  const bool ends = Is(op, BthOpcode::RC_RDMA_READ_RESPONSE_LAST) ||
                    Is(op, BthOpcode::RC_RDMA_READ_RESPONSE_ONLY);
  const bool op_fits = (ends == last) && (!first || starts);
  std::vector<ScatterSegment> plan;
  if (!op_fits || packet.payload.size() != expected_length) {
    wqe.status = WcStatus::BAD_RESPONSE_ERR;
  } else {
    wqe.status = PlanScatter(mrs_, qp.pd, std::span(wqe.wr.sge, wqe.wr.num_sge), wqe.total, &plan);
    if (wqe.status == WcStatus::SUCCESS && !WriteAt(plan, offset, packet.payload))
      wqe.status = WcStatus::LOCAL_PROT_ERR;
  }
  ++wqe.responses;
  wqe.done = wqe.status != WcStatus::SUCCESS || wqe.responses == count;
  return true;
}

void Hca::ReceiveRcNak(QueuePair& qp, uint32_t psn, uint8_t syndrome) {
  RcRequester& req = qp.rc.req;
  bool progress = false;
  // A NAK acknowledges every request before the PSN it names (IBA 9.7.5.1.2).
  RcSendWqe* target = nullptr;
  for (std::size_t i = 0; i < req.next; ++i) {
    RcSendWqe& wqe = req.wqes[i];
    if (wqe.done) continue;
    if (wqe.num_psns == 0) break;
    if (!wqe.IsReadOrAtomic() && PsnDiff(psn, wqe.last_psn()) > 0) {
      wqe.done = true;
      progress = true;
      continue;
    }
    // The oldest unfinished request; a NAK for a PSN before it is stale.
    if (PsnDiff(psn, wqe.first_psn) >= 0) target = &wqe;
    break;
  }
  if (progress) {
    req.retry_left = qp.retry_count;
    req.rnr_retry_left = qp.rnr_retry;
    req.retried_from.reset();
    ArmAckTimer(qp);
  }
  if (target != nullptr) {
    const uint8_t kind = syndrome & aeth::kKindMask, value = syndrome & aeth::kValueMask;
    if (kind == aeth::kRnrNak && req.rnr_deadline == 0) {
      // rnr_retry 7 retries for ever (IBA 9.7.5.2.8).
      constexpr uint8_t kInfinite = 7;
      if (qp.rnr_retry != kInfinite && req.rnr_retry_left == 0) {
        target->done = true;
        target->status = WcStatus::RNR_RETRY_EXC_ERR;
      } else {
        if (qp.rnr_retry != kInfinite) --req.rnr_retry_left;
        req.rnr_deadline = now_ns_ + RnrTimerNs(value);
        timed_qps_.insert(qp.handle);
        req.rnr_psn = psn;
        req.ack_deadline = 0;  // the RNR timer replaces the ACK timer meanwhile
      }
    } else if (kind == aeth::kNak && value == aeth::kNakPsnSequence) {
      RetryFrom(qp, psn);
    } else if (kind == aeth::kNak) {
      // The NAK names the request it refused: find it (it may lie past the oldest one).
      for (std::size_t i = 0; i < req.next; ++i) {
        RcSendWqe& wqe = req.wqes[i];
        if (wqe.done || wqe.num_psns == 0) continue;
        if (PsnDiff(psn, wqe.first_psn) >= 0 && PsnDiff(psn, wqe.last_psn()) <= 0) {
          wqe.done = true;
          wqe.status = NakStatus(value);
          break;
        }
      }
      RetireRc(qp);
      // A fatal NAK ends the connection even when an older request is still unanswered.
      if (qp.state != abi::QpState::ERROR) {
        for (std::size_t i = 0; i < req.next; ++i)
          if (req.wqes[i].done && req.wqes[i].status != WcStatus::SUCCESS) {
            EnterError(qp);
            return;
          }
      }
    }
  }
  RetireRc(qp);
  ProgressSendRc(qp);
}

}  // namespace softib::hca
