// Shared receive queues and the receive-queue indirection every responder goes through:
// a QP created on an SRQ takes its receive WQEs from it, otherwise from its own queue.
#include "hca/device/hca.h"

namespace softib::hca {

abi::Status Hca::CreateSrq(PdId pd, const abi::SrqAttributes& attrs, uint32_t* number,
                           abi::SrqAttributes* granted) {
  if (!pds_.Contains(pd)) return abi::Status::INVALID_PD_HANDLE;
  if (attrs.max_wr == 0 || attrs.max_wr > config_.max_srq_wrs) return abi::Status::INVALID_MAX_WRS;
  if (attrs.max_sge > config_.max_srq_sges) return abi::Status::INVALID_MAX_SGE;
  if (attrs.srq_limit > attrs.max_wr) return abi::Status::INVALID_SETTING;
  if (srqs_.size() >= config_.max_srqs) return abi::Status::INSUFFICIENT_RESOURCES;
  auto srq = std::make_unique<SharedReceiveQueue>();
  srq->number = next_srq_++;
  srq->pd = pd;
  srq->max_wr = attrs.max_wr;
  srq->max_sge = attrs.max_sge;
  srq->limit = attrs.srq_limit;
  *number = srq->number;
  if (granted != nullptr) *granted = srq->Query();
  srqs_[srq->number] = std::move(srq);
  return abi::Status::SUCCESS;
}

abi::Status Hca::ModifySrq(uint32_t number, abi::SrqAttrMask mask,
                           const abi::SrqAttributes& attrs) {
  SharedReceiveQueue* srq = Srq(number);
  if (srq == nullptr) return abi::Status::INVALID_SRQ_HANDLE;
  if ((static_cast<uint32_t>(mask) & ~abi::kSrqAttrMaskValidMask) != 0)
    return abi::Status::INVALID_SETTING;
  const bool resize = abi::HasAny(mask, abi::SrqAttrMask::MAX_WR);
  const bool arm = abi::HasAny(mask, abi::SrqAttrMask::LIMIT);
  const uint32_t max_wr = resize ? attrs.max_wr : srq->max_wr;
  const uint32_t limit = arm ? attrs.srq_limit : srq->limit;
  if (resize &&
      (max_wr == 0 || max_wr > config_.max_srq_wrs || max_wr < srq->wqes.size() || max_wr < limit))
    return abi::Status::INVALID_SRQ_SIZE;
  if (arm && limit > max_wr) return abi::Status::INVALID_SETTING;
  srq->max_wr = max_wr;
  srq->limit = limit;
  return abi::Status::SUCCESS;
}

abi::Status Hca::QuerySrq(uint32_t number, abi::SrqAttributes* out) const {
  const auto it = srqs_.find(number);
  if (it == srqs_.end()) return abi::Status::INVALID_SRQ_HANDLE;
  *out = it->second->Query();
  return abi::Status::SUCCESS;
}

abi::Status Hca::DestroySrq(uint32_t number) {
  if (Srq(number) == nullptr) return abi::Status::INVALID_SRQ_HANDLE;
  for (const auto& [handle, qp] : qps_)
    if (qp->srq == number) return abi::Status::RESOURCE_BUSY;
  srqs_.erase(number);
  return abi::Status::SUCCESS;
}

abi::Status Hca::PostSrqRecv(uint32_t number, const abi::RecvWorkRequest& wr) {
  SharedReceiveQueue* srq = Srq(number);
  if (srq == nullptr) return abi::Status::INVALID_SRQ_HANDLE;
  if (wr.num_sge > srq->max_sge || wr.num_sge > std::size(wr.sge))
    return abi::Status::INVALID_MAX_SGE;
  if (srq->wqes.size() >= srq->max_wr) return abi::Status::INSUFFICIENT_RESOURCES;
  srq->wqes.push_back(wr);
  return abi::Status::SUCCESS;
}

SharedReceiveQueue* Hca::Srq(uint32_t number) {
  const auto it = srqs_.find(number);
  return it == srqs_.end() ? nullptr : it->second.get();
}

bool Hca::RecvAvailable(const QueuePair& qp) {
  if (qp.srq == 0) return !qp.rq.empty();
  const SharedReceiveQueue* srq = Srq(qp.srq);
  return srq != nullptr && !srq->wqes.empty();
}

abi::RecvWorkRequest Hca::TakeRecv(QueuePair& qp) {
  abi::RecvWorkRequest wr;
  if (qp.srq == 0) {
    wr = qp.rq.front();
    qp.rq.pop_front();
    return wr;
  }
  SharedReceiveQueue* srq = Srq(qp.srq);
  if (srq->Take(&wr) && async_events)
    async_events(DeviceEvent{abi::AsyncEventType::SRQ_LIMIT_REACHED, srq->number});
  return wr;
}

void Hca::UntakeRecv(QueuePair& qp, const abi::RecvWorkRequest& wr) {
  if (qp.srq == 0) return qp.rq.push_front(wr);
  if (SharedReceiveQueue* srq = Srq(qp.srq)) srq->wqes.push_front(wr);
}

void Hca::ReportLastWqe(QueuePair& qp) {
  // IBA 11.6.3: a QP on an SRQ that entered Error will take no more WQEs from it; the
  // consumer learns so once, and may then destroy the QP safely.
  if (qp.srq == 0 || qp.last_wqe_reported) return;
  qp.last_wqe_reported = true;
  if (async_events)
    async_events(DeviceEvent{abi::AsyncEventType::SRQ_QP_LAST_WQE_REACHED, qp.handle});
}

}  // namespace softib::hca
