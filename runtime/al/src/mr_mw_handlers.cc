// Memory regions and memory windows. The HCA reaches a user region through the opening
// process's pid (process_vm_readv/writev, at the registered address + the offset the file
// stated in GetFileAl), a kernel region by memcpy.
#include "runtime/al/src/ci_call.h"
#include "runtime/al/src/handlers.h"
#include "runtime/al/src/mr_rereg.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

namespace {

// Registers `region` of `memory`'s owner under the PD and publishes the region.
kernel::VerbTask Register(Instance* instance, kernel::ObjectRef pd_ref, abi::MrRegion region,
                          CiRequestor memory, uint32_t* lkey, uint32_t* rkey, uint64_t* handle,
                          uint64_t information) {
  PdObj* pd = As<PdObj>(pd_ref);
  AlCa* ca = pd->ca_obj->ca.get();
  if (ca->removed.load()) co_return {Status::CA_REMOVED, information};
  CiIrp ci(ca, kernel::BuildCiRegisterMrIrp(ca->lower, memory.file, memory.mode,
                                            {pd->pd, region.access, region.vaddr, region.length},
                                            nullptr));
  if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, information};
  if (const Status s = co_await ci.Send(); s != Status::SUCCESS) {
    co_return {s == Status::INVALID_PARAMETER ? Status::INVALID_SETTING : s, information};
  }
  const uint32_t key = ci.Output<abi::CiRegisterMrOut>()->key;
  auto* object = new MrObj(instance, pd, key, region, memory);
  if (!Adopt(object, pd)) {
    kernel::DereferenceObject(object);
    co_return {Status::INVALID_PD_HANDLE, information};
  }
  *lkey = key;
  *rkey = key;
  co_return {Publish(instance, object, handle), information};
}

class MrMwVerbs final : public kernel::MrMwVerbHandlers {
 public:
  Status RegMem(const kernel::CallContext& ctx, const abi::RegMemIn& in, kernel::RegMemRefs& refs,
                abi::RegMemOut& out, Irp* irp) override {
    Instance* instance = InstanceOf(ctx);
    return Register(instance, std::move(refs.pd), in.region, RequestorOf(instance), &out.lkey,
                    &out.rkey, &out.mr.value, sizeof(abi::RegMemOut))
        .Start(irp);
  }

  Status RegPhys(const kernel::CallContext& ctx, const abi::RegPhysIn& in,
                 std::span<const abi::PhysRange> ranges, kernel::RegPhysRefs& refs,
                 abi::RegPhysOut& out, Irp* irp) override {
    // "Physical" memory of a kernel client is its own buffer (mr_rereg.h: PhysSpan).
    if (InstanceOf(ctx)->pid != 0) return Status::UNSUPPORTED;
    abi::MrRegion region{};
    if (const Status s = PhysSpan(ranges, in.buf_offset, in.length, &region.vaddr);
        s != Status::SUCCESS) {
      return s;
    }
    region.length = in.length;
    region.access = in.access;
    out.iova = region.vaddr;
    Instance* instance = InstanceOf(ctx);
    return Register(instance, std::move(refs.pd), region, RequestorOf(instance), &out.lkey,
                    &out.rkey, &out.mr.value, sizeof(abi::RegPhysOut))
        .Start(irp);
  }

  Status QueryMr(const kernel::CallContext&, const abi::QueryMrIn&, kernel::QueryMrRefs& refs,
                 abi::QueryMrOut& out, Irp*) override {
    MrObj* mr = As<MrObj>(refs.mr);
    if (mr->ca->removed.load()) return Status::CA_REMOVED;
    kernel::SpinLockGuard guard(mr->lock);
    out.attributes.pd.value = mr->pd_obj->handle;
    out.attributes.local_lb = mr->region.vaddr;
    out.attributes.local_ub = mr->region.vaddr + mr->region.length - 1;
    out.attributes.remote_lb = out.attributes.local_lb;
    out.attributes.remote_ub = out.attributes.local_ub;
    out.attributes.access = mr->region.access;
    out.attributes.lkey = mr->key;
    out.attributes.rkey = mr->key;
    return Status::SUCCESS;
  }

  Status ReregMem(const kernel::CallContext&, const abi::ReregMemIn& in, kernel::ReregMemRefs& refs,
                  abi::ReregMemOut& out, Irp* irp) override {
    return ReregisterRegion(std::move(refs.mr), in.flags, std::move(refs.pd), in.region.vaddr,
                            in.region.length, in.region.access, &out.lkey, &out.rkey, nullptr,
                            sizeof(abi::ReregMemOut))
        .Start(irp);
  }

