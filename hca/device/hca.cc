#include "hca/device/hca.h"

#include <algorithm>

namespace softib::hca {

uint8_t VlCap(uint8_t max_vls) {
  // PortInfo:VLCap (IBA 14.2.5.6): 1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7, 5 = VL0-14.
  if (max_vls >= 15) return 5;
  uint8_t cap = 1;
  while (cap < 5 && (1u << cap) <= max_vls) ++cap;
  return cap;
}

Hca::Hca(const HcaConfig& config)
    : config_(config),
      ports_(config.num_ports),
      mrs_(config.max_mrs + config.max_mws),
      management_psns_(config.num_ports) {
  for (uint8_t i = 0; i < config.num_ports; ++i) {
    Port& p = ports_[i];
    p.number = static_cast<uint8_t>(i + 1);
    p.port_guid = config.node_guid + i + 1;
    p.active_mtu = config.max_mtu;
    p.pkeys.assign(std::max<uint16_t>(1, config.pkey_table_size), 0);  // 0: invalid P_Key
    p.pkeys[0] = kDefaultPkey;
    p.alias_guids.assign(config.gid_table_size, 0);
    p.link_width_enabled = config.link_width_supported;
    p.link_speed_enabled = config.link_speed_supported;
    p.operational_vls = VlCap(config.max_vls);
    // What a CA port's SMA offers before any SM asked for more (IBA 14.2.5.6).
    p.capabilities = abi::PortCapabilities::TRAP | abi::PortCapabilities::AUTOMATIC_MIGRATION |
                     abi::PortCapabilities::SL_MAPPING | abi::PortCapabilities::SYSTEM_IMAGE_GUID |
                     abi::PortCapabilities::COMMUNICATION_MANAGEMENT |
                     abi::PortCapabilities::VENDOR_CLASS |
                     abi::PortCapabilities::CAPABILITY_MASK_NOTICE |  // trap 144 (sma_traps.cc)
                     abi::PortCapabilities::CLIENT_REREGISTRATION;
  }
}

abi::Status Hca::FreePd(PdId pd) {
  if (!pds_.Contains(pd)) return abi::Status::INVALID_PD_HANDLE;
  if (mrs_.AnyInPd(pd) || ahs_.AnyInPd(pd)) return abi::Status::RESOURCE_BUSY;
  for (const auto& [qpn, qp] : qps_)
    if (qp->pd == pd) return abi::Status::RESOURCE_BUSY;
  for (const auto& [number, srq] : srqs_)
    if (srq->pd == pd) return abi::Status::RESOURCE_BUSY;
  pds_.Free(pd);
  return abi::Status::SUCCESS;
}

abi::Status Hca::RegisterMr(PdId pd, uint64_t iova, uint64_t length, uint64_t addr,
                            abi::AccessFlags access, std::shared_ptr<DmaAccessor> dma,
                            uint32_t* key) {
  if (!pds_.Contains(pd)) return abi::Status::INVALID_PD_HANDLE;
  return mrs_.Register(pd, iova, length, addr, access, std::move(dma), key);
}

abi::Status Hca::ReregisterMr(uint32_t key, abi::MrReregFlags what, PdId pd, uint64_t iova,
                              uint64_t length, uint64_t addr, abi::AccessFlags access,
                              std::shared_ptr<DmaAccessor> dma, uint32_t* new_key) {
  if (abi::HasAny(what, abi::MrReregFlags::PD) && !pds_.Contains(pd))
    return abi::Status::INVALID_PD_HANDLE;
  return mrs_.Reregister(key, what, pd, iova, length, addr, access, std::move(dma), new_key);
}

abi::Status Hca::CreateAh(PdId pd, const abi::AddressVector& av, uint32_t* number) {
  if (!pds_.Contains(pd)) return abi::Status::INVALID_PD_HANDLE;
  return ahs_.Create(pd, av, config_.num_ports, number);
}

abi::Status Hca::CreateCq(uint32_t capacity, uint32_t* number) {
  if (capacity == 0 || capacity > config_.max_cqes) return abi::Status::INVALID_CQ_SIZE;
  if (cqs_.size() >= config_.max_cqs) return abi::Status::INSUFFICIENT_RESOURCES;
  *number = next_cq_++;
  cqs_[*number] =
      std::make_unique<CompletionQueue>(*number, capacity, &async_events, &completion_events);
  return abi::Status::SUCCESS;
}

abi::Status Hca::DestroyCq(uint32_t number) {
  if (Cq(number) == nullptr) return abi::Status::INVALID_CQ_HANDLE;
  for (const auto& [qpn, qp] : qps_)
    if (qp->send_cq == number || qp->recv_cq == number) return abi::Status::RESOURCE_BUSY;
  cqs_.erase(number);
  return abi::Status::SUCCESS;
}

abi::Status Hca::ResizeCq(uint32_t number, uint32_t capacity, uint32_t* granted) {
  CompletionQueue* cq = Cq(number);
  if (cq == nullptr) return abi::Status::INVALID_CQ_HANDLE;
  if (capacity > config_.max_cqes) return abi::Status::INVALID_CQ_SIZE;
  const abi::Status status = cq->Resize(capacity);
  if (granted != nullptr) *granted = cq->capacity();
  return status;
}

CompletionQueue* Hca::Cq(uint32_t number) {
  const auto it = cqs_.find(number);
  return it == cqs_.end() ? nullptr : it->second.get();
}

abi::Status Hca::CreateQp(PdId pd, const abi::QpCreateParams& params, uint32_t send_cq,
                          uint32_t recv_cq, uint32_t* qpn) {
  return CreateQp(pd, params, send_cq, recv_cq, 0, qpn);
}

abi::Status Hca::CreateQp(PdId pd, const abi::QpCreateParams& params, uint32_t send_cq,
                          uint32_t recv_cq, uint32_t srq, uint32_t* qpn) {
  if (!pds_.Contains(pd)) return abi::Status::INVALID_PD_HANDLE;
  if (Cq(send_cq) == nullptr || Cq(recv_cq) == nullptr) return abi::Status::INVALID_CQ_HANDLE;
  switch (params.qp_type) {
    case abi::QpType::RC:
    case abi::QpType::UC:
    case abi::QpType::UD:
      break;
    default:  // special QPs come per port from their own verb; RD and raw are not offered
      return abi::Status::INVALID_SERVICE_TYPE;
  }
  const abi::Status checked = CheckQpCreate(params.caps, srq, pd);
  if (checked != abi::Status::SUCCESS) return checked;
  // QPNs come from a 24-bit space; skip the special numbers and any still in use.
  uint32_t number = 0;
  do {
    number = next_qpn_++ & kPsnMask;
  } while (number < 2 || number == kMulticastQpn || qps_.count(number) != 0);
  auto qp = std::make_unique<QueuePair>();
  qp->qpn = number;
  qp->handle = number;
  qp->srq = srq;
  qp->type = params.qp_type;
  qp->pd = pd;
  qp->send_cq = send_cq;
  qp->recv_cq = recv_cq;
  qp->sq_signaled = params.sq_signaled != 0;
  qp->caps = params.caps;
  *qpn = qp->handle;
  qps_[qp->handle] = std::move(qp);
  return abi::Status::SUCCESS;
}

abi::Status Hca::CheckQpCreate(const abi::QpCaps& caps, uint32_t srq, PdId pd) const {
  if (caps.sq_depth == 0 || caps.sq_depth > config_.max_wrs || caps.rq_depth > config_.max_wrs)
    return abi::Status::INVALID_MAX_WRS;
  if (caps.sq_sge > config_.max_sges || caps.rq_sge > config_.max_sges)
    return abi::Status::INVALID_MAX_SGE;
  if (caps.max_inline_data > config_.max_inline) return abi::Status::INVALID_SETTING;
  if (srq != 0) {
    const auto it = srqs_.find(srq);
    if (it == srqs_.end()) return abi::Status::INVALID_SRQ_HANDLE;
    if (caps.rq_depth != 0 || it->second->pd != pd) return abi::Status::INVALID_SETTING;
  }
  if (qps_.size() >= config_.max_qps) return abi::Status::INSUFFICIENT_RESOURCES;
  return abi::Status::SUCCESS;
}

abi::Status Hca::ModifyQp(uint32_t qpn, const abi::QpModifyAttributes& attrs) {
  QueuePair* qp = Qp(qpn);
  if (qp == nullptr) return abi::Status::INVALID_QP_HANDLE;
  const uint8_t port_number =
      abi::HasAny(attrs.mask, abi::QpAttrMask::PORT) ? attrs.port_num : qp->port;
  if ((qp->handle & kSpecialQpHandle) != 0 && port_number != qp->port)
    return abi::Status::INVALID_PORT;  // a special QP belongs to its port
  QpLimits limits;
  limits.num_ports = config_.num_ports;
  if (port_number >= 1 && port_number <= config_.num_ports) {
    limits.num_pkeys = static_cast<uint16_t>(port(port_number).pkeys.size());
    limits.max_mtu = port(port_number).active_mtu;
  }
  const uint8_t alt_port = attrs.alt_port_num;
  if (abi::HasAny(attrs.mask, abi::QpAttrMask::ALT_PATH) && alt_port >= 1 &&
      alt_port <= config_.num_ports)
    limits.alt_num_pkeys = static_cast<uint16_t>(port(alt_port).pkeys.size());
  // The initiator depth and responder resources the device has (HcaConfig).
  if ((abi::HasAny(attrs.mask, abi::QpAttrMask::MAX_RD_ATOMIC) &&
       attrs.max_rd_atomic > config_.max_qp_init_depth) ||
      (abi::HasAny(attrs.mask, abi::QpAttrMask::MAX_DEST_RD_ATOMIC) &&
       attrs.max_dest_rd_atomic > config_.max_qp_resp_res))
    return abi::Status::INVALID_SETTING;
  const abi::QpState before = qp->state;
  const abi::Status status = qp->Modify(attrs, limits);
  if (status != abi::Status::SUCCESS) return status;
  if (qp->type == abi::QpType::GSI) qp->qkey = kGsiQkey;  // fixed (IBA: well-known Q_Key)
  if (qp->type == abi::QpType::SMI) qp->qkey = 0;
  if (qp->state == abi::QpState::RESET) {
    qp->sq.clear();  // reset discards outstanding work without completions (IBA 10.3.1)
    qp->rq.clear();
    qp->rc = RcState{};
    qp->last_wqe_reported = false;
  } else if (qp->state == abi::QpState::ERROR && before != abi::QpState::ERROR) {
    Flush(*qp);
  } else if (qp->state == abi::QpState::RTS) {
    if (before == abi::QpState::RTR) {  // the retry budgets start full
      qp->rc.req.retry_left = qp->retry_count;
      qp->rc.req.rnr_retry_left = qp->rnr_retry;
    }
    qp->sqd_notify_pending = false;
    ProgressSend(*qp);  // SQD/SQE → RTS resumes the send queue
  } else if (qp->state == abi::QpState::SQD && before == abi::QpState::RTS) {
    // The drain starts: nothing new is started (the requester runs in RTS only), what is
    // in flight completes, then SQ_DRAINED if it was asked for.
    qp->sqd_notify_pending = qp->en_sqd_async_notify;
    ReportSqDrained(*qp);
  }
  if (qp->state != abi::QpState::SQD) qp->sqd_notify_pending = false;
  return abi::Status::SUCCESS;
}

void Hca::ReportSqDrained(QueuePair& qp) {
  if (!qp.sqd_notify_pending || qp.state != abi::QpState::SQD || qp.SqDraining()) return;
  qp.sqd_notify_pending = false;
  if (async_events) async_events(DeviceEvent{abi::AsyncEventType::SQ_DRAINED, qp.handle});
}

abi::Status Hca::QueryQp(uint32_t qpn, abi::QpAttributes* out) const {
  const auto it = qps_.find(qpn);
  if (it == qps_.end()) return abi::Status::INVALID_QP_HANDLE;
  *out = it->second->Query();
  return abi::Status::SUCCESS;
}

abi::Status Hca::DestroyQp(uint32_t qpn) {
  QueuePair* qp = Qp(qpn);
  if (qp == nullptr) return abi::Status::INVALID_QP_HANDLE;
  if (mcast_.Attached(qpn)) return abi::Status::RESOURCE_BUSY;
  // A type 2A window bound to the QP dies with it: its R_Key stops working (IBA 10.6.7.2).
  mrs_.InvalidateWindowsOf(qpn);
  qps_.erase(qpn);
  return abi::Status::SUCCESS;
}

QueuePair* Hca::Qp(uint32_t qpn) {
  const auto it = qps_.find(qpn);
  return it == qps_.end() ? nullptr : it->second.get();
}

}  // namespace softib::hca
