// The MAD verbs (CreateMadPool ... GetMadEvent) over MAD services and special QPs.
#include "runtime/al/src/mad_handlers.h"

#include "runtime/al/src/mad_format.h"
#include "runtime/al/src/mad_service.h"
#include "softib/rmpp/rmpp.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

Status MadCreatePool(const kernel::CallContext& ctx, const abi::CreateMadPoolIn& in,
                     kernel::CreateMadPoolRefs& refs, abi::CreateMadPoolOut& out) {
  if (in.max_elements != 0 && in.max_elements < in.min_elements) return Status::INVALID_SETTING;
  auto* pool = new MadPoolObj(InstanceOf(ctx), in.min_elements, in.max_elements);
  if (!Adopt(pool, refs.al.get())) {
    kernel::DereferenceObject(pool);
    return Status::INVALID_AL_HANDLE;
  }
  return Publish(InstanceOf(ctx), pool, &out.pool.value);
}

Status MadRegSvc(const kernel::CallContext& ctx, const abi::RegMadSvcIn& in,
                 kernel::RegMadSvcRefs& refs, abi::RegMadSvcOut& out) {
  QpObj* qp = As<QpObj>(refs.qp);
  auto* pool = As<MadPoolObj>(refs.pool);
  SpecialQp* sqp = SpecialQpOf(qp);
  if (sqp == nullptr) return Status::INVALID_SERVICE_TYPE;
  const abi::MadSvcParams& p = in.params;
  // QP0 carries SMPs only, QP1 and MAD QPs everything else (IBA 13.5.1); RMPP is a GSI
  // protocol.
  if (p.mgmt_class == 0 || mad::IsSmpClass(p.mgmt_class) != sqp->smi()) {
    return Status::INVALID_SETTING;
  }
  if (p.svc_type == abi::MadSvcType::RMPP && sqp->smi()) return Status::INVALID_SETTING;
  if (p.support_unsolicited != 0 && (p.method_mask[15] & 0x80) != 0) {
    return Status::INVALID_SETTING;  // method 127 does not exist as a request
  }
  if (!pool->TryAddChild()) return Status::INVALID_MAD_POOL_HANDLE;
  auto* svc = new MadSvcObj(InstanceOf(ctx), qp, pool, sqp, p);
  if (!Adopt(svc, qp)) {
    pool->RemoveChild();
    kernel::DereferenceObject(svc);
    return Status::INVALID_QP_HANDLE;
  }
  if (const Status s = sqp->AddService(svc); s != Status::SUCCESS) {
    svc->ForceDestroy();  // never registered: OnDestroy's removal finds nothing
    kernel::DereferenceObject(svc);
    return s;
  }
  return Publish(InstanceOf(ctx), svc, &out.svc.value);
}

Status SendMadVerb(const kernel::CallContext&, const abi::SendMadIn& in,
                   std::span<const uint8_t> bytes, kernel::SendMadRefs& refs,
                   abi::SendMadOut& out) {
  auto* svc = As<MadSvcObj>(refs.svc);
  const abi::MadSendParams& p = in.params;
  const bool segmented = svc->rmpp() && p.rmpp_version == 1;
  if (p.rmpp_version > 1 || (p.rmpp_version == 1 && !svc->rmpp())) return Status::INVALID_SETTING;
  if (segmented ? !RmppSender::Valid(bytes) : (bytes.size() != mad::kMadSize)) {
    return Status::INVALID_SETTING;
  }
  if (p.response_expected != 0 && p.timeout_ms == 0) return Status::INVALID_SETTING;
  if (!mad::IsSmpClass(mad::Class(bytes.data())) != !svc->sqp->smi()) {
    return Status::INVALID_SETTING;
  }
  MadSendSpec spec;
  if (refs.av) {
    auto* av = As<AvObj>(refs.av);
    if (av->pd_obj->ca_obj->ca.get() != svc->sqp->ca()) return Status::INVALID_AV_HANDLE;
    kernel::SpinLockGuard guard(av->lock);
    spec.to.av = av->av;
  } else {
    spec.to.av.dlid = p.remote_lid;
    spec.to.av.sl = p.remote_sl;
    spec.to.av.src_path_bits = p.path_bits;
  }
  spec.to.remote_qpn = p.remote_qpn;
  // QP1's Q_Key is well known; IBAL's remote_qkey is in network order.
  spec.to.remote_qkey = svc->sqp->smi() ? 0 : be32toh(p.remote_qkey);
  spec.to.pkey_index = p.pkey_index;
  spec.context = p.context;
  spec.response_expected = p.response_expected != 0;
  spec.timeout_ms = p.timeout_ms;
  spec.retries = p.retry_count;
  spec.segmented = segmented;
  auto send = MakeMadSend(svc, bytes, spec);
  const Status s = svc->sqp->Send(send);
  if (s == Status::SUCCESS) out.send_id = send->send_id;
  return s;
}

Status MadCancel(const abi::CancelMadIn& in, kernel::CancelMadRefs& refs) {
  auto* svc = As<MadSvcObj>(refs.svc);
  return svc->sqp->Cancel(svc, in.send_id);
}

Status MadGetEvent(kernel::GetMadEventRefs& refs, abi::GetMadEventOut& out, std::span<uint8_t> mad,
                   Irp* irp) {
  return As<MadSvcObj>(refs.svc)->Wait(irp, out, mad);
}

}  // namespace softib::al
