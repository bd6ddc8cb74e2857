// Queue pairs: create (the QP uses its CQs and SRQ, which then answer busy on destroy),
// the special QPs, query, modify, destroy.
#include <endian.h>

#include "runtime/al/src/handlers.h"
#include "runtime/al/src/mad_service.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

namespace {

// Counts the QP as a user of its CQs and SRQ; false (nothing counted) when one of them is
// being destroyed or lives on another CA.
Status UseQueues(PdObj* pd, CqObj* scq, CqObj* rcq, SrqObj* srq) {
  AlCa* ca = pd->ca_obj->ca.get();
  if (scq->ca_obj->ca.get() != ca || rcq->ca_obj->ca.get() != ca) return Status::INVALID_CQ_HANDLE;
  if (srq != nullptr && srq->pd_obj != pd) return Status::INVALID_SETTING;
  if (!scq->TryAddChild()) return Status::INVALID_CQ_HANDLE;
  if (!rcq->TryAddChild()) {
    scq->RemoveChild();
    return Status::INVALID_CQ_HANDLE;
  }
  if (srq != nullptr && !srq->TryAddChild()) {
    scq->RemoveChild();
    rcq->RemoveChild();
    return Status::INVALID_SRQ_HANDLE;
  }
  return Status::SUCCESS;
}

void UnuseQueues(CqObj* scq, CqObj* rcq, SrqObj* srq) {
  scq->RemoveChild();
  rcq->RemoveChild();
  if (srq != nullptr) srq->RemoveChild();
}

// The QP object over a device QP that exists: it owns the uses and the device QP from here.
Status PublishQp(const kernel::CallContext& ctx, PdObj* pd, CqObj* scq, CqObj* rcq, SrqObj* srq,
                 uint32_t qpn, uint32_t qp_num, abi::QpType type, uint64_t context,
                 uint64_t* handle, uint8_t port = 0, std::shared_ptr<SpecialQp> mad_qp = nullptr) {
  auto* object = new QpObj(InstanceOf(ctx), pd, scq, rcq, srq, qpn, qp_num, type, context, port);
  object->mad_qp = std::move(mad_qp);
  if (!Adopt(object, pd)) {
    kernel::DereferenceObject(object);
    return Status::INVALID_PD_HANDLE;
  }
  object->Register();
  return Publish(InstanceOf(ctx), object, handle);
}

class QpVerbs final : public kernel::QpVerbHandlers {
 public:
  Status CreateQp(const kernel::CallContext& ctx, const abi::CreateQpIn& in,
                  kernel::CreateQpRefs& refs, abi::CreateQpOut& out, Irp*) override {
    PdObj* pd = As<PdObj>(refs.pd);
    CqObj* scq = As<CqObj>(refs.send_cq);
    CqObj* rcq = As<CqObj>(refs.recv_cq);
    SrqObj* srq = refs.srq ? As<SrqObj>(refs.srq) : nullptr;
    if (in.params.qp_type == abi::QpType::MAD) return CreateMadQp(ctx, in, pd, scq, rcq, srq, out);
    if (const Status s = UseQueues(pd, scq, rcq, srq); s != Status::SUCCESS) return s;
    uint32_t qpn = 0;
    const Status s =
        pd->ca_obj->ca->ci->CreateQp(pd->pd, in.params, scq->number, rcq->number,
                                     srq != nullptr ? srq->number : 0, &qpn, &out.caps);
    if (s != Status::SUCCESS) {
      UnuseQueues(scq, rcq, srq);
      return s;
    }
    out.qp_num = qpn;
    return PublishQp(ctx, pd, scq, rcq, srq, qpn, qpn, in.params.qp_type, in.context,
                     &out.qp.value);
  }

