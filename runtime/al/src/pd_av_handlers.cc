// Protection domains and address vectors.
#include "runtime/al/src/ci_call.h"
#include "runtime/al/src/handlers.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

namespace {

class PdAvVerbs final : public kernel::PdAvVerbHandlers {
 public:
  Status AllocPd(const kernel::CallContext& ctx, const abi::AllocPdIn&, kernel::AllocPdRefs& refs,
                 abi::AllocPdOut& out, Irp* irp) override {
    return AllocPdTask(InstanceOf(ctx), std::move(refs.ca), &out).Start(irp);
  }

  static kernel::VerbTask AllocPdTask(Instance* instance, kernel::ObjectRef ca_ref,
                                      abi::AllocPdOut* out) {
    constexpr uint64_t kLength = sizeof(abi::AllocPdOut);
    CaObj* ca = As<CaObj>(ca_ref);
    if (ca->ca->removed.load()) co_return {Status::CA_REMOVED, kLength};
    const CiRequestor who = RequestorOf(instance);
    CiIrp ci(ca->ca.get(), kernel::BuildCiAllocPdIrp(ca->ca->lower, who.file, who.mode, nullptr));
    if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, kLength};
    if (const Status s = co_await ci.Send(); s != Status::SUCCESS) co_return {s, kLength};
    auto* object = new PdObj(instance, ca, ci.Output<abi::CiAllocPdOut>()->pd);
    if (!Adopt(object, ca)) {
      kernel::DereferenceObject(object);  // OnDestroy frees the PD
      co_return {Status::INVALID_CA_HANDLE, kLength};
    }
    co_return {Publish(instance, object, &out->pd.value), kLength};
  }

  Status DeallocPd(const kernel::CallContext& ctx, const abi::DeallocPdIn& in,
                   kernel::DeallocPdRefs&, Irp* irp) override {
    return DestroyReleasing(ctx, in.pd.value, abi::ObjectType::Pd, Status::INVALID_PD_HANDLE, irp);
  }

  Status CreateAv(const kernel::CallContext& ctx, const abi::CreateAvIn& in,
                  kernel::CreateAvRefs& refs, abi::CreateAvOut& out, Irp* irp) override {
    return CreateAvTask(InstanceOf(ctx), in.attributes, std::move(refs.pd), &out).Start(irp);
  }