  Status ReregPhys(const kernel::CallContext& ctx, const abi::ReregPhysIn& in,
                   std::span<const abi::PhysRange> ranges, kernel::ReregPhysRefs& refs,
                   abi::ReregPhysOut& out, Irp* irp) override {
    // As RegPhys: a kernel client's own buffer; the ranges count with TRANSLATION only.
    if (InstanceOf(ctx)->pid != 0) return Status::UNSUPPORTED;
    uint64_t vaddr = 0;
    if (abi::HasAny(in.flags, abi::MrReregFlags::TRANSLATION)) {
      if (const Status s = PhysSpan(ranges, in.buf_offset, in.length, &vaddr);
          s != Status::SUCCESS) {
        return s;
      }
    }
    return ReregisterRegion(std::move(refs.mr), in.flags, std::move(refs.pd), vaddr, in.length,
                            in.access, &out.lkey, &out.rkey, &out.iova, sizeof(abi::ReregPhysOut))
        .Start(irp);
  }

  Status RegShared(const kernel::CallContext& ctx, const abi::RegSharedIn& in,
                   kernel::RegSharedRefs& refs, abi::RegSharedOut& out, Irp* irp) override {
    MrObj* mr = As<MrObj>(refs.mr);
    abi::MrRegion region;
    {
      kernel::SpinLockGuard guard(mr->lock);
      region = mr->region;
    }
    region.access = in.access;
    out.vaddr = region.vaddr;
    return Register(InstanceOf(ctx), std::move(refs.pd), region, mr->memory, &out.lkey, &out.rkey,
                    &out.shared_mr.value, sizeof(abi::RegSharedOut))
        .Start(irp);
  }

  Status DeregMr(const kernel::CallContext& ctx, const abi::DeregMrIn& in, kernel::DeregMrRefs&,
                 Irp* irp) override {
    return DestroyReleasing(ctx, in.mr.value, abi::ObjectType::Mr, Status::INVALID_MR_HANDLE, irp);
  }

  Status CreateMw(const kernel::CallContext& ctx, const abi::CreateMwIn& in,
                  kernel::CreateMwRefs& refs, abi::CreateMwOut& out, Irp* irp) override {
    return CreateMwTask(InstanceOf(ctx), in.type, std::move(refs.pd), &out).Start(irp);
  }

  static kernel::VerbTask CreateMwTask(Instance* instance, abi::MwType type,
                                       kernel::ObjectRef pd_ref, abi::CreateMwOut* out) {
    constexpr uint64_t kLength = sizeof(abi::CreateMwOut);
    PdObj* pd = As<PdObj>(pd_ref);
    AlCa* ca = pd->ca_obj->ca.get();
    if (ca->removed.load()) co_return {Status::CA_REMOVED, kLength};
    const CiRequestor who = RequestorOf(instance);
    CiIrp ci(ca, kernel::BuildCiAllocMwIrp(ca->lower, who.file, who.mode, {pd->pd, type}, nullptr));
    if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, kLength};
    if (const Status s = co_await ci.Send(); s != Status::SUCCESS) co_return {s, kLength};
    const auto* answer = ci.Output<abi::CiAllocMwOut>();
    out->rkey = answer->rkey;
    auto* object = new MwObj(instance, pd, answer->mw, type);
    if (!Adopt(object, pd)) {
      kernel::DereferenceObject(object);
      co_return {Status::INVALID_PD_HANDLE, kLength};
    }
    co_return {Publish(instance, object, &out->mw.value), kLength};
  }

  Status QueryMw(const kernel::CallContext& ctx, const abi::QueryMwIn&, kernel::QueryMwRefs& refs,
                 abi::QueryMwOut& out, Irp* irp) override {
    out.pd.value = As<MwObj>(refs.mw)->pd_obj->handle;
    return QueryMwTask(InstanceOf(ctx), std::move(refs.mw), &out).Start(irp);
  }

  static kernel::VerbTask QueryMwTask(Instance* instance, kernel::ObjectRef mw_ref,
                                      abi::QueryMwOut* out) {
    constexpr uint64_t kLength = sizeof(abi::QueryMwOut);
    MwObj* mw = As<MwObj>(mw_ref);
    AlCa* ca = mw->pd_obj->ca_obj->ca.get();
    if (ca->removed.load()) co_return {Status::CA_REMOVED, kLength};
    const CiRequestor who = RequestorOf(instance);
    CiIrp ci(ca, kernel::BuildCiQueryMwIrp(ca->lower, who.file, who.mode, {mw->mw}, nullptr));
    if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, kLength};
    const Status s = co_await ci.Send();
    if (const auto* answer = ci.Output<abi::CiQueryMwOut>(); answer != nullptr) {
      out->type = answer->type;
      out->rkey = answer->rkey;
    }
    co_return {s, kLength};
  }

  Status DestroyMw(const kernel::CallContext& ctx, const abi::DestroyMwIn& in,
                   kernel::DestroyMwRefs&, Irp* irp) override {
    return DestroyReleasing(ctx, in.mw.value, abi::ObjectType::Mw, Status::INVALID_MW_HANDLE, irp);
  }
};

}  // namespace

kernel::MrMwVerbHandlers* MrMwHandlers() {
  static MrMwVerbs verbs;
  return &verbs;
}

}  // namespace softib::al