  Status GetSpecialQp(const kernel::CallContext& ctx, const abi::GetSpecialQpIn& in,
                      kernel::GetSpecialQpRefs& refs, abi::GetSpecialQpOut& out, Irp*) override {
    PdObj* pd = As<PdObj>(refs.pd);
    CqObj* scq = As<CqObj>(refs.send_cq);
    CqObj* rcq = As<CqObj>(refs.recv_cq);
    // The port by its GUID.
    ci::CaInterface* ci = pd->ca_obj->ca->ci;
    std::vector<abi::PortAttributes> ports(ci->num_ports());
    abi::CaAttributes attributes;
    if (const Status s = ci->QueryCa(&attributes, ports); s != Status::SUCCESS) return s;
    uint8_t port = 0;
    for (uint8_t p = 1; p <= ports.size(); ++p) {
      if (ports[p - 1].port_guid == in.port_guid) port = p;  // both network order
    }
    if (port == 0) return Status::INVALID_GUID;
    if (const Status s = UseQueues(pd, scq, rcq, nullptr); s != Status::SUCCESS) return s;
    // An alias reaches the AL's own QP0/QP1 of the port through MAD services (IBAL
    // ib_get_spl_qp with IB_QPT_QP0_ALIAS/QP1_ALIAS): no device QP of its own.
    const abi::QpType type = in.params.qp_type;
    if (type == abi::QpType::SMI_ALIAS || type == abi::QpType::GSI_ALIAS) {
      out.qp_num = type == abi::QpType::SMI_ALIAS ? 0 : 1;
      out.caps = in.params.caps;
      return PublishQp(ctx, pd, scq, rcq, nullptr, 0, out.qp_num, type, in.context, &out.qp.value,
                       port);
    }
    uint32_t qp = 0;
    const Status s = ci->CreateSpecialQp(pd->pd, port, in.params, scq->number, rcq->number, &qp,
                                         &out.qp_num, &out.caps);
    if (s != Status::SUCCESS) {
      UnuseQueues(scq, rcq, nullptr);
      return s;
    }
    return PublishQp(ctx, pd, scq, rcq, nullptr, qp, out.qp_num, in.params.qp_type, in.context,
                     &out.qp.value, port);
  }

  Status QueryQp(const kernel::CallContext&, const abi::QueryQpIn&, kernel::QueryQpRefs& refs,
                 abi::QueryQpOut& out, Irp*) override {
    QpObj* qp = As<QpObj>(refs.qp);
    if (qp->alias()) {
      out.attributes.qp_type = qp->type;
      out.attributes.state = abi::QpState::RTS;  // the AL's special QP behind it is
    } else if (const Status s = qp->pd_obj->ca_obj->ca->ci->QueryQp(qp->qpn, &out.attributes);
               s != Status::SUCCESS) {
      return s;
    }
    if (qp->mad_qp) out.attributes.qp_type = qp->type;  // UD on the device
    out.attributes.qp_num = qp->qp_num;
    out.pd.value = qp->pd_obj->handle;
    out.send_cq.value = qp->send_cq->handle;
    out.recv_cq.value = qp->recv_cq->handle;
    out.srq.value = qp->srq != nullptr ? qp->srq->handle.load() : 0;
    return Status::SUCCESS;
  }

  Status ModifyQp(const kernel::CallContext&, const abi::ModifyQpIn& in, kernel::ModifyQpRefs& refs,
                  Irp*) override {
    QpObj* qp = As<QpObj>(refs.qp);
    if (qp->alias()) return Status::SUCCESS;  // the AL keeps its special QP in RTS
    const Status s = qp->pd_obj->ca_obj->ca->ci->ModifyQp(qp->qpn, in.attributes);
    if (s == Status::SUCCESS && qp->mad_qp) qp->mad_qp->OnModified(in.attributes);
    return s;
  }

 private:
  // A MAD QP (mad_qp.cc): the AL's UD QP behind it; the client's CQs are counted as used but
  // get nothing (the MAD layer takes its completions), and it has no SRQ.
  static Status CreateMadQp(const kernel::CallContext& ctx, const abi::CreateQpIn& in, PdObj* pd,
                            CqObj* scq, CqObj* rcq, SrqObj* srq, abi::CreateQpOut& out) {
    if (srq != nullptr) return Status::INVALID_SETTING;
    if (const Status s = UseQueues(pd, scq, rcq, nullptr); s != Status::SUCCESS) return s;
    std::shared_ptr<SpecialQp> engine;
    if (const Status s = StartMadQp(pd->ca_obj->ca, &engine, &out.caps); s != Status::SUCCESS) {
      UnuseQueues(scq, rcq, nullptr);
      return s;
    }
    out.qp_num = engine->qp_number();
    return PublishQp(ctx, pd, scq, rcq, nullptr, out.qp_num, out.qp_num, abi::QpType::MAD,
                     in.context, &out.qp.value, 0, std::move(engine));
  }

