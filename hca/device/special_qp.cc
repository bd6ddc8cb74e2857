// The special QPs of each port (IBA 3.9.4 and chapter 13): QP0, the subnet management
// interface, and QP1, the general services interface. They are UD QPs with fixed numbers,
// one each per port; what sets them apart happens on receive (VL15 for QP0, no P_Key or
// Q_Key check for QP0, any table P_Key and the well-known Q_Key for QP1, responder.cc) and
// on send (QP0 on VL15, QP1 with the work request's P_Key index, requester.cc).
#include "hca/device/hca.h"

namespace softib::hca {

abi::Status Hca::CreateSpecialQp(PdId pd, uint8_t port_number, const abi::QpCreateParams& params,
                                 uint32_t send_cq, uint32_t recv_cq, uint32_t* handle) {
  if (!pds_.Contains(pd)) return abi::Status::INVALID_PD_HANDLE;
  if (port_number < 1 || port_number > config_.num_ports) return abi::Status::INVALID_PORT;
  if (Cq(send_cq) == nullptr || Cq(recv_cq) == nullptr) return abi::Status::INVALID_CQ_HANDLE;
  uint32_t qpn;
  if (params.qp_type == abi::QpType::SMI)
    qpn = kSmiQpn;
  else if (params.qp_type == abi::QpType::GSI)
    qpn = kGsiQpn;
  else
    return abi::Status::INVALID_SERVICE_TYPE;
  const abi::Status checked = CheckQpCreate(params.caps, 0, pd);
  if (checked != abi::Status::SUCCESS) return checked;
  const uint32_t key = kSpecialQpHandle | uint32_t{port_number} << 1 | qpn;
  if (qps_.count(key) != 0) return abi::Status::RESOURCE_BUSY;
  auto qp = std::make_unique<QueuePair>();
  qp->qpn = qpn;
  qp->handle = key;
  qp->type = params.qp_type;
  qp->pd = pd;
  qp->port = port_number;  // fixed: ModifyQp may name it, not change it
  qp->send_cq = send_cq;
  qp->recv_cq = recv_cq;
  qp->sq_signaled = params.sq_signaled != 0;
  qp->caps = params.caps;
  qp->qkey = qpn == kGsiQpn ? kGsiQkey : 0;
  *handle = key;
  qps_[key] = std::move(qp);
  return abi::Status::SUCCESS;
}

}  // namespace softib::hca
