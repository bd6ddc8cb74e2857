// Queue pairs: create (the QP uses its CQs and SRQ, which then answer busy on destroy),
// the special QPs, query, modify, destroy.
#include <endian.h>

#include <memory>

#include "runtime/al/src/ci_call.h"
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
Status PublishQp(Instance* instance, PdObj* pd, CqObj* scq, CqObj* rcq, SrqObj* srq, uint32_t qpn,
                 uint32_t qp_num, abi::QpType type, uint64_t context, uint64_t* handle,
                 uint8_t port = 0, std::shared_ptr<SpecialQp> mad_qp = nullptr) {
  auto* object = new QpObj(instance, pd, scq, rcq, srq, qpn, qp_num, type, context, port);
  object->mad_qp = std::move(mad_qp);
  if (!Adopt(object, pd)) {
    kernel::DereferenceObject(object);
    return Status::INVALID_PD_HANDLE;
  }
  object->Register();
  return Publish(instance, object, handle);
}

class QpVerbs final : public kernel::QpVerbHandlers {
 public:
  // As ModifyQp: the CI IRP is built here, its input written straight into its system
  // buffer, and the coroutine carries the IRP, not the verb's input.
  Status CreateQp(const kernel::CallContext& ctx, const abi::CreateQpIn& in,
                  kernel::CreateQpRefs& refs, abi::CreateQpOut& out, Irp* irp) override {
    PdObj* pd = As<PdObj>(refs.pd);
    CqObj* scq = As<CqObj>(refs.send_cq);
    CqObj* rcq = As<CqObj>(refs.recv_cq);
    SrqObj* srq = refs.srq ? As<SrqObj>(refs.srq) : nullptr;
    if (in.params.qp_type == abi::QpType::MAD) return CreateMadQp(ctx, in, refs, irp, out);
    if (const Status s = UseQueues(pd, scq, rcq, srq); s != Status::SUCCESS) return s;
    AlCa* ca = pd->ca_obj->ca.get();
    if (ca->removed.load()) {
      UnuseQueues(scq, rcq, srq);
      return Status::CA_REMOVED;
    }
    Instance* instance = InstanceOf(ctx);
    const CiRequestor who = RequestorOf(instance);
    abi::CiCreateQpIn* ci_in = nullptr;
    Irp* ci_irp = kernel::BuildCiCreateQpIrpInPlace(ca->lower, who.file, who.mode, nullptr, &ci_in);
    if (ci_irp == nullptr) {
      UnuseQueues(scq, rcq, srq);
      return Status::INSUFFICIENT_RESOURCES;
    }
    *ci_in = {pd->pd, scq->number, rcq->number, srq != nullptr ? srq->number : 0, in.params};
    return CreateQpTask(instance, ca, ci_irp, in.params.qp_type, in.context, std::move(refs), &out)
        .Start(irp);
  }

  // The queues' uses are counted: the QP object takes them over, or they are given back.
  // `ci_irp` (built by CreateQp) belongs to the task from here.
  static kernel::VerbTask CreateQpTask(Instance* instance, AlCa* ca, Irp* ci_irp, abi::QpType type,
                                       uint64_t context, kernel::CreateQpRefs refs,
                                       abi::CreateQpOut* out) {
    constexpr uint64_t kLength = sizeof(abi::CreateQpOut);
    PdObj* pd = As<PdObj>(refs.pd);
    CqObj* scq = As<CqObj>(refs.send_cq);
    CqObj* rcq = As<CqObj>(refs.recv_cq);
    SrqObj* srq = refs.srq ? As<SrqObj>(refs.srq) : nullptr;
    CiIrp ci(ca, ci_irp);
    const Status s = co_await ci.Send();
    if (s != Status::SUCCESS) {
      UnuseQueues(scq, rcq, srq);
      co_return {s, kLength};
    }
    const auto* answer = ci.Output<abi::CiCreateQpOut>();
    out->caps = answer->caps;
    out->qp_num = answer->qpn;
    co_return {PublishQp(instance, pd, scq, rcq, srq, answer->qpn, answer->qpn, type, context,
                         &out->qp.value),
               kLength};
  }

