// Completion queues (control verbs; polling and arming are the speed path, kernel_client.cc).
#include "runtime/al/src/handlers.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

namespace {

class CqVerbs final : public kernel::CqVerbHandlers {
 public:
  Status CreateCq(const kernel::CallContext& ctx, const abi::CreateCqIn& in,
                  kernel::CreateCqRefs& refs, abi::CreateCqOut& out, Irp*) override {
    CaObj* ca = As<CaObj>(refs.ca);
    uint32_t number = 0;
    if (const Status s = ca->ca->ci->CreateCq(in.size, &number, &out.actual_size);
        s != Status::SUCCESS) {
      return s;
    }
    auto* object = new CqObj(InstanceOf(ctx), ca, number, in.context);
    if (!Adopt(object, ca)) {
      kernel::DereferenceObject(object);
      return Status::INVALID_CA_HANDLE;
    }
    object->Register();
    return Publish(InstanceOf(ctx), object, &out.cq.value);
  }

  Status QueryCq(const kernel::CallContext&, const abi::QueryCqIn&, kernel::QueryCqRefs& refs,
                 abi::QueryCqOut& out, Irp*) override {
    CqObj* cq = As<CqObj>(refs.cq);
    return cq->ca_obj->ca->ci->QueryCq(cq->number, &out.size);
  }

  Status ModifyCq(const kernel::CallContext&, const abi::ModifyCqIn& in, kernel::ModifyCqRefs& refs,
                  abi::ModifyCqOut& out, Irp*) override {
    CqObj* cq = As<CqObj>(refs.cq);
    out.size = in.size;
    return cq->ca_obj->ca->ci->ResizeCq(cq->number, &out.size);
  }

  Status DestroyCq(const kernel::CallContext& ctx, const abi::DestroyCqIn& in,
                   kernel::DestroyCqRefs&, Irp*) override {
    return DestroyHandle(ctx, in.cq.value, abi::ObjectType::Cq, Status::INVALID_CQ_HANDLE);
  }
};

}  // namespace

kernel::CqVerbHandlers* CqHandlers() {
  static CqVerbs verbs;
  return &verbs;
}

}  // namespace softib::al
