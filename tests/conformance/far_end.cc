#include "far_end.h"

#include <endian.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "claimed_irp.h"
#include "kernel/verbs_ca_ib.h"
#include "kernel/verbs_cm_direct.h"
#include "kernel/verbs_cq_ib.h"
#include "kernel/verbs_pd_av_ib.h"
#include "kernel/verbs_qp_ib.h"
#include "softib/abi/abi_status.h"
#include "softib/al/access_layer.h"
#include "softib/kernel/event.h"
#include "softib/kernel/io.h"
#include "softib/kernel/object_call.h"
#include "softib/mad/mad_sa.h"

namespace softib::conformance {

using abi::Status;

namespace {

bool FarEndOk(Status status, const char* what) {
  if (status != Status::SUCCESS) {
    std::fprintf(stderr, "conformance harness: the far end's %s answered %s\n", what,
                 abi::ToString(status));
  }
  return status == Status::SUCCESS;
}

}  // namespace

std::array<uint8_t, 64> HarnessPath(uint16_t slid, uint16_t dlid) {
  mad::PathRecord path;
  path.SLID = slid;
  path.DLID = dlid;
  path.P_Key = 0xFFFF;
  path.MTU = static_cast<uint8_t>(abi::PathMtu::MTU_1024);
  path.Rate = 3;  // 2.5 Gb/s
  path.Reversible = 1;
  return path.Pack();
}

abi::CmReqParams HarnessReqParams(uint64_t service_id, uint16_t slid, uint16_t dlid) {
  abi::CmReqParams p{};
  p.service_id = htobe64(service_id);
  const auto path = HarnessPath(slid, dlid);
  std::memcpy(p.primary_path, path.data(), path.size());
  p.starting_psn = 0x111111;
  p.responder_resources = 4;
  p.initiator_depth = 2;
  p.remote_cm_response_timeout = 16;
  p.local_cm_response_timeout = 16;
  p.retry_count = 6;
  p.rnr_retry_count = 5;
  p.max_cm_retries = 3;
  return p;
}

abi::CmRepParams HarnessRepParams() {
  abi::CmRepParams p{};
  p.starting_psn = 0x222222;
  p.responder_resources = 2;
  p.initiator_depth = 2;
  p.target_ack_delay = 9;
  p.rnr_retry_count = 4;
  return p;
}

uint64_t FreshServiceId() {
  static std::atomic<uint64_t> next{0x0500000000000001ull};
  return next.fetch_add(1);
}

Status CallWithIrp(kernel::Node* node, const std::function<Status(kernel::Irp*)>& call,
                   std::chrono::nanoseconds limit) {
  kernel::Irp* irp = kernel::IoAllocateIrp(1);
  kernel::IoSetIrpNode(irp, node);
  ClaimedIrpWait wait;
  kernel::IoSetCompletionRoutine(irp, &ClaimedIrpDone, &wait, true, true, true);
  Status status = call(irp);  // completes the IRP too, now or when the call ends
  if (kernel::KeWaitForSingleObject(&wait.done, limit) != Status::SUCCESS) {
    kernel::IoCancelIrp(irp);
    kernel::KeWaitForSingleObject(&wait.done);
  }
  if (status == Status::PENDING) status = irp->IoStatus.Status;
  kernel::IoFreeIrp(irp);
  return status;
}

bool FarEnd::Open() {
  if (al_ != nullptr) return true;
  if (!FarEndOk(kernel::IbOpenAl(node_, client_, &al_), "IbOpenAl")) return false;
  kernel::IB_CA_CREATE ca_create;
  ca_create.ca_guid = htobe64(ca_guid_);
  if (!FarEndOk(kernel::IbCreateAndWait(
                    [&](kernel::Irp* irp) { return kernel::IbOpenCa(al_, &ca_create, irp); }, &ca_),
                "OpenCa")) {
    return false;
  }
  abi::QueryCaOut query{};
  std::vector<abi::PortAttributes> ports(abi::kMaxCaPorts);
  if (!FarEndOk(kernel::IbCallAndWait(
                    [&](kernel::Irp* irp) { return kernel::IbQueryCa(ca_, &query, ports, irp); }),
                "QueryCa")) {
    return false;
  }
  lid_ = ports[0].lid;
  port_guid_be_ = ports[0].port_guid;
  const kernel::IB_PD_CREATE pd_create;
  if (!FarEndOk(
          kernel::IbCreateAndWait(
              [&](kernel::Irp* irp) { return kernel::IbAllocPd(ca_, &pd_create, irp); }, &pd_),
          "AllocPd")) {
    return false;
  }
  kernel::IB_CQ_CREATE cq_create;
  cq_create.size = 64;
  return FarEndOk(
      kernel::IbCreateAndWait(
          [&](kernel::Irp* irp) { return kernel::IbCreateCq(ca_, &cq_create, irp); }, &cq_),
      "CreateCq");
}

void FarEnd::Close() {
  // Releasing the AL destroys what the client made (QPs on endpoints, the CQ, PD and CA) as
  // a closing file does; the public structures are freed after it.
  if (al_ != nullptr) kernel::IbReleaseAl(al_);
  al_ = nullptr;
  for (kernel::IB_QP* qp : qps_) delete qp;
  qps_.clear();
  delete cq_;
  delete pd_;
  delete ca_;
  ca_ = nullptr;
  pd_ = nullptr;
  cq_ = nullptr;
}

uint64_t FarEnd::ca() const { return ca_ != nullptr ? ca_->handle : 0; }
uint64_t FarEnd::pd() const { return pd_ != nullptr ? pd_->handle : 0; }
uint64_t FarEnd::cq() const { return cq_ != nullptr ? cq_->handle : 0; }

uint64_t FarEnd::InitQp() {
  kernel::IB_QP_CREATE create;
  create.send_cq = cq_;
  create.recv_cq = cq_;
  create.params.qp_type = abi::QpType::RC;
  create.params.sq_signaled = 1;
  create.params.caps.sq_depth = 16;
  create.params.caps.rq_depth = 16;
  create.params.caps.sq_sge = 1;
  create.params.caps.rq_sge = 1;
  kernel::IB_QP* qp = nullptr;
  if (!FarEndOk(kernel::IbCreateAndWait(
                    [&](kernel::Irp* irp) { return kernel::IbCreateQp(pd_, &create, irp); }, &qp),
                "CreateQp")) {
    return 0;
  }
  qps_.push_back(qp);
  using M = abi::QpAttrMask;
  abi::ModifyQpIn modify{};
  modify.attributes.mask = M::STATE | M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS;
  modify.attributes.state = abi::QpState::INIT;
  modify.attributes.port_num = 1;
  modify.attributes.access_flags = abi::AccessFlags::REMOTE_WRITE | abi::AccessFlags::REMOTE_READ;
  if (!FarEndOk(kernel::IbCallAndWait(
                    [&](kernel::Irp* irp) { return kernel::IbModifyQp(qp, modify, irp); }),
                "ModifyQp to INIT")) {
    return 0;
  }
  return qp->handle;
}

bool FarEnd::Listen(uint64_t service_id, uint64_t* cep) {
  abi::CreateCepOut created{};
  if (!FarEndOk(kernel::IbCreateCep(al_, {{kernel::IbGetAlHandle(al_)}, 0}, created),
                "CreateCep")) {
    return false;
  }
  *cep = created.cep.value;
  abi::CepListenIn in{};
  in.cep.value = *cep;
  in.service_id = htobe64(service_id);
  return FarEndOk(kernel::IbCepListen(al_, in), "CepListen");
}

bool FarEnd::SendReq(uint64_t service_id, uint16_t dlid, uint64_t* cep) {
  abi::CreateCepOut created{};
  if (!FarEndOk(kernel::IbCreateCep(al_, {{kernel::IbGetAlHandle(al_)}, 0}, created),
                "CreateCep")) {
    return false;
  }
  *cep = created.cep.value;
  abi::CepSendReqIn in{};
  in.cep.value = *cep;
  in.qp.value = InitQp();
  in.params = HarnessReqParams(service_id, lid_, dlid);
  return in.qp.value != 0 && FarEndOk(kernel::IbCepSendReq(al_, in, {}), "CepSendReq");
}

bool FarEnd::SendRep(uint64_t cep) {
  abi::CepSendRepIn in{};
  in.cep.value = cep;
  in.qp.value = InitQp();
  in.params = HarnessRepParams();
  return in.qp.value != 0 && FarEndOk(kernel::IbCepSendRep(al_, in, {}), "CepSendRep");
}

bool FarEnd::SendDreq(uint64_t cep) {
  abi::CepSendDreqIn in{};
  in.cep.value = cep;
  return FarEndOk(kernel::IbCepSendDreq(al_, in, {}), "CepSendDreq");
}

bool FarEnd::SendLap(uint64_t cep, uint16_t dlid) {
  abi::CepSendLapIn in{};
  in.cep.value = cep;
  const auto path = HarnessPath(lid_, dlid);
  std::memcpy(in.alternate_path, path.data(), path.size());
  in.remote_cm_response_timeout = 16;
  return FarEndOk(kernel::IbCepSendLap(al_, in, {}), "CepSendLap");
}

bool FarEnd::SendSidrReq(uint64_t service_id, uint16_t dlid, uint64_t* cep) {
  abi::CreateCepOut created{};
  if (!FarEndOk(kernel::IbCreateCep(al_, {{kernel::IbGetAlHandle(al_)}, 0}, created),
                "CreateCep")) {
    return false;
  }
  *cep = created.cep.value;
  abi::CepSendSidrReqIn in{};
  in.cep.value = *cep;
  in.service_id = htobe64(service_id);
  const auto path = HarnessPath(lid_, dlid);
  std::memcpy(in.path, path.data(), path.size());
  in.timeout_ms = 1000;
  in.max_retries = 3;
  return FarEndOk(kernel::IbCepSendSidrReq(al_, in, {}), "CepSendSidrReq");
}

bool FarEnd::Expect(uint64_t cep, abi::CepEventType type, uint64_t* new_cep) {
  // The call pends until the event arrives.
  abi::CepGetEventOut out{};
  const Status status = CallWithIrp(
      node_, [&](kernel::Irp* irp) { return kernel::IbCepGetEvent(al_, {{cep}}, out, irp); });
  if (!FarEndOk(status, "CepGetEvent")) return false;
  if (out.event != type) {
    std::fprintf(stderr, "conformance harness: the far end got CEP event %u, not %u\n",
                 static_cast<unsigned>(out.event), static_cast<unsigned>(type));
    return false;
  }
  if (new_cep != nullptr) *new_cep = out.new_cep.value;
  return true;
}

}  // namespace softib::conformance
