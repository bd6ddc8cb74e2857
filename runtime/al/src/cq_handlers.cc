// Completion queues (control verbs; polling and arming are the speed path, kernel_client.cc).
#include "runtime/al/src/ci_call.h"
#include "runtime/al/src/handlers.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

namespace {

class CqVerbs final : public kernel::CqVerbHandlers {
 public:
  Status CreateCq(const kernel::CallContext& ctx, const abi::CreateCqIn& in,
                  kernel::CreateCqRefs& refs, abi::CreateCqOut& out, Irp* irp) override {
    return CreateCqTask(InstanceOf(ctx), in.size, in.context, std::move(refs.ca), &out).Start(irp);
  }

  static kernel::VerbTask CreateCqTask(Instance* instance, uint32_t size, uint64_t context,
                                       kernel::ObjectRef ca_ref, abi::CreateCqOut* out) {
    constexpr uint64_t kLength = sizeof(abi::CreateCqOut);
    CaObj* ca = As<CaObj>(ca_ref);
    if (ca->ca->removed.load()) co_return {Status::CA_REMOVED, kLength};
    const CiRequestor who = RequestorOf(instance);
    CiIrp ci(ca->ca.get(),
             kernel::BuildCiCreateCqIrp(ca->ca->lower, who.file, who.mode, {size, 0}, nullptr));
    if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, kLength};
    if (const Status s = co_await ci.Send(); s != Status::SUCCESS) co_return {s, kLength};
    const auto* answer = ci.Output<abi::CiCreateCqOut>();
    out->actual_size = answer->actual_size;
    auto* object = new CqObj(instance, ca, answer->cq, context);
    if (!Adopt(object, ca)) {
      kernel::DereferenceObject(object);
      co_return {Status::INVALID_CA_HANDLE, kLength};
    }
    object->Register();
    co_return {Publish(instance, object, &out->cq.value), kLength};
  }

  Status QueryCq(const kernel::CallContext& ctx, const abi::QueryCqIn&, kernel::QueryCqRefs& refs,
                 abi::QueryCqOut& out, Irp* irp) override {
    return QueryCqTask(InstanceOf(ctx), std::move(refs.cq), &out).Start(irp);
  }

  static kernel::VerbTask QueryCqTask(Instance* instance, kernel::ObjectRef cq_ref,
                                      abi::QueryCqOut* out) {
    constexpr uint64_t kLength = sizeof(abi::QueryCqOut);
    CqObj* cq = As<CqObj>(cq_ref);
    AlCa* ca = cq->ca_obj->ca.get();
    if (ca->removed.load()) co_return {Status::CA_REMOVED, kLength};
    const CiRequestor who = RequestorOf(instance);
    CiIrp ci(ca, kernel::BuildCiQueryCqIrp(ca->lower, who.file, who.mode, {cq->number}, nullptr));
    if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, kLength};
    const Status s = co_await ci.Send();
    if (const auto* answer = ci.Output<abi::CiQueryCqOut>(); answer != nullptr) {
      out->size = answer->size;
    }
    co_return {s, kLength};
  }

  Status ModifyCq(const kernel::CallContext& ctx, const abi::ModifyCqIn& in,
                  kernel::ModifyCqRefs& refs, abi::ModifyCqOut& out, Irp* irp) override {
    out.size = in.size;
    return ResizeCqTask(InstanceOf(ctx), in.size, std::move(refs.cq), &out).Start(irp);
  }

  static kernel::VerbTask ResizeCqTask(Instance* instance, uint32_t size, kernel::ObjectRef cq_ref,
                                       abi::ModifyCqOut* out) {
    constexpr uint64_t kLength = sizeof(abi::ModifyCqOut);
    CqObj* cq = As<CqObj>(cq_ref);
    AlCa* ca = cq->ca_obj->ca.get();
    if (ca->removed.load()) co_return {Status::CA_REMOVED, kLength};
    const CiRequestor who = RequestorOf(instance);
    CiIrp ci(
        ca, kernel::BuildCiResizeCqIrp(ca->lower, who.file, who.mode, {cq->number, size}, nullptr));
    if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, kLength};
    const Status s = co_await ci.Send();
    if (const auto* answer = ci.Output<abi::CiResizeCqOut>(); answer != nullptr) {
      out->size = answer->size;
    }
    co_return {s, kLength};
  }

  Status DestroyCq(const kernel::CallContext& ctx, const abi::DestroyCqIn& in,
                   kernel::DestroyCqRefs&, Irp* irp) override {
    return DestroyReleasing(ctx, in.cq.value, abi::ObjectType::Cq, Status::INVALID_CQ_HANDLE, irp);
  }
};

}  // namespace

kernel::CqVerbHandlers* CqHandlers() {
  static CqVerbs verbs;
  return &verbs;
}

}  // namespace softib::al
