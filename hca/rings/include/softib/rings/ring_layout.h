// Where rings sit in a shared memory object, and checking a RingMapping against the object
// it claims to describe. The HCA lays rings out (RegionLayout, FormatRing); either side
// attaches to one with CheckMapping before touching it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "softib/abi/rings.h"
#include "softib/abi/runtime_ioctls.h"
#include "softib/abi/types.h"

namespace softib::rings {

using abi::RingControl;
using abi::RingError;
using abi::RingKind;
using abi::RingMapping;

// One page per ring start: rings of one object never share a page or a cache line.
inline constexpr std::size_t kRingAlignment = 4096;
// Entries start right after the control block (a whole number of cache lines).
inline constexpr std::size_t kEntriesOffset = sizeof(RingControl);
static_assert(kEntriesOffset % abi::kRingLineBytes == 0);

constexpr std::size_t EntrySize(RingKind kind) {
  switch (kind) {
    case RingKind::SEND:
      return sizeof(abi::SendWorkRequest);
    case RingKind::RECV:
    case RingKind::SRQ:
      return sizeof(abi::RecvWorkRequest);
    case RingKind::CQ:
      return sizeof(abi::WorkCompletion);
  }
  return 0;
}

constexpr bool IsValidEntryCount(uint64_t n) {
  return n >= abi::kRingMinEntries && n <= abi::kRingMaxEntries && (n & (n - 1)) == 0;
}

// The smallest valid ring of at least `wanted` entries (0 if none is that large).
constexpr uint32_t RoundUpEntries(uint32_t wanted) {
  uint32_t n = abi::kRingMinEntries;
  while (n < wanted && n < abi::kRingMaxEntries) n <<= 1;
  return n >= wanted ? n : 0;
}

// Lays out rings one after another in one shared memory object.
class RegionLayout {
 public:
  // Appends a ring; false when `num_entries` is not a valid count.
  bool Add(RingKind kind, uint32_t num_entries, RingMapping* out) {
    if (!IsValidEntryCount(num_entries) || EntrySize(kind) == 0) return false;
    uint64_t start = (size_ + kRingAlignment - 1) / kRingAlignment * kRingAlignment;
    uint64_t entries = static_cast<uint64_t>(num_entries) * EntrySize(kind);
    *out = {};
    out->doorbell_offset = start;
    out->ring_offset = start + kEntriesOffset;
    out->ring_size = entries;
    out->entry_size = static_cast<uint32_t>(EntrySize(kind));
    out->num_entries = num_entries;
    size_ = start + kEntriesOffset + entries;
    return true;
  }
  // Bytes the object needs (page-rounded).
  uint64_t size() const { return (size_ + kRingAlignment - 1) / kRingAlignment * kRingAlignment; }

 private:
  uint64_t size_ = 0;
};

// Writes a fresh control block (all indices zero, no error) for `mapping` at `base`. The
// object must be freshly created (zero) or no longer shared.
void FormatRing(void* base, const RingMapping& mapping, RingKind kind);

// True when `mapping` describes a ring of `kind` that lies wholly inside an object of
// `region_size` bytes, in the layout RegionLayout makes (entries right after the control
// block, aligned). Overflow-safe for any 64-bit values.
bool CheckMapping(const RingMapping& mapping, uint64_t region_size, RingKind kind);

// The client's check of a control block the HCA formatted: magic, version, kind and
// geometry agree with the mapping.
bool CheckHeader(const RingControl& control, const RingMapping& mapping, RingKind kind);

inline RingControl* ControlAt(void* base, const RingMapping& mapping) {
  return reinterpret_cast<RingControl*>(static_cast<char*>(base) +
                                        static_cast<std::size_t>(mapping.doorbell_offset));
}
template <typename Entry>
Entry* EntriesAt(void* base, const RingMapping& mapping) {
  return reinterpret_cast<Entry*>(static_cast<char*>(base) +
                                  static_cast<std::size_t>(mapping.ring_offset));
}

}  // namespace softib::rings
