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
  if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
  } else {
    if (slots_.size() > max_regions_) return abi::Status::INSUFFICIENT_RESOURCES;
    index = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& slot = slots_[index];
  ++slot.key_byte;
  slot.in_use = true;
  slot.mr =
      MemoryRegion{pd, iova, length, addr, access, std::move(dma), index << 8 | slot.key_byte};
  ++live_;
  *key = slot.mr.key;
  return abi::Status::SUCCESS;
}

abi::Status MrTable::Deregister(uint32_t key) {
  if (Find(key) == nullptr) return abi::Status::INVALID_MR_HANDLE;
  Slot& slot = slots_[key >> 8];
  slot.in_use = false;
  slot.mr = MemoryRegion{};
  free_.push_back(key >> 8);
  --live_;
  return abi::Status::SUCCESS;
}

const MemoryRegion* MrTable::Find(uint32_t key) const {
  const uint32_t index = key >> 8;
  if (index == 0 || index >= slots_.size()) return nullptr;
  const Slot& slot = slots_[index];
  if (!slot.in_use || slot.mr.key != key) return nullptr;
  return &slot.mr;
}

bool MrTable::AnyInPd(PdId pd) const {
  for (const Slot& slot : slots_)
    if (slot.in_use && slot.mr.pd == pd) return true;
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
                                 AccessFlags need, const MemoryRegion** mr) const {
  // A remote access must ask for at least one remote right; a region registered without
  // any answers every R_Key use with an access error.
  constexpr AccessFlags kRemote =
      AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_ATOMIC;
  if ((need & kRemote) == AccessFlags{}) return AccessError::kAccessDenied;
  return Check(rkey, pd, va, len, need, mr);
}

AccessError WriteRemote(const MrTable& mrs, uint32_t rkey, PdId pd, uint64_t va,
                        std::span<const uint8_t> data) {
  const MemoryRegion* mr = nullptr;
  const AccessError error =
      mrs.CheckRemote(rkey, pd, va, data.size(), AccessFlags::REMOTE_WRITE, &mr);
  if (error != AccessError::kNone) return error;
  return mr->Write(va, data) ? AccessError::kNone : AccessError::kDmaFault;
}

AccessError ReadRemote(const MrTable& mrs, uint32_t rkey, PdId pd, uint64_t va,
                       std::span<uint8_t> data) {
  const MemoryRegion* mr = nullptr;
  const AccessError error =
      mrs.CheckRemote(rkey, pd, va, data.size(), AccessFlags::REMOTE_READ, &mr);
  if (error != AccessError::kNone) return error;
  return mr->Read(va, data) ? AccessError::kNone : AccessError::kDmaFault;
}

}  // namespace softib::hca
