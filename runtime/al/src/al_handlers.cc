// AL verbs: instances (OpenAl/CloseAl), PnP registrations and the MAD verbs (mad_handlers.cc).
// The SA client and multicast join verbs live in sa/ (sa_verbs.h).
#include "runtime/al/src/mad_handlers.h"
#include "runtime/al/src/sa/sa_verbs.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

namespace {

class AlVerbs final : public kernel::AlVerbHandlers {
 public:
  Status OpenAl(const kernel::CallContext& ctx, const abi::OpenAlIn& in, abi::OpenAlOut& out,
                Irp*) override {
    if (in.interface_version != abi::kAlInterfaceVersion) return Status::UNSUPPORTED;
    return Publish(InstanceOf(ctx), new AlObj(InstanceOf(ctx)), &out.al.value);
  }

  Status CloseAl(const kernel::CallContext& ctx, const abi::CloseAlIn& in, kernel::CloseAlRefs&,
                 Irp*) override {
    // The implicit Al of the file goes with the file.
    if (in.al.value == InstanceOf(ctx)->al_handle) return Status::INVALID_AL_HANDLE;
    return DestroyHandle(ctx, in.al.value, abi::ObjectType::Al, Status::INVALID_AL_HANDLE);
  }

  Status RegisterPnp(const kernel::CallContext& ctx, const abi::RegisterPnpIn& in,
                     kernel::RegisterPnpRefs& refs, abi::RegisterPnpOut& out, Irp*) override {
    auto* object = new PnpRegObj(InstanceOf(ctx), in.pnp_class, in.context);
    if (!Adopt(object, refs.al.get())) {
      kernel::DereferenceObject(object);
      return Status::INVALID_AL_HANDLE;
    }
    kernel::ReferenceObject(object);  // kept across Publish to post the existing state
    kernel::ObjectRef hold(object);
    const Status status = Publish(InstanceOf(ctx), object, &out.reg.value);
    if (status != Status::SUCCESS) return status;
    // Listed and given the present state in one step against arrivals and removals.
    AccessLayer* al = InstanceOf(ctx)->al;
    al->pnp_mutex.Acquire();
    object->Register();
    PostExisting(al, object);
    al->pnp_mutex.Release();
    return Status::SUCCESS;
  }

  Status DeregisterPnp(const kernel::CallContext& ctx, const abi::DeregisterPnpIn& in,
                       kernel::DeregisterPnpRefs&, Irp*) override {
    return DestroyHandle(ctx, in.reg.value, abi::ObjectType::PnpReg,
                         Status::INVALID_PNP_REG_HANDLE);
  }

  // ---- MAD services (mad_handlers.cc) ----
  Status CreateMadPool(const kernel::CallContext& ctx, const abi::CreateMadPoolIn& in,
                       kernel::CreateMadPoolRefs& refs, abi::CreateMadPoolOut& out, Irp*) override {
    return MadCreatePool(ctx, in, refs, out);
  }
  Status DestroyMadPool(const kernel::CallContext& ctx, const abi::DestroyMadPoolIn& in,
                        kernel::DestroyMadPoolRefs&, Irp*) override {
    return DestroyHandle(ctx, in.pool.value, abi::ObjectType::MadPool,
                         Status::INVALID_MAD_POOL_HANDLE);
  }
  Status RegMadSvc(const kernel::CallContext& ctx, const abi::RegMadSvcIn& in,
                   kernel::RegMadSvcRefs& refs, abi::RegMadSvcOut& out, Irp*) override {
    return MadRegSvc(ctx, in, refs, out);
  }
  Status DeregMadSvc(const kernel::CallContext& ctx, const abi::DeregMadSvcIn& in,
                     kernel::DeregMadSvcRefs&, Irp*) override {
    return DestroyHandle(ctx, in.svc.value, abi::ObjectType::MadSvc,
                         Status::INVALID_MAD_SVC_HANDLE);
  }
  Status SendMad(const kernel::CallContext& ctx, const abi::SendMadIn& in,
                 std::span<const uint8_t> mad, kernel::SendMadRefs& refs, abi::SendMadOut& out,
                 Irp*) override {
    return SendMadVerb(ctx, in, mad, refs, out);
  }
  Status CancelMad(const kernel::CallContext&, const abi::CancelMadIn& in,
                   kernel::CancelMadRefs& refs, Irp*) override {
    return MadCancel(in, refs);
  }
  Status GetMadEvent(const kernel::CallContext&, const abi::GetMadEventIn&,
                     kernel::GetMadEventRefs& refs, abi::GetMadEventOut& out,
                     std::span<uint8_t> mad, Irp* irp) override {
    return MadGetEvent(refs, out, mad, irp);
  }