  static kernel::VerbTask CreateAvTask(Instance* instance, abi::AddressVector attributes,
                                       kernel::ObjectRef pd_ref, abi::CreateAvOut* out) {
    constexpr uint64_t kLength = sizeof(abi::CreateAvOut);
    PdObj* pd = As<PdObj>(pd_ref);
    AlCa* ca = pd->ca_obj->ca.get();
    if (ca->removed.load()) co_return {Status::CA_REMOVED, kLength};
    const CiRequestor who = RequestorOf(instance);
    uint32_t ah = 0;
    {
      CiIrp ci(ca, kernel::BuildCiCreateAhIrp(ca->lower, who.file, who.mode, {pd->pd, attributes},
                                              nullptr));
      if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, kLength};
      if (const Status s = co_await ci.Send(); s != Status::SUCCESS) co_return {s, kLength};
      ah = ci.Output<abi::CiCreateAhOut>()->ah;
    }
    auto* object = new AvObj(instance, pd, ah, attributes);
    if (!Adopt(object, pd)) {
      kernel::DereferenceObject(object);
      co_return {Status::INVALID_PD_HANDLE, kLength};
    }
    if (const Status s = Publish(instance, object, &out->av.value); s != Status::SUCCESS) {
      co_return {s, kLength};
    }
    // The speed path: a send ring's UD entry names this AV by its handle (ci.h). A
    // concurrent DestroyAv may already have destroyed the AH: then there is nothing to name.
    CiIrp bind(
        ca, kernel::BuildCiBindAhHandleIrp(ca->lower, who.file, who.mode, {ah, 0, out->av.value}));
    if (!bind.built()) co_return {Status::INSUFFICIENT_RESOURCES, kLength};
    const Status bound = co_await bind.Send();
    co_return {bound == Status::CA_REMOVED ? bound : Status::SUCCESS, kLength};
  }

  Status QueryAv(const kernel::CallContext&, const abi::QueryAvIn&, kernel::QueryAvRefs& refs,
                 abi::QueryAvOut& out, Irp*) override {
    AvObj* av = As<AvObj>(refs.av);
    if (av->pd_obj->ca_obj->ca->removed.load()) return Status::CA_REMOVED;
    kernel::SpinLockGuard guard(av->lock);
    out.attributes = av->av;
    out.pd.value = av->pd_obj->handle;
    return Status::SUCCESS;
  }

  Status ModifyAv(const kernel::CallContext& ctx, const abi::ModifyAvIn& in,
                  kernel::ModifyAvRefs& refs, Irp* irp) override {
    return ModifyAvTask(InstanceOf(ctx), in.attributes, std::move(refs.av)).Start(irp);
  }

  static kernel::VerbTask ModifyAvTask(Instance* instance, abi::AddressVector attributes,
                                       kernel::ObjectRef av_ref) {
    // The device has no modify: a new AH replaces the old one, and the AV's handle moves to
    // it (the speed path's translation, ci.h) before the old one goes. Modifies of one AV
    // run one at a time (AvObj::EnterModify), so the CA learns the AHs in the order
    // av->ah takes them.
    AvObj* av = As<AvObj>(av_ref);
    AlCa* ca = av->pd_obj->ca_obj->ca.get();
    if (ca->removed.load()) co_return {Status::CA_REMOVED, 0};
    co_await AwaitDone([av](std::function<void()> go) { av->EnterModify(std::move(go)); });
    struct Turn {
      AvObj* av;
      ~Turn() { av->ExitModify(); }  // the next modify goes on (maybe right here)
    } turn{av};
    const CiRequestor who = RequestorOf(instance);
    uint32_t ah = 0;
    {
      CiIrp ci(ca, kernel::BuildCiCreateAhIrp(ca->lower, who.file, who.mode,
                                              {av->pd_obj->pd, attributes}, nullptr));
      if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, 0};
      if (const Status s = co_await ci.Send(); s != Status::SUCCESS) co_return {s, 0};
      ah = ci.Output<abi::CiCreateAhOut>()->ah;
    }
    Status bound;
    {
      CiIrp bind(ca, kernel::BuildCiBindAhHandleIrp(ca->lower, who.file, who.mode,
                                                    {ah, 0, av->handle.load()}));
      bound = bind.built() ? co_await bind.Send() : Status::INSUFFICIENT_RESOURCES;
    }
    // The AH that loses: the new one when the bind failed or a destroy already took the
    // AV's AH (it releases the old one), else the replaced one.
    uint32_t old = ah;
    {
      kernel::SpinLockGuard guard(av->lock);
      if (bound == Status::SUCCESS && !av->destroyed()) {
        old = av->ah;
        av->ah = ah;
        av->av = attributes;
      }
    }
    CiIrp destroy(ca, kernel::BuildCiDestroyAhIrp(ca->lower, who.file, who.mode, {old}));
    if (destroy.built()) (void)co_await destroy.Send();
    co_return {bound, 0};
  }

  Status DestroyAv(const kernel::CallContext& ctx, const abi::DestroyAvIn& in,
                   kernel::DestroyAvRefs&, Irp* irp) override {
    return DestroyReleasing(ctx, in.av.value, abi::ObjectType::Av, Status::INVALID_AV_HANDLE, irp);
  }
};

}  // namespace

kernel::PdAvVerbHandlers* PdAvHandlers() {
  static PdAvVerbs verbs;
  return &verbs;
}

}  // namespace softib::al
