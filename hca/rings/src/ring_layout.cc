#include "softib/rings/ring_layout.h"

#include <cstring>

namespace softib::rings {

void FormatRing(void* base, const RingMapping& mapping, RingKind kind) {
  RingControl* control = ControlAt(base, mapping);
  std::memset(static_cast<void*>(control), 0, sizeof(RingControl));
  control->header.magic = abi::kRingMagic;
  control->header.layout_version = abi::kRingLayoutVersion;
  control->header.kind = kind;
  control->header.num_entries = mapping.num_entries;
  control->header.entry_size = mapping.entry_size;
  control->header.entries_offset =
      static_cast<uint32_t>(mapping.ring_offset - mapping.doorbell_offset);
}

bool CheckMapping(const RingMapping& m, uint64_t region_size, RingKind kind) {
  if (!IsValidEntryCount(m.num_entries) || m.entry_size != EntrySize(kind)) return false;
  if (m.doorbell_offset % abi::kRingLineBytes != 0) return false;
  if (m.doorbell_offset > region_size || region_size - m.doorbell_offset < kEntriesOffset) {
    return false;
  }
  if (m.ring_offset != m.doorbell_offset + kEntriesOffset) return false;
  // num_entries <= 2^16 and entry_size < 2^10: the product cannot overflow.
  uint64_t bytes = static_cast<uint64_t>(m.num_entries) * m.entry_size;
  if (m.ring_size != bytes) return false;
  return m.ring_offset <= region_size && region_size - m.ring_offset >= bytes;
}

bool CheckHeader(const RingControl& c, const RingMapping& m, RingKind kind) {
  return c.header.magic == abi::kRingMagic && c.header.layout_version == abi::kRingLayoutVersion &&
         c.header.kind == kind && c.header.num_entries == m.num_entries &&
         c.header.entry_size == m.entry_size &&
         c.header.entries_offset == m.ring_offset - m.doorbell_offset;
}

}  // namespace softib::rings