  Status GetSpecialQp(const kernel::CallContext& ctx, const abi::GetSpecialQpIn& in,
                      kernel::GetSpecialQpRefs& refs, abi::GetSpecialQpOut& out,
                      Irp* irp) override {
    return GetSpecialQpTask(InstanceOf(ctx), in, std::move(refs), &out).Start(irp);
  }

  static kernel::VerbTask GetSpecialQpTask(Instance* instance, abi::GetSpecialQpIn in,
                                           kernel::GetSpecialQpRefs refs,
                                           abi::GetSpecialQpOut* out) {
    constexpr uint64_t kLength = sizeof(abi::GetSpecialQpOut);
    PdObj* pd = As<PdObj>(refs.pd);
    CqObj* scq = As<CqObj>(refs.send_cq);
    CqObj* rcq = As<CqObj>(refs.recv_cq);
    AlCa* ca = pd->ca_obj->ca.get();
    if (ca->removed.load()) co_return {Status::CA_REMOVED, kLength};
    const CiRequestor who = RequestorOf(instance);
    // The port by its GUID.
    uint8_t port = 0;
    {
      const uint32_t num_ports = ca->ci->num_ports();
      const auto length = static_cast<uint32_t>(sizeof(abi::CiQueryCaOut) +
                                                num_ports * sizeof(abi::PortAttributes));
      CiIrp query(ca, kernel::BuildCiQueryCaIrp(ca->lower, who.file, who.mode, nullptr, length));
      if (!query.built()) co_return {Status::INSUFFICIENT_RESOURCES, kLength};
      if (const Status s = co_await query.Send(); s != Status::SUCCESS) co_return {s, kLength};
      const auto* answer = query.Output<abi::CiQueryCaOut>();
      const auto* ports = reinterpret_cast<const abi::PortAttributes*>(
          static_cast<const uint8_t*>(query.Buffer()) + sizeof(abi::CiQueryCaOut));
      for (uint32_t p = 1; p <= answer->num_ports && p <= num_ports; ++p) {
        if (ports[p - 1].port_guid == in.port_guid) port = static_cast<uint8_t>(p);  // both BE
      }
    }
    if (port == 0) co_return {Status::INVALID_GUID, kLength};
    if (const Status s = UseQueues(pd, scq, rcq, nullptr); s != Status::SUCCESS) {
      co_return {s, kLength};
    }
    // An alias reaches the AL's own QP0/QP1 of the port through MAD services (IBAL
    // ib_get_spl_qp with IB_QPT_QP0_ALIAS/QP1_ALIAS): no device QP of its own.
    const abi::QpType type = in.params.qp_type;
    if (type == abi::QpType::SMI_ALIAS || type == abi::QpType::GSI_ALIAS) {
      out->qp_num = type == abi::QpType::SMI_ALIAS ? 0 : 1;
      out->caps = in.params.caps;
      co_return {PublishQp(instance, pd, scq, rcq, nullptr, 0, out->qp_num, type, in.context,
                           &out->qp.value, port),
                 kLength};
    }
    CiIrp ci(ca, kernel::BuildCiCreateSpecialQpIrp(
                     ca->lower, who.file, who.mode,
                     {pd->pd, scq->number, rcq->number, port, 0, 0, in.params}, nullptr));
    const Status s = ci.built() ? co_await ci.Send() : Status::INSUFFICIENT_RESOURCES;
    if (s != Status::SUCCESS) {
      UnuseQueues(scq, rcq, nullptr);
      co_return {s, kLength};
    }
    const auto* answer = ci.Output<abi::CiCreateSpecialQpOut>();
    out->qp_num = answer->qp_num;
    out->caps = answer->caps;
    co_return {PublishQp(instance, pd, scq, rcq, nullptr, answer->qp, out->qp_num, type, in.context,
                         &out->qp.value, port),
               kLength};
  }

  Status QueryQp(const kernel::CallContext& ctx, const abi::QueryQpIn&, kernel::QueryQpRefs& refs,
                 abi::QueryQpOut& out, Irp* irp) override {
    return QueryQpTask(InstanceOf(ctx), std::move(refs.qp), &out).Start(irp);
  }

