#include "rc_endpoint.h"

#include <arpa/inet.h>

#include <cstring>
#include <thread>

#include "user/runtime_ioctls_proxy.h"
#include "user/verbs_ca_proxy.h"
#include "user/verbs_cq_proxy.h"
#include "user/verbs_mr_mw_proxy.h"
#include "user/verbs_pd_av_proxy.h"
#include "user/verbs_qp_proxy.h"

namespace softib::integration {

using abi::QpAttrMask;

uint32_t HostToNet32(uint32_t value) { return htonl(value); }
uint64_t HostToNet64(uint64_t value) {
  return (static_cast<uint64_t>(htonl(static_cast<uint32_t>(value))) << 32) |
         htonl(static_cast<uint32_t>(value >> 32));
}

Status AllocPd(const user::CaFile& ca, abi::Handle<abi::ObjectType::Pd>* pd) {
  abi::AllocPdIn in{};
  in.ca = ca.ca;
  in.type = abi::PdType::NORMAL;
  abi::AllocPdOut out{};
  const Status status = user::proxy::AllocPd(ca.device, in, out);
  *pd = out.pd;
  return status;
}

Status RegisterBuffer(const user::CaFile& ca, abi::Handle<abi::ObjectType::Pd> pd, void* buffer,
                      uint64_t length, abi::AccessFlags access,
                      abi::Handle<abi::ObjectType::Mr>* mr, uint32_t* lkey, uint32_t* rkey) {
  abi::RegMemIn in{};
  in.pd = pd;
  in.region.vaddr = reinterpret_cast<uintptr_t>(buffer);
  in.region.length = length;
  in.region.access = access;
  abi::RegMemOut out{};
  const Status status = user::proxy::RegMem(ca.device, in, out);
  *mr = out.mr;
  *lkey = out.lkey;
  *rkey = out.rkey;
  return status;
}

Status PortLid(const user::CaFile& ca, uint16_t* lid, uint8_t* link_state) {
  abi::QueryCaIn in{};
  in.ca = ca.ca;
  abi::QueryCaOut out{};
  abi::PortAttributes ports[8] = {};
  const Status status = user::proxy::QueryCa(ca.device, in, out, ports);
  if (status != Status::SUCCESS) return status;
  if (out.num_ports < 1) return Status::INVALID_PORT;
  *lid = ports[0].lid;
  *link_state = ports[0].link_state;
  return Status::SUCCESS;
}

abi::SendWorkRequest SendWr(uint64_t wr_id, abi::WrType type, const void* buffer, uint32_t length,
                            uint32_t lkey) {
  abi::SendWorkRequest wr{};
  wr.wr_id = wr_id;
  wr.wr_type = type;
  wr.send_flags = abi::SendFlags::SIGNALED;
  wr.num_sge = 1;
  wr.sge[0].vaddr = reinterpret_cast<uintptr_t>(buffer);
  wr.sge[0].length = length;
  wr.sge[0].lkey = lkey;
  return wr;
}

abi::RecvWorkRequest RecvWr(uint64_t wr_id, void* buffer, uint32_t length, uint32_t lkey) {
  abi::RecvWorkRequest wr{};
  wr.wr_id = wr_id;
  wr.num_sge = 1;
  wr.sge[0].vaddr = reinterpret_cast<uintptr_t>(buffer);
  wr.sge[0].length = length;
  wr.sge[0].lkey = lkey;
  return wr;
}

Status CreateCqAndQp(const user::CaFile& ca, abi::Handle<abi::ObjectType::Pd> pd, abi::QpType type,
                     uint32_t depth, abi::Handle<abi::ObjectType::Cq>* cq,
                     abi::Handle<abi::ObjectType::Qp>* qp, uint32_t* qpn) {
  abi::CreateCqIn cq_in{};
  cq_in.ca = ca.ca;
  cq_in.size = 2 * depth;
  abi::CreateCqOut cq_out{};
  Status status = user::proxy::CreateCq(ca.device, cq_in, cq_out);
  if (status != Status::SUCCESS) return status;
  *cq = cq_out.cq;

  abi::CreateQpIn qp_in{};
  qp_in.pd = pd;
  qp_in.send_cq = *cq;
  qp_in.recv_cq = *cq;
  qp_in.params.qp_type = type;
  qp_in.params.sq_signaled = 1;
  qp_in.params.caps.sq_depth = depth;
  qp_in.params.caps.rq_depth = depth;
  qp_in.params.caps.sq_sge = 1;
  qp_in.params.caps.rq_sge = 1;
  abi::CreateQpOut qp_out{};
  status = user::proxy::CreateQp(ca.device, qp_in, qp_out);
  if (status != Status::SUCCESS) return status;
  *qp = qp_out.qp;
  *qpn = qp_out.qp_num;
  return Status::SUCCESS;
}

Status RcEndpoint::Create(const user::CaFile& ca, abi::Handle<abi::ObjectType::Pd> pd,
                          uint32_t depth) {
  device_ = ca.device;
  return CreateCqAndQp(ca, pd, abi::QpType::RC, depth, &cq_, &qp_, &qpn_);
}

Status RcEndpoint::MapRings() {
  const Status status = cq_ring_.Map(device_, cq_);
  if (status != Status::SUCCESS) return status;
  return qp_rings_.Map(device_, qp_);
}

Status RcEndpoint::Modify(abi::QpModifyAttributes attributes) {
  abi::ModifyQpIn in{};
  in.qp = qp_;
  in.attributes = attributes;
  return user::proxy::ModifyQp(device_, in);
}

Status RcEndpoint::Init() {
  abi::QpModifyAttributes init{};
  init.mask =
      QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::ACCESS_FLAGS;
  init.state = abi::QpState::INIT;
  init.port_num = 1;
  init.pkey_index = 0;
  init.access_flags = abi::AccessFlags::REMOTE_WRITE | abi::AccessFlags::REMOTE_READ;
  const Status status = Modify(init);
  if (status == Status::SUCCESS) initialized_ = true;
  return status;
}

Status RcEndpoint::Connect(uint16_t remote_lid, uint32_t remote_qpn, const RcTimers& timers) {
  Status status = initialized_ ? Status::SUCCESS : Init();
  if (status != Status::SUCCESS) return status;

  abi::QpModifyAttributes rtr{};
  rtr.mask = QpAttrMask::STATE | QpAttrMask::AV | QpAttrMask::PATH_MTU | QpAttrMask::DEST_QPN |
             QpAttrMask::RQ_PSN | QpAttrMask::MAX_DEST_RD_ATOMIC | QpAttrMask::MIN_RNR_TIMER;
  rtr.state = abi::QpState::RTR;
  rtr.av.port_num = 1;
  rtr.av.dlid = remote_lid;
  rtr.path_mtu = static_cast<uint8_t>(abi::PathMtu::MTU_1024);
  rtr.dest_qpn = remote_qpn;
  rtr.rq_psn = kStartPsn;
  rtr.max_dest_rd_atomic = 1;
  rtr.min_rnr_timer = 1;
  status = Modify(rtr);
  if (status != Status::SUCCESS) return status;

  abi::QpModifyAttributes rts{};
  rts.mask = QpAttrMask::STATE | QpAttrMask::SQ_PSN | QpAttrMask::TIMEOUT |
             QpAttrMask::RETRY_COUNT | QpAttrMask::RNR_RETRY | QpAttrMask::MAX_RD_ATOMIC;
  rts.state = abi::QpState::RTS;
  rts.sq_psn = kStartPsn;
  rts.timeout = timers.timeout;
  rts.retry_count = timers.retry_count;
  rts.rnr_retry = timers.rnr_retry;
  rts.max_rd_atomic = 1;
  return Modify(rts);
}

Status RcEndpoint::Destroy() {
  if (!qp_.IsNull()) {
    abi::DestroyQpIn in{};
    in.qp = qp_;
    const Status status = user::proxy::DestroyQp(device_, in);
    if (status != Status::SUCCESS) return status;
    qp_ = {};
  }
  if (!cq_.IsNull()) {
    abi::DestroyCqIn in{};
    in.cq = cq_;
    const Status status = user::proxy::DestroyCq(device_, in);
    if (status != Status::SUCCESS) return status;
    cq_ = {};
  }
  return Status::SUCCESS;
}

Status RcEndpoint::PostSend(const abi::SendWorkRequest& wr) {
  uint32_t posted = 0;
  return qp_rings_.queue().PostSend(std::span<const abi::SendWorkRequest>(&wr, 1), &posted);
}

Status RcEndpoint::PostRecv(const abi::RecvWorkRequest& wr) {
  uint32_t posted = 0;
  return qp_rings_.queue().PostRecv(std::span<const abi::RecvWorkRequest>(&wr, 1), &posted);
}

Status PollCqOne(user::MappedCq& cq, abi::WorkCompletion* wc,
                 std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    uint32_t count = 0;
    const Status status = cq.queue().PollCq(std::span<abi::WorkCompletion>(wc, 1), &count);
    if (status != Status::NOT_FOUND) return status;
    if (std::chrono::steady_clock::now() > deadline) return Status::TIMEOUT;
    uvp::WaitPolicy policy;
    policy.yield_while_spinning = true;
    policy.sleep_timeout_ns = 10'000'000;  // re-check the deadline every 10 ms
    cq.queue().Wait(policy);
  }
}

Status RcEndpoint::PollOne(abi::WorkCompletion* wc, std::chrono::milliseconds limit) {
  return PollCqOne(cq_ring_, wc, std::chrono::steady_clock::now() + limit);
}

Status RcEndpoint::QueryState(abi::QpState* state) {
  abi::QueryQpIn in{};
  in.qp = qp_;
  abi::QueryQpOut out{};
  const Status status = user::proxy::QueryQp(device_, in, out);
  *state = out.attributes.state;
  return status;
}

}  // namespace softib::integration