  // ---- SA client and multicast joins (sa/) ----
  Status SendSaRequest(const kernel::CallContext& ctx, const abi::SendSaRequestIn& in,
                       std::span<const uint8_t> attribute, kernel::SendSaRequestRefs& refs,
                       abi::SendSaRequestOut& out, Irp*) override {
    return SaSendRequest(ctx, in, attribute, refs, out);
  }
  Status GetSaResponse(const kernel::CallContext&, const abi::GetSaResponseIn&,
                       kernel::GetSaResponseRefs& refs, abi::GetSaResponseOut& out,
                       std::span<uint8_t> data, Irp* irp) override {
    return SaGetResponse(refs, out, data, irp);
  }
  Status CancelSaRequest(const kernel::CallContext& ctx, const abi::CancelSaRequestIn& in,
                         kernel::CancelSaRequestRefs&, Irp*) override {
    return DestroyHandle(ctx, in.req.value, abi::ObjectType::SaReq, Status::INVALID_SA_REQ_HANDLE);
  }
  Status PathCacheControl(const kernel::CallContext& ctx, const abi::PathCacheControlIn& in,
                          kernel::PathCacheControlRefs&, abi::PathCacheControlOut& out,
                          Irp*) override {
    return SaPathCacheControl(ctx, in, out);
  }
  Status SubscribeReport(const kernel::CallContext& ctx, const abi::SubscribeReportIn& in,
                         kernel::SubscribeReportRefs& refs, abi::SubscribeReportOut& out,
                         Irp* irp) override {
    return SaSubscribeReport(ctx, in, refs, out, irp);
  }
  Status GetReport(const kernel::CallContext&, const abi::GetReportIn&, kernel::GetReportRefs& refs,
                   abi::GetReportOut& out, Irp* irp) override {
    return SaGetReport(refs, out, irp);
  }
  Status UnsubscribeReport(const kernel::CallContext& ctx, const abi::UnsubscribeReportIn& in,
                           kernel::UnsubscribeReportRefs&, Irp*) override {
    return SaUnsubscribeReport(ctx, in);
  }
  Status RegisterService(const kernel::CallContext& ctx, const abi::RegisterServiceIn& in,
                         kernel::RegisterServiceRefs& refs, abi::RegisterServiceOut& out,
                         Irp* irp) override {
    return SaRegisterService(ctx, in, refs, out, irp);
  }
  Status DeregisterService(const kernel::CallContext& ctx, const abi::DeregisterServiceIn& in,
                           kernel::DeregisterServiceRefs& refs, Irp* irp) override {
    return SaDeregisterService(ctx, in, refs, irp);
  }
  Status JoinMcast(const kernel::CallContext& ctx, const abi::JoinMcastIn& in,
                   kernel::JoinMcastRefs& refs, abi::JoinMcastOut& out, Irp* irp) override {
    return SaJoinMcast(ctx, in, refs, out, irp);
  }
  Status LeaveMcast(const kernel::CallContext& ctx, const abi::LeaveMcastIn& in,
                    kernel::LeaveMcastRefs& refs, Irp* irp) override {
    return SaLeaveMcast(ctx, in, refs, irp);
  }
};

}  // namespace

kernel::AlVerbHandlers* AlHandlers() {
  static AlVerbs verbs;
  return &verbs;
}

}  // namespace softib::al
