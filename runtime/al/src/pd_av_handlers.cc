// Protection domains and address vectors.
#include "runtime/al/src/handlers.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

namespace {

class PdAvVerbs final : public kernel::PdAvVerbHandlers {
 public:
  Status AllocPd(const kernel::CallContext& ctx, const abi::AllocPdIn& in,
                 kernel::AllocPdRefs& refs, abi::AllocPdOut& out, Irp*) override {
    (void)in;
    CaObj* ca = As<CaObj>(refs.ca);
    uint32_t pd = 0;
    if (const Status s = ca->ca->ci->AllocPd(&pd); s != Status::SUCCESS) return s;
    auto* object = new PdObj(InstanceOf(ctx), ca, pd);
    if (!Adopt(object, ca)) {
      kernel::DereferenceObject(object);  // OnDestroy frees the PD
      return Status::INVALID_CA_HANDLE;
    }
    return Publish(InstanceOf(ctx), object, &out.pd.value);
  }

  Status DeallocPd(const kernel::CallContext& ctx, const abi::DeallocPdIn& in,
                   kernel::DeallocPdRefs&, Irp*) override {
    return DestroyHandle(ctx, in.pd.value, abi::ObjectType::Pd, Status::INVALID_PD_HANDLE);
  }

  Status CreateAv(const kernel::CallContext& ctx, const abi::CreateAvIn& in,
                  kernel::CreateAvRefs& refs, abi::CreateAvOut& out, Irp*) override {
    PdObj* pd = As<PdObj>(refs.pd);
    uint32_t ah = 0;
    if (const Status s = pd->ca_obj->ca->ci->CreateAh(pd->pd, in.attributes, &ah);
        s != Status::SUCCESS) {
      return s;
    }
    auto* object = new AvObj(InstanceOf(ctx), pd, ah, in.attributes);
    if (!Adopt(object, pd)) {
      kernel::DereferenceObject(object);
      return Status::INVALID_PD_HANDLE;
    }
    if (const Status s = Publish(InstanceOf(ctx), object, &out.av.value); s != Status::SUCCESS) {
      return s;
    }
    // The speed path: a send ring's UD entry names this AV by its handle (ci.h). A
    // concurrent DestroyAv may already have destroyed the AH: then there is nothing to name.
    const Status bound = pd->ca_obj->ca->ci->BindAhHandle(ah, out.av.value);
    if (bound == Status::CA_REMOVED) return bound;
    return Status::SUCCESS;
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

  Status ModifyAv(const kernel::CallContext&, const abi::ModifyAvIn& in, kernel::ModifyAvRefs& refs,
                  Irp*) override {
    // The device has no modify: a new AH replaces the old one, and the AV's handle moves to
    // it (the speed path's translation, ci.h) before the old one goes.
    AvObj* av = As<AvObj>(refs.av);
    ci::CaInterface* ci = av->pd_obj->ca_obj->ca->ci;
    uint32_t ah = 0;
    if (const Status s = ci->CreateAh(av->pd_obj->pd, in.attributes, &ah); s != Status::SUCCESS) {
      return s;
    }
    uint32_t old;
    {
      // Bound under the AV's lock (the CA's lock nests inside it), so that of two concurrent
      // modifies the handle names the AH that av->ah ends up with.
      kernel::SpinLockGuard guard(av->lock);
      if (const Status s = ci->BindAhHandle(ah, av->handle.load()); s != Status::SUCCESS) {
        ci->DestroyAh(ah);
        return s;
      }
      old = av->ah;
      av->ah = ah;
      av->av = in.attributes;
    }
    ci->DestroyAh(old);
    return Status::SUCCESS;
  }

  Status DestroyAv(const kernel::CallContext& ctx, const abi::DestroyAvIn& in,
                   kernel::DestroyAvRefs&, Irp*) override {
    return DestroyHandle(ctx, in.av.value, abi::ObjectType::Av, Status::INVALID_AV_HANDLE);
  }
};

}  // namespace

kernel::PdAvVerbHandlers* PdAvHandlers() {
  static PdAvVerbs verbs;
  return &verbs;
}

}  // namespace softib::al
