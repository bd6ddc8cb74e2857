// AL verbs: instances (OpenAl/CloseAl) and PnP registrations. The MAD, SA and multicast
// join verbs answer UNSUPPORTED until the MAD layer exists (issues 4 and 5).
#include "runtime/al/src/handlers.h"

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

  // ---- MAD services, SA, multicast joins: not yet (the MAD layer) ----
  Status CreateMadPool(const kernel::CallContext&, const abi::CreateMadPoolIn&,
                       kernel::CreateMadPoolRefs&, abi::CreateMadPoolOut&, Irp*) override {
    return Status::UNSUPPORTED;
  }
  Status DestroyMadPool(const kernel::CallContext&, const abi::DestroyMadPoolIn&,
                        kernel::DestroyMadPoolRefs&, Irp*) override {
    return Status::UNSUPPORTED;
  }
  Status RegMadSvc(const kernel::CallContext&, const abi::RegMadSvcIn&, kernel::RegMadSvcRefs&,
                   abi::RegMadSvcOut&, Irp*) override {
    return Status::UNSUPPORTED;
  }
  Status DeregMadSvc(const kernel::CallContext&, const abi::DeregMadSvcIn&,
                     kernel::DeregMadSvcRefs&, Irp*) override {
    return Status::UNSUPPORTED;
  }
  Status SendMad(const kernel::CallContext&, const abi::SendMadIn&, std::span<const uint8_t>,
                 kernel::SendMadRefs&, abi::SendMadOut&, Irp*) override {
    return Status::UNSUPPORTED;
  }
  Status CancelMad(const kernel::CallContext&, const abi::CancelMadIn&, kernel::CancelMadRefs&,
                   Irp*) override {
    return Status::UNSUPPORTED;
  }
  Status GetMadEvent(const kernel::CallContext&, const abi::GetMadEventIn&,
                     kernel::GetMadEventRefs&, abi::GetMadEventOut&, std::span<uint8_t>,
                     Irp*) override {
    return Status::UNSUPPORTED;
  }
  Status SendSaRequest(const kernel::CallContext&, const abi::SendSaRequestIn&,
                       std::span<const uint8_t>, kernel::SendSaRequestRefs&, abi::SendSaRequestOut&,
                       Irp*) override {
    return Status::UNSUPPORTED;
  }
  Status GetSaResponse(const kernel::CallContext&, const abi::GetSaResponseIn&,
                       kernel::GetSaResponseRefs&, abi::GetSaResponseOut&, std::span<uint8_t>,
                       Irp*) override {
    return Status::UNSUPPORTED;
  }
  Status CancelSaRequest(const kernel::CallContext&, const abi::CancelSaRequestIn&,
                         kernel::CancelSaRequestRefs&, Irp*) override {
    return Status::UNSUPPORTED;
  }
  Status RegisterService(const kernel::CallContext&, const abi::RegisterServiceIn&,
                         kernel::RegisterServiceRefs&, abi::RegisterServiceOut&, Irp*) override {
    return Status::UNSUPPORTED;
  }
  Status DeregisterService(const kernel::CallContext&, const abi::DeregisterServiceIn&,
                           kernel::DeregisterServiceRefs&, Irp*) override {
    return Status::UNSUPPORTED;
  }
  Status JoinMcast(const kernel::CallContext&, const abi::JoinMcastIn&, kernel::JoinMcastRefs&,
                   abi::JoinMcastOut&, Irp*) override {
    return Status::UNSUPPORTED;
  }
  Status LeaveMcast(const kernel::CallContext&, const abi::LeaveMcastIn&, kernel::LeaveMcastRefs&,
                    Irp*) override {
    return Status::UNSUPPORTED;
  }
};

}  // namespace

kernel::AlVerbHandlers* AlHandlers() {
  static AlVerbs verbs;
  return &verbs;
}

}  // namespace softib::al
