// Reregistration keeps the region's handle and table slot: the device swaps the key in
// place (Hca::ReregisterMr) and, for a move to another PD, the AL re-parents the MrObj so
// that the busy rules follow the region (the new PD is busy, the old one is free to go).
#include "runtime/al/src/mr_rereg.h"

#include "runtime/al/src/ci_call.h"

namespace softib::al {

using kernel::Status;

Status PhysSpan(std::span<const abi::PhysRange> ranges, uint64_t buf_offset, uint64_t length,
                uint64_t* vaddr) {
  if (ranges.empty()) return Status::INVALID_SETTING;
  uint64_t total = 0;
  for (const abi::PhysRange& range : ranges) {
    if (range.size == 0 || range.base + range.size < range.base) return Status::INVALID_SETTING;
    if (total + range.size < total) return Status::INVALID_SETTING;
    total += range.size;
  }
  for (std::size_t i = 0; i + 1 < ranges.size(); ++i) {
    if (ranges[i].base + ranges[i].size != ranges[i + 1].base) return Status::UNSUPPORTED;
  }
  if (buf_offset > total || length > total - buf_offset) return Status::INVALID_SETTING;
  *vaddr = ranges[0].base + buf_offset;
  return Status::SUCCESS;
}

// Holds the pins a reregistration takes, released in reverse on every path.
class ReregPins {
 public:
  explicit ReregPins(MrObj* mr) : mr_(mr) {}
  ~ReregPins() {
    if (pd_ != nullptr) pd_->RemoveChild();
    if (mr_pinned_) mr_->RemoveChild();
    if (exclusive_) mr_->reregistering.store(false, std::memory_order_release);
  }
  ReregPins(const ReregPins&) = delete;
  ReregPins& operator=(const ReregPins&) = delete;

  // One reregistration at a time.
  bool Exclusive() { return exclusive_ = !mr_->reregistering.exchange(true); }
  // A pinned region answers a concurrent DeregMr RESOURCE_BUSY instead of going away while
  // the device holds its new key; false once it is destroyed.
  bool PinRegion() { return mr_pinned_ = mr_->TryAddChild(); }
  // The target PD cannot be destroyed between the device's move and the AL's.
  bool PinPd(PdObj* pd) {
    if (!pd->TryAddChild()) return false;
    pd_ = pd;
    return true;
  }

 private:
  MrObj* const mr_;
  bool exclusive_ = false;
  bool mr_pinned_ = false;
  PdObj* pd_ = nullptr;
};

kernel::VerbTask ReregisterRegion(kernel::ObjectRef mr_ref, abi::MrReregFlags flags,
                                  kernel::ObjectRef new_pd_ref, uint64_t vaddr, uint64_t length,
                                  abi::AccessFlags access, uint32_t* lkey, uint32_t* rkey,
                                  uint64_t* iova, uint64_t information) {
  MrObj* mr = static_cast<MrObj*>(mr_ref.get());
  PdObj* new_pd = static_cast<PdObj*>(new_pd_ref.get());
  const bool move = abi::HasAny(flags, abi::MrReregFlags::PD);
  // A region never leaves its CA: a PD of another CA is not a PD this region can name.
  if (move && (new_pd == nullptr || new_pd->ca_obj->ca.get() != mr->ca)) {
    co_return {Status::INVALID_PD_HANDLE, information};
  }
  if (mr->ca->removed.load()) co_return {Status::CA_REMOVED, information};
  ReregPins pins(mr);
  if (!pins.Exclusive()) co_return {Status::RESOURCE_BUSY, information};
  if (!pins.PinRegion()) co_return {Status::INVALID_MR_HANDLE, information};
  if (move && !pins.PinPd(new_pd)) co_return {Status::INVALID_PD_HANDLE, information};

  uint32_t old_key;
  abi::MrRegion region;
  PdObj* old_pd;
  {
    kernel::SpinLockGuard guard(mr->lock);
    old_key = mr->key;
    region = mr->region;
    old_pd = mr->pd_obj;
  }
  if (abi::HasAny(flags, abi::MrReregFlags::TRANSLATION)) {
    region.vaddr = vaddr;
    region.length = length;
  }
  if (abi::HasAny(flags, abi::MrReregFlags::ACCESS)) region.access = access;
  CiIrp ci(mr->ca, kernel::BuildCiReregisterMrIrp(mr->ca->lower, mr->memory.file, mr->memory.mode,
                                                  {old_key, flags, move ? new_pd->pd : old_pd->pd,
                                                   region.access, region.vaddr, region.length},
                                                  nullptr));
  if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, information};
  if (const Status status = co_await ci.Send(); status != Status::SUCCESS) {
    // The device's "malformed range or flags" is the verb's INVALID_SETTING.
    co_return {status == Status::INVALID_PARAMETER ? Status::INVALID_SETTING : status, information};
  }
  const uint32_t new_key = ci.Output<abi::CiReregisterMrOut>()->new_key;
  // The key first: a destroy from now on releases the new one.
  {
    kernel::SpinLockGuard guard(mr->lock);
    mr->key = new_key;
    mr->region = region;
  }
  if (move && new_pd != old_pd) {
    // The old PD stays allocated until pd_obj no longer names it (QueryMr reads it).
    kernel::ReferenceObject(old_pd);
    // Both ends are pinned, so the move cannot fail; it only could if the file's teardown
    // forced the region down meanwhile, and then nothing is left to move.
    if (mr->Reparent(new_pd) == Status::SUCCESS) {
      kernel::SpinLockGuard guard(mr->lock);
      mr->pd_obj = new_pd;
    }
    kernel::DereferenceObject(old_pd);
  }
  *lkey = new_key;
  *rkey = new_key;
  if (iova != nullptr) {
    kernel::SpinLockGuard guard(mr->lock);
    *iova = mr->region.vaddr;
  }
  co_return {Status::SUCCESS, information};
}

}  // namespace softib::al
