#include "hca/device/mr.h"

namespace softib::hca {

using abi::AccessFlags;

const char* ToString(AccessError error) {
  switch (error) {
    case AccessError::kNone:
      return "none";
    case AccessError::kInvalidKey:
      return "invalid key";
    case AccessError::kPdMismatch:
      return "PD mismatch";
    case AccessError::kOutOfBounds:
      return "out of bounds";
    case AccessError::kAccessDenied:
      return "access denied";
    case AccessError::kDmaFault:
      return "DMA fault";
  }
  return "?";
}

abi::WcStatus LocalWcStatus(AccessError error) {
  return error == AccessError::kNone ? abi::WcStatus::SUCCESS : abi::WcStatus::LOCAL_PROT_ERR;
}

bool MemoryRegion::Read(uint64_t va, std::span<uint8_t> out) const {
  return Contains(va, out.size()) && dma->Read(addr + (va - iova), out);
}

bool MemoryRegion::Write(uint64_t va, std::span<const uint8_t> in) const {
  return Contains(va, in.size()) && dma->Write(addr + (va - iova), in);
}

abi::Status MrTable::Register(PdId pd, uint64_t iova, uint64_t length, uint64_t addr,
                              AccessFlags access, std::shared_ptr<DmaAccessor> dma, uint32_t* key) {
  if ((static_cast<uint32_t>(access) & ~abi::kAccessFlagsValidMask) != 0)
    return abi::Status::INVALID_PARAMETER;
  const bool remote_modify =
      (access & (AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_ATOMIC)) != AccessFlags{};
  if (remote_modify && (access & AccessFlags::LOCAL_WRITE) == AccessFlags{})
    return abi::Status::INVALID_PERMISSION;
  if (length == 0 || iova + length < iova || addr + length < addr || dma == nullptr)
    return abi::Status::INVALID_PARAMETER;
  uint32_t index;
  if (!AllocateSlot(&index)) return abi::Status::INSUFFICIENT_RESOURCES;
  Slot& slot = slots_[index];
  ++slot.key_byte;
  slot.in_use = true;
  slot.mr =
      MemoryRegion{pd, iova, length, addr, access, std::move(dma), index << 8 | slot.key_byte};
  ++live_;
  *key = slot.mr.key;
  return abi::Status::SUCCESS;
}

bool MrTable::AllocateSlot(uint32_t* index) {
  if (!free_.empty()) {
    *index = free_.back();
    free_.pop_back();
    return true;
  }
  // 24 bits of index (IBA keys: index and key byte, as hardware lays them out).
  if (slots_.size() > max_regions_ || slots_.size() >= (1u << 24)) return false;
  *index = static_cast<uint32_t>(slots_.size());
  slots_.emplace_back();
  return true;
}

abi::Status MrTable::Deregister(uint32_t key) {
  if (Find(key) == nullptr) return abi::Status::INVALID_MR_HANDLE;
  if (AnyWindowOn(key)) return abi::Status::RESOURCE_BUSY;
  Slot& slot = slots_[key >> 8];
  slot.in_use = false;
  slot.mr = MemoryRegion{};
  free_.push_back(key >> 8);
  --live_;
  return abi::Status::SUCCESS;
}

abi::Status MrTable::Reregister(uint32_t key, abi::MrReregFlags what, PdId pd, uint64_t iova,
                                uint64_t length, uint64_t addr, AccessFlags access,
                                std::shared_ptr<DmaAccessor> dma, uint32_t* new_key) {
  const MemoryRegion* old = Find(key);
  if (old == nullptr) return abi::Status::INVALID_MR_HANDLE;
  if ((static_cast<uint32_t>(what) & ~abi::kMrReregFlagsValidMask) != 0 ||
      static_cast<uint32_t>(what) == 0)
    return abi::Status::INVALID_PARAMETER;
  if (AnyWindowOn(key)) return abi::Status::RESOURCE_BUSY;
  MemoryRegion next = *old;
  if (abi::HasAny(what, abi::MrReregFlags::PD)) next.pd = pd;
  if (abi::HasAny(what, abi::MrReregFlags::ACCESS)) next.access = access;
  if (abi::HasAny(what, abi::MrReregFlags::TRANSLATION)) {
    next.iova = iova;
    next.length = length;
    next.addr = addr;
    next.dma = std::move(dma);
  }
  // The same checks as a registration, on the region as it would become.
  if ((static_cast<uint32_t>(next.access) & ~abi::kAccessFlagsValidMask) != 0)
    return abi::Status::INVALID_PARAMETER;
  const bool remote_modify =
      (next.access & (AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_ATOMIC)) != AccessFlags{};
  if (remote_modify && (next.access & AccessFlags::LOCAL_WRITE) == AccessFlags{})
    return abi::Status::INVALID_PERMISSION;
  if (next.length == 0 || next.iova + next.length < next.iova ||
      next.addr + next.length < next.addr || next.dma == nullptr)
    return abi::Status::INVALID_PARAMETER;
  Slot& slot = slots_[key >> 8];
  ++slot.key_byte;  // the old key stops working at once
  next.key = (key >> 8) << 8 | slot.key_byte;
  slot.mr = std::move(next);
  *new_key = slot.mr.key;
  return abi::Status::SUCCESS;
}

const MemoryRegion* MrTable::Find(uint32_t key) const {
  const uint32_t index = key >> 8;
  if (index == 0 || index >= slots_.size()) return nullptr;
  const Slot& slot = slots_[index];
  if (!slot.in_use || slot.is_window || slot.mr.key != key) return nullptr;
  return &slot.mr;
}

bool MrTable::AnyInPd(PdId pd) const {
  for (const Slot& slot : slots_)
    if (slot.in_use && (slot.is_window ? slot.mw.pd : slot.mr.pd) == pd) return true;
  return false;
}

AccessError MrTable::Check(uint32_t key, PdId pd, uint64_t va, uint64_t len, AccessFlags need,
                           const MemoryRegion** mr) const {
  *mr = nullptr;
  const MemoryRegion* found = Find(key);
  if (found == nullptr) return AccessError::kInvalidKey;
  if (found->pd != pd) return AccessError::kPdMismatch;
  if ((found->access & need) != need) return AccessError::kAccessDenied;
  if (!found->Contains(va, len)) return AccessError::kOutOfBounds;
  *mr = found;
  return AccessError::kNone;
}

AccessError MrTable::CheckLocal(uint32_t lkey, PdId pd, uint64_t va, uint64_t len, AccessFlags need,
                                const MemoryRegion** mr) const {
  return Check(lkey, pd, va, len, need, mr);
}

AccessError MrTable::CheckRemote(uint32_t rkey, PdId pd, uint64_t va, uint64_t len,
                                 AccessFlags need, const MemoryRegion** mr, uint32_t qp) const {
  // A remote access must ask for at least one remote right; a region registered without
  // any answers every R_Key use with an access error.
  constexpr AccessFlags kRemote =
      AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_ATOMIC;
  if ((need & kRemote) == AccessFlags{}) return AccessError::kAccessDenied;
  const uint32_t index = rkey >> 8;
  if (index != 0 && index < slots_.size() && slots_[index].in_use && slots_[index].is_window) {
    *mr = nullptr;
    const MemoryWindow& mw = slots_[index].mw;
    if (mw.key != rkey) return AccessError::kInvalidKey;
    return CheckWindow(mw, pd, va, len, need, mr, qp);
  }
  return Check(rkey, pd, va, len, need, mr);
}

AccessError WriteRemote(const MrTable& mrs, uint32_t rkey, PdId pd, uint64_t va,
                        std::span<const uint8_t> data, uint32_t qp) {
  const MemoryRegion* mr = nullptr;
  const AccessError error =
      mrs.CheckRemote(rkey, pd, va, data.size(), AccessFlags::REMOTE_WRITE, &mr, qp);
  if (error != AccessError::kNone) return error;
  return mr->Write(va, data) ? AccessError::kNone : AccessError::kDmaFault;
}

AccessError ReadRemote(const MrTable& mrs, uint32_t rkey, PdId pd, uint64_t va,
                       std::span<uint8_t> data, uint32_t qp) {
  const MemoryRegion* mr = nullptr;
  const AccessError error =
      mrs.CheckRemote(rkey, pd, va, data.size(), AccessFlags::REMOTE_READ, &mr, qp);
  if (error != AccessError::kNone) return error;
  return mr->Read(va, data) ? AccessError::kNone : AccessError::kDmaFault;
}

}  // namespace softib::hca