  static kernel::VerbTask QueryQpTask(Instance* instance, kernel::ObjectRef qp_ref,
                                      abi::QueryQpOut* out) {
    constexpr uint64_t kLength = sizeof(abi::QueryQpOut);
    QpObj* qp = As<QpObj>(qp_ref);
    if (qp->alias()) {
      out->attributes.qp_type = qp->type;
      out->attributes.state = abi::QpState::RTS;  // the AL's special QP behind it is
    } else {
      AlCa* ca = qp->pd_obj->ca_obj->ca.get();
      if (ca->removed.load()) co_return {Status::CA_REMOVED, kLength};
      const CiRequestor who = RequestorOf(instance);
      CiIrp ci(ca, kernel::BuildCiQueryQpIrp(ca->lower, who.file, who.mode, {qp->qpn}, nullptr));
      if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, kLength};
      if (const Status s = co_await ci.Send(); s != Status::SUCCESS) co_return {s, kLength};
      out->attributes = ci.Output<abi::CiQueryQpOut>()->attributes;
    }
    if (qp->mad_qp) out->attributes.qp_type = qp->type;  // UD on the device
    out->attributes.qp_num = qp->qp_num;
    out->pd.value = qp->pd_obj->handle;
    out->send_cq.value = qp->send_cq->handle;
    out->recv_cq.value = qp->recv_cq->handle;
    out->srq.value = qp->srq != nullptr ? qp->srq->handle.load() : 0;
    co_return {Status::SUCCESS, kLength};
  }

  // The CI IRP is built here, before the coroutine starts, with the attributes written
  // straight into its system buffer: the coroutine's frame then carries the IRP and the QP's
  // reference, not a 144-byte copy of the attributes (and no second copy into a CiModifyQpIn
  // for the builder to copy a third time). Only a MAD QP needs them afterwards (its engine
  // follows the state), so only it keeps a copy.
  Status ModifyQp(const kernel::CallContext& ctx, const abi::ModifyQpIn& in,
                  kernel::ModifyQpRefs& refs, Irp* irp) override {
    QpObj* qp = As<QpObj>(refs.qp);
    if (qp->alias()) return Status::SUCCESS;  // the AL keeps its QP in RTS
    AlCa* ca = qp->pd_obj->ca_obj->ca.get();
    if (ca->removed.load()) return Status::CA_REMOVED;
    const CiRequestor who = RequestorOf(InstanceOf(ctx));
    abi::CiModifyQpIn* ci_in = nullptr;
    Irp* ci_irp = kernel::BuildCiModifyQpIrpInPlace(ca->lower, who.file, who.mode, &ci_in);
    if (ci_irp == nullptr) return Status::INSUFFICIENT_RESOURCES;
    ci_in->qpn = qp->qpn;
    ci_in->attributes = in.attributes;
    std::unique_ptr<abi::QpModifyAttributes> mad_attributes;
    if (qp->mad_qp) mad_attributes = std::make_unique<abi::QpModifyAttributes>(in.attributes);
    return ModifyQpTask(ca, ci_irp, std::move(refs.qp), std::move(mad_attributes)).Start(irp);
  }

  // `ci_irp` (built by ModifyQp) belongs to the task from here.
  static kernel::VerbTask ModifyQpTask(AlCa* ca, Irp* ci_irp, kernel::ObjectRef qp_ref,
                                       std::unique_ptr<abi::QpModifyAttributes> mad_attributes) {
    CiIrp ci(ca, ci_irp);
    const Status s = co_await ci.Send();
    // DISPATCH-safe (a spin lock): it may run in the DPC that completed the IRP.
    if (s == Status::SUCCESS && mad_attributes) {
      As<QpObj>(qp_ref)->mad_qp->OnModified(*mad_attributes);
    }
    co_return {s, 0};
  }

 private:
  // A MAD QP (mad_qp.cc): the AL's UD QP behind it; the client's CQs are counted as used but
  // get nothing (the MAD layer takes its completions), and it has no SRQ.
  // A MAD QP: its engine (a SpecialQp of type MAD) comes up through its chain of CI IRPs,
  // and the verb goes on in the last one's completion.
  static Status CreateMadQp(const kernel::CallContext& ctx, const abi::CreateQpIn& in,
                            kernel::CreateQpRefs& refs, Irp* irp, abi::CreateQpOut& out) {
    if (refs.srq) return Status::INVALID_SETTING;
    PdObj* pd = As<PdObj>(refs.pd);
    if (const Status s = UseQueues(pd, As<CqObj>(refs.send_cq), As<CqObj>(refs.recv_cq), nullptr);
        s != Status::SUCCESS) {
      return s;
    }
    return CreateMadQpTask(InstanceOf(ctx), in.context, std::move(refs), &out).Start(irp);
  }

  static kernel::VerbTask CreateMadQpTask(Instance* instance, uint64_t context,
                                          kernel::CreateQpRefs refs, abi::CreateQpOut* out) {
    constexpr uint64_t kLength = sizeof(abi::CreateQpOut);
    PdObj* pd = As<PdObj>(refs.pd);
    CqObj* scq = As<CqObj>(refs.send_cq);
    CqObj* rcq = As<CqObj>(refs.recv_cq);
    const std::shared_ptr<AlCa>& ca = pd->ca_obj->ca;
    if (ca->removed.load()) {
      UnuseQueues(scq, rcq, nullptr);
      co_return {Status::CA_REMOVED, kLength};
    }
    auto engine = std::make_shared<SpecialQp>(ca.get(), 0, abi::QpType::MAD);
    Status started = Status::SUCCESS;
    co_await AwaitDone([qp = engine.get(), result = &started](std::function<void()> resume) {
      qp->Start([result, resume = std::move(resume)](Status s) {
        *result = s;
        resume();
      });
    });
    if (started != Status::SUCCESS) {
      ReleaseMadQp(ca, std::move(engine));
      UnuseQueues(scq, rcq, nullptr);
      co_return {started == Status::CA_REMOVED ? started : Status::INSUFFICIENT_RESOURCES, kLength};
    }
    out->caps = {SpecialQp::kSendSlots, SpecialQp::kRecvDepth, 1, 1, 0, 0};
    out->qp_num = engine->qp_number();
    co_return {PublishQp(instance, pd, scq, rcq, nullptr, out->qp_num, out->qp_num,
                         abi::QpType::MAD, context, &out->qp.value, 0, std::move(engine)),
               kLength};
  }

  Status DestroyQp(const kernel::CallContext& ctx, const abi::DestroyQpIn& in,
                   kernel::DestroyQpRefs& refs, Irp* irp) override {
    return DestroyReleasing(ctx, std::move(refs.qp), in.qp.value, abi::ObjectType::Qp,
                            Status::INVALID_QP_HANDLE, irp);
  }
};

