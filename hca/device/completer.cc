// Work completions: what the requester and responder report, and the flushing of work
// that will never run (IBA 10.3.1: a QP in Error completes everything with flush errors).
#include "hca/device/hca.h"

namespace softib::hca {

void Hca::CompleteSend(QueuePair& qp, const abi::SendWorkRequest& wr, abi::WcStatus status,
                       uint32_t length) {
  // Unsignaled successes are silent; errors always complete (IBA 10.8.3).
  const bool signaled = qp.sq_signaled || abi::HasAny(wr.send_flags, abi::SendFlags::SIGNALED);
  if (status == abi::WcStatus::SUCCESS && !signaled) return;
  abi::WorkCompletion wc{};
  wc.wr_id = wr.wr_id;
  wc.opcode = abi::WcOpcode::SEND;
  wc.status = status;
  wc.length = length;
  wc.qp_num = qp.qpn;
  if (CompletionQueue* cq = Cq(qp.send_cq)) cq->Push(wc);
}

void Hca::CompleteRecv(QueuePair& qp, abi::WorkCompletion wc, bool solicited) {
  wc.qp_num = qp.qpn;
  if (CompletionQueue* cq = Cq(qp.recv_cq)) cq->Push(wc, solicited);
}

void Hca::FlushSend(QueuePair& qp) {
  while (!qp.sq.empty()) {
    const abi::SendWorkRequest wr = qp.sq.front();
    qp.sq.pop_front();
    CompleteSend(qp, wr, abi::WcStatus::WR_FLUSH_ERR, 0);
  }
}

void Hca::Flush(QueuePair& qp) {
  FlushSend(qp);
  while (!qp.rq.empty()) {
    abi::WorkCompletion wc{};
    wc.wr_id = qp.rq.front().wr_id;
    wc.opcode = abi::WcOpcode::RECV;
    wc.status = abi::WcStatus::WR_FLUSH_ERR;
    qp.rq.pop_front();
    CompleteRecv(qp, wc, false);
  }
}

void Hca::EnterError(QueuePair& qp) {
  qp.state = abi::QpState::ERROR;
  Flush(qp);
}

void Hca::EnterSqError(QueuePair& qp) {
  qp.state = abi::QpState::SQE;
  FlushSend(qp);
}

}  // namespace softib::hca
