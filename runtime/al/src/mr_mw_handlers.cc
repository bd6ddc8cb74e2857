// Memory regions and memory windows. The HCA reaches a user region through the opening
// process's pid (process_vm_readv/writev, at the registered address + the offset the file
// stated in GetFileAl), a kernel region by memcpy.
#include "runtime/al/src/handlers.h"
#include "runtime/al/src/mr_rereg.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

namespace {

Status Register(const kernel::CallContext& ctx, PdObj* pd, const abi::MrRegion& region,
                ci::MemoryOwner memory, uint32_t* lkey, uint32_t* rkey, uint64_t* handle) {
  uint32_t key = 0;
  if (const Status s = pd->ca_obj->ca->ci->RegisterMr(pd->pd, region.vaddr, region.length,
                                                      region.access, memory, &key);
      s != Status::SUCCESS) {
    return s == Status::INVALID_PARAMETER ? Status::INVALID_SETTING : s;
  }
  auto* object = new MrObj(InstanceOf(ctx), pd, key, region, memory);
  if (!Adopt(object, pd)) {
    kernel::DereferenceObject(object);
    return Status::INVALID_PD_HANDLE;
  }
  *lkey = key;
  *rkey = key;
  return Publish(InstanceOf(ctx), object, handle);
}

class MrMwVerbs final : public kernel::MrMwVerbHandlers {
 public:
  Status RegMem(const kernel::CallContext& ctx, const abi::RegMemIn& in, kernel::RegMemRefs& refs,
                abi::RegMemOut& out, Irp*) override {
    return Register(ctx, As<PdObj>(refs.pd), in.region, InstanceOf(ctx)->memory_owner(), &out.lkey,
                    &out.rkey, &out.mr.value);
  }

  Status RegPhys(const kernel::CallContext& ctx, const abi::RegPhysIn& in,
                 std::span<const abi::PhysRange> ranges, kernel::RegPhysRefs& refs,
                 abi::RegPhysOut& out, Irp*) override {
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
    return Register(ctx, As<PdObj>(refs.pd), region, {}, &out.lkey, &out.rkey, &out.mr.value);
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
                  abi::ReregMemOut& out, Irp*) override {
    return ReregisterRegion(As<MrObj>(refs.mr), in.flags, refs.pd ? As<PdObj>(refs.pd) : nullptr,
                            in.region.vaddr, in.region.length, in.region.access, &out.lkey,
                            &out.rkey);
  }

  Status ReregPhys(const kernel::CallContext& ctx, const abi::ReregPhysIn& in,
                   std::span<const abi::PhysRange> ranges, kernel::ReregPhysRefs& refs,
                   abi::ReregPhysOut& out, Irp*) override {
    // As RegPhys: a kernel client's own buffer; the ranges count with TRANSLATION only.
    if (InstanceOf(ctx)->pid != 0) return Status::UNSUPPORTED;
    uint64_t vaddr = 0;
    if (abi::HasAny(in.flags, abi::MrReregFlags::TRANSLATION)) {
      if (const Status s = PhysSpan(ranges, in.buf_offset, in.length, &vaddr);
          s != Status::SUCCESS) {
        return s;
      }
    }
    MrObj* mr = As<MrObj>(refs.mr);
    const Status s = ReregisterRegion(mr, in.flags, refs.pd ? As<PdObj>(refs.pd) : nullptr, vaddr,
                                      in.length, in.access, &out.lkey, &out.rkey);
    if (s == Status::SUCCESS) {
      kernel::SpinLockGuard guard(mr->lock);
      out.iova = mr->region.vaddr;
    }
    return s;
  }

  Status RegShared(const kernel::CallContext& ctx, const abi::RegSharedIn& in,
                   kernel::RegSharedRefs& refs, abi::RegSharedOut& out, Irp*) override {
    MrObj* mr = As<MrObj>(refs.mr);
    abi::MrRegion region;
    {
      kernel::SpinLockGuard guard(mr->lock);
      region = mr->region;
    }
    region.access = in.access;
    out.vaddr = region.vaddr;
    return Register(ctx, As<PdObj>(refs.pd), region, mr->memory, &out.lkey, &out.rkey,
                    &out.shared_mr.value);
  }

  Status DeregMr(const kernel::CallContext& ctx, const abi::DeregMrIn& in, kernel::DeregMrRefs&,
                 Irp*) override {
    return DestroyHandle(ctx, in.mr.value, abi::ObjectType::Mr, Status::INVALID_MR_HANDLE);
  }

  Status CreateMw(const kernel::CallContext& ctx, const abi::CreateMwIn& in,
                  kernel::CreateMwRefs& refs, abi::CreateMwOut& out, Irp*) override {
    PdObj* pd = As<PdObj>(refs.pd);
    uint32_t mw = 0;
    if (const Status s = pd->ca_obj->ca->ci->AllocMw(pd->pd, in.type, &mw, &out.rkey);
        s != Status::SUCCESS) {
      return s;
    }
    auto* object = new MwObj(InstanceOf(ctx), pd, mw, in.type);
    if (!Adopt(object, pd)) {
      kernel::DereferenceObject(object);
      return Status::INVALID_PD_HANDLE;
    }
    return Publish(InstanceOf(ctx), object, &out.mw.value);
  }

  Status QueryMw(const kernel::CallContext&, const abi::QueryMwIn&, kernel::QueryMwRefs& refs,
                 abi::QueryMwOut& out, Irp*) override {
    MwObj* mw = As<MwObj>(refs.mw);
    out.pd.value = mw->pd_obj->handle;
    return mw->pd_obj->ca_obj->ca->ci->QueryMw(mw->mw, &out.type, &out.rkey);
  }

  Status DestroyMw(const kernel::CallContext& ctx, const abi::DestroyMwIn& in,
                   kernel::DestroyMwRefs&, Irp*) override {
    return DestroyHandle(ctx, in.mw.value, abi::ObjectType::Mw, Status::INVALID_MW_HANDLE);
  }
};

}  // namespace

kernel::MrMwVerbHandlers* MrMwHandlers() {
  static MrMwVerbs verbs;
  return &verbs;
}

}  // namespace softib::al