class SrqVerbs final : public kernel::SrqVerbHandlers {
 public:
  Status CreateSrq(const kernel::CallContext& ctx, const abi::CreateSrqIn& in,
                   kernel::CreateSrqRefs& refs, abi::CreateSrqOut& out, Irp* irp) override {
    return CreateSrqTask(InstanceOf(ctx), in.attributes, in.context, std::move(refs.pd), &out)
        .Start(irp);
  }

  static kernel::VerbTask CreateSrqTask(Instance* instance, abi::SrqAttributes attributes,
                                        uint64_t context, kernel::ObjectRef pd_ref,
                                        abi::CreateSrqOut* out) {
    constexpr uint64_t kLength = sizeof(abi::CreateSrqOut);
    PdObj* pd = As<PdObj>(pd_ref);
    AlCa* ca = pd->ca_obj->ca.get();
    if (ca->removed.load()) co_return {Status::CA_REMOVED, kLength};
    const CiRequestor who = RequestorOf(instance);
    CiIrp ci(ca, kernel::BuildCiCreateSrqIrp(ca->lower, who.file, who.mode, {pd->pd, 0, attributes},
                                             nullptr));
    if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, kLength};
    if (const Status s = co_await ci.Send(); s != Status::SUCCESS) {
      co_return {s == Status::INVALID_SETTING ? Status::INVALID_SRQ_SIZE : s, kLength};
    }
    const auto* answer = ci.Output<abi::CiCreateSrqOut>();
    out->granted = answer->granted;
    auto* object = new SrqObj(instance, pd, answer->srq, context);
    if (!Adopt(object, pd)) {
      kernel::DereferenceObject(object);
      co_return {Status::INVALID_PD_HANDLE, kLength};
    }
    object->Register();
    co_return {Publish(instance, object, &out->srq.value), kLength};
  }

  Status QuerySrq(const kernel::CallContext& ctx, const abi::QuerySrqIn&,
                  kernel::QuerySrqRefs& refs, abi::QuerySrqOut& out, Irp* irp) override {
    return QuerySrqTask(InstanceOf(ctx), std::move(refs.srq), &out).Start(irp);
  }

  static kernel::VerbTask QuerySrqTask(Instance* instance, kernel::ObjectRef srq_ref,
                                       abi::QuerySrqOut* out) {
    constexpr uint64_t kLength = sizeof(abi::QuerySrqOut);
    SrqObj* srq = As<SrqObj>(srq_ref);
    AlCa* ca = srq->pd_obj->ca_obj->ca.get();
    if (ca->removed.load()) co_return {Status::CA_REMOVED, kLength};
    const CiRequestor who = RequestorOf(instance);
    CiIrp ci(ca, kernel::BuildCiQuerySrqIrp(ca->lower, who.file, who.mode, {srq->number}, nullptr));
    if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, kLength};
    const Status s = co_await ci.Send();
    if (const auto* answer = ci.Output<abi::CiQuerySrqOut>(); answer != nullptr) {
      out->attributes = answer->attributes;
    }
    co_return {s, kLength};
  }

  Status ModifySrq(const kernel::CallContext& ctx, const abi::ModifySrqIn& in,
                   kernel::ModifySrqRefs& refs, Irp* irp) override {
    return ModifySrqTask(InstanceOf(ctx), in.mask, in.attributes, std::move(refs.srq)).Start(irp);
  }

  static kernel::VerbTask ModifySrqTask(Instance* instance, abi::SrqAttrMask mask,
                                        abi::SrqAttributes attributes, kernel::ObjectRef srq_ref) {
    SrqObj* srq = As<SrqObj>(srq_ref);
    AlCa* ca = srq->pd_obj->ca_obj->ca.get();
    if (ca->removed.load()) co_return {Status::CA_REMOVED, 0};
    const CiRequestor who = RequestorOf(instance);
    CiIrp ci(ca, kernel::BuildCiModifySrqIrp(ca->lower, who.file, who.mode,
                                             {srq->number, mask, attributes}));
    if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, 0};
    co_return {co_await ci.Send(), 0};
  }

  Status DestroySrq(const kernel::CallContext& ctx, const abi::DestroySrqIn& in,
                    kernel::DestroySrqRefs&, Irp* irp) override {
    return DestroyReleasing(ctx, in.srq.value, abi::ObjectType::Srq, Status::INVALID_SRQ_HANDLE,
                            irp);
  }
};

