// Memory regions and the protection check that precedes every DMA (IBA 10.6).
//
// Keys are built as hardware builds them: bits 31..8 index the region table, bits 7..0
// are a key byte that changes each time the slot is reused, so a stale key from a freed
// region never reaches its successor. L_Key and R_Key of a region are the same value.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "hca/device/dma.h"
#include "hca/device/mw.h"
#include "hca/device/pd.h"
#include "softib/abi/types.h"

namespace softib::hca {

// Why a key check failed; each maps to an IBA error class (ToLocalWcStatus/remote NAK).
enum class AccessError : uint8_t {
  kNone,
  kInvalidKey,    // no region has this key (freed, never made, stale key byte)
  kPdMismatch,    // region and QP belong to different PDs
  kOutOfBounds,   // [va, va+len) not inside the region
  kAccessDenied,  // region lacks the rights the operation needs
  kDmaFault,      // the region's memory could not be reached (process gone, unmapped)
};
const char* ToString(AccessError error);

// The completion status a requester reports for a failed local key check (IBA 10.6.3.1:
// local protection error); a failed remote check is a remote access error (NAK) instead.
abi::WcStatus LocalWcStatus(AccessError error);
inline constexpr abi::WcStatus kRemoteAccessWcStatus = abi::WcStatus::REM_ACCESS_ERR;

struct MemoryRegion {
  PdId pd = 0;
  uint64_t iova = 0;  // first virtual address the consumer uses for the region
  uint64_t length = 0;
  uint64_t addr = 0;  // where iova lands in the address space of `dma`
  abi::AccessFlags access{};
  std::shared_ptr<DmaAccessor> dma;
  uint32_t key = 0;  // L_Key == R_Key

  bool Contains(uint64_t va, uint64_t len) const {
    return va >= iova && len <= length && va - iova <= length - len;
  }
  // Moves bytes after a successful Check*: va is a consumer virtual address.
  bool Read(uint64_t va, std::span<uint8_t> out) const;
  bool Write(uint64_t va, std::span<const uint8_t> in) const;
};

class MrTable {
 public:
  explicit MrTable(uint32_t max_regions = 1u << 16) : max_regions_(max_regions) {}

  // INVALID_PERMISSION when remote write/atomic is asked without local write (IBA
  // 10.6.3.1); INVALID_PARAMETER for a zero length or a wrapping range;
  // INSUFFICIENT_RESOURCES when the table is full.
  abi::Status Register(PdId pd, uint64_t iova, uint64_t length, uint64_t addr,
                       abi::AccessFlags access, std::shared_ptr<DmaAccessor> dma, uint32_t* key);
  abi::Status Deregister(uint32_t key);
  // Reregistration: the same slot, a new key byte; see Hca::ReregisterMr.
  abi::Status Reregister(uint32_t key, abi::MrReregFlags what, PdId pd, uint64_t iova,
                         uint64_t length, uint64_t addr, abi::AccessFlags access,
                         std::shared_ptr<DmaAccessor> dma, uint32_t* new_key);

  // Local (L_Key, from a work request's scatter/gather list) and remote (R_Key, from a
  // packet) checks. `need` lists the rights the operation needs (none for a local read).
  AccessError CheckLocal(uint32_t lkey, PdId pd, uint64_t va, uint64_t len, abi::AccessFlags need,
                         const MemoryRegion** mr) const;
  // An R_Key may name a window (mw.cc): it must be bound, allow `need`, contain the range,
  // and belong to the accessing QP's PD (type 1) or to that QP itself (type 2; `qp` is its
  // handle); *mr is then the region under the window.
  AccessError CheckRemote(uint32_t rkey, PdId pd, uint64_t va, uint64_t len, abi::AccessFlags need,
                          const MemoryRegion** mr, uint32_t qp = 0) const;

  const MemoryRegion* Find(uint32_t key) const;
  std::size_t size() const { return live_; }
  bool AnyInPd(PdId pd) const;

  // Windows (mw.cc). `index` is the window's handle: its key's upper 24 bits.
  abi::Status AllocWindow(PdId pd, abi::MwType type, uint32_t* index, uint32_t* rkey);
  abi::Status FreeWindow(uint32_t index);
  MemoryWindow* Window(uint32_t index);
  const MemoryWindow* Window(uint32_t index) const;
  // The window whose current key is `key`, or nullptr.
  MemoryWindow* FindWindow(uint32_t key);
  bool AnyWindowOn(uint32_t mr_key) const;
  void InvalidateWindowsOf(uint32_t qp);
  std::size_t windows() const { return windows_; }

 private:
  bool AllocateSlot(uint32_t* index);
  AccessError CheckWindow(const MemoryWindow& mw, PdId pd, uint64_t va, uint64_t len,
                          abi::AccessFlags need, const MemoryRegion** mr, uint32_t qp) const;

  AccessError Check(uint32_t key, PdId pd, uint64_t va, uint64_t len, abi::AccessFlags need,
                    const MemoryRegion** mr) const;

  struct Slot {
    MemoryRegion mr;
    bool in_use = false;
    bool is_window = false;
    MemoryWindow mw;
    uint8_t key_byte = 0;
  };
  uint32_t max_regions_;
  std::vector<Slot> slots_{1};  // slot 0 unused: key 0 never names a region
  std::vector<uint32_t> free_;
  std::size_t live_ = 0;  // regions
  std::size_t windows_ = 0;
};

// The responder's data path for RDMA WRITE and READ: R_Key check, then the copy. On any
// error no byte moves.
AccessError WriteRemote(const MrTable& mrs, uint32_t rkey, PdId pd, uint64_t va,
                        std::span<const uint8_t> data, uint32_t qp = 0);
AccessError ReadRemote(const MrTable& mrs, uint32_t rkey, PdId pd, uint64_t va,
                       std::span<uint8_t> data, uint32_t qp = 0);

}  // namespace softib::hca