  Status DestroyQp(const kernel::CallContext& ctx, const abi::DestroyQpIn& in,
                   kernel::DestroyQpRefs&, Irp*) override {
    return DestroyHandle(ctx, in.qp.value, abi::ObjectType::Qp, Status::INVALID_QP_HANDLE);
  }
};

class SrqVerbs final : public kernel::SrqVerbHandlers {
 public:
  Status CreateSrq(const kernel::CallContext& ctx, const abi::CreateSrqIn& in,
                   kernel::CreateSrqRefs& refs, abi::CreateSrqOut& out, Irp*) override {
    PdObj* pd = As<PdObj>(refs.pd);
    uint32_t number = 0;
    if (const Status s =
            pd->ca_obj->ca->ci->CreateSrq(pd->pd, in.attributes, &number, &out.granted);
        s != Status::SUCCESS) {
      return s == Status::INVALID_SETTING ? Status::INVALID_SRQ_SIZE : s;
    }
    auto* object = new SrqObj(InstanceOf(ctx), pd, number, in.context);
    if (!Adopt(object, pd)) {
      kernel::DereferenceObject(object);
      return Status::INVALID_PD_HANDLE;
    }
    object->Register();
    return Publish(InstanceOf(ctx), object, &out.srq.value);
  }

  Status QuerySrq(const kernel::CallContext&, const abi::QuerySrqIn&, kernel::QuerySrqRefs& refs,
                  abi::QuerySrqOut& out, Irp*) override {
    SrqObj* srq = As<SrqObj>(refs.srq);
    return srq->pd_obj->ca_obj->ca->ci->QuerySrq(srq->number, &out.attributes);
  }

  Status ModifySrq(const kernel::CallContext&, const abi::ModifySrqIn& in,
                   kernel::ModifySrqRefs& refs, Irp*) override {
    SrqObj* srq = As<SrqObj>(refs.srq);
    return srq->pd_obj->ca_obj->ca->ci->ModifySrq(srq->number, in.mask, in.attributes);
  }

  Status DestroySrq(const kernel::CallContext& ctx, const abi::DestroySrqIn& in,
                    kernel::DestroySrqRefs&, Irp*) override {
    return DestroyHandle(ctx, in.srq.value, abi::ObjectType::Srq, Status::INVALID_SRQ_HANDLE);
  }
};

class McastVerbs final : public kernel::McastVerbHandlers {
 public:
  Status AttachMcast(const kernel::CallContext& ctx, const abi::AttachMcastIn& in,
                     kernel::AttachMcastRefs& refs, abi::AttachMcastOut& out, Irp*) override {
    QpObj* qp = As<QpObj>(refs.qp);
    ci::CaInterface* ci = qp->pd_obj->ca_obj->ca->ci;
    if (const Status s = ci->AttachMcast(qp->qpn, in.mgid, in.mlid); s != Status::SUCCESS) {
      return s;
    }
    auto* object = new McastObj(InstanceOf(ctx), qp, in.mgid, in.mlid);
    if (!Adopt(object, qp)) {
      kernel::DereferenceObject(object);
      return Status::INVALID_QP_HANDLE;
    }
    return Publish(InstanceOf(ctx), object, &out.mcast.value);
  }

  Status DetachMcast(const kernel::CallContext& ctx, const abi::DetachMcastIn& in,
                     kernel::DetachMcastRefs&, Irp*) override {
    return DestroyHandle(ctx, in.mcast.value, abi::ObjectType::Mcast, Status::INVALID_MCAST_HANDLE);
  }
};

}  // namespace

kernel::QpVerbHandlers* QpHandlers() {
  static QpVerbs verbs;
  return &verbs;
}

kernel::SrqVerbHandlers* SrqHandlers() {
  static SrqVerbs verbs;
  return &verbs;
}

kernel::McastVerbHandlers* McastHandlers() {
  static McastVerbs verbs;
  return &verbs;
}

}  // namespace softib::al