class McastVerbs final : public kernel::McastVerbHandlers {
 public:
  Status AttachMcast(const kernel::CallContext& ctx, const abi::AttachMcastIn& in,
                     kernel::AttachMcastRefs& refs, abi::AttachMcastOut& out, Irp* irp) override {
    return AttachMcastTask(InstanceOf(ctx), in.mgid, in.mlid, std::move(refs.qp), &out).Start(irp);
  }

  static kernel::VerbTask AttachMcastTask(Instance* instance, abi::Gid mgid, uint16_t mlid,
                                          kernel::ObjectRef qp_ref, abi::AttachMcastOut* out) {
    constexpr uint64_t kLength = sizeof(abi::AttachMcastOut);
    QpObj* qp = As<QpObj>(qp_ref);
    AlCa* ca = qp->pd_obj->ca_obj->ca.get();
    if (ca->removed.load()) co_return {Status::CA_REMOVED, kLength};
    const CiRequestor who = RequestorOf(instance);
    CiIrp ci(
        ca, kernel::BuildCiAttachMcastIrp(ca->lower, who.file, who.mode, {qp->qpn, mlid, 0, mgid}));
    if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, kLength};
    if (const Status s = co_await ci.Send(); s != Status::SUCCESS) co_return {s, kLength};
    auto* object = new McastObj(instance, qp, mgid, mlid);
    if (!Adopt(object, qp)) {
      kernel::DereferenceObject(object);
      co_return {Status::INVALID_QP_HANDLE, kLength};
    }
    co_return {Publish(instance, object, &out->mcast.value), kLength};
  }

  Status DetachMcast(const kernel::CallContext& ctx, const abi::DetachMcastIn& in,
                     kernel::DetachMcastRefs&, Irp* irp) override {
    return DestroyReleasing(ctx, in.mcast.value, abi::ObjectType::Mcast,
                            Status::INVALID_MCAST_HANDLE, irp);
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
