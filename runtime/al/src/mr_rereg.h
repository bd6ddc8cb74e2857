// Memory-region reregistration (ReregMem, ReregPhys) and the physical ranges of RegPhys /
// ReregPhys, shared by the MR handlers.
#pragma once

#include <span>

#include "runtime/al/src/objects.h"

namespace softib::al {

// The ranges of a "physical" region (a kernel client's own buffer) as the one span of
// addresses the HCA maps: *vaddr = ranges[0].base + buf_offset, for `length` bytes.
//   INVALID_SETTING: no range, a zero-size or wrapping range, or [buf_offset, +length)
//     outside the ranges: the request itself is malformed.
//   UNSUPPORTED: ranges that are not virtually contiguous (base[i] + size[i] !=
//     base[i+1]): a valid IBTA page list, but the device translates a region as one
//     contiguous range of addresses, so it cannot describe gaps or overlaps.
kernel::Status PhysSpan(std::span<const abi::PhysRange> ranges, uint64_t buf_offset,
                        uint64_t length, uint64_t* vaddr);

// Changes what `flags` selects of `mr` through the device's own reregistration (the same
// table index, a new key; the old key dies at once): TRANSLATION takes vaddr/length,
// ACCESS takes `access`, PD moves the region under `new_pd` (another PD of the same CA;
// null or another CA's: INVALID_PD_HANDLE). RESOURCE_BUSY while windows are bound to it
// or another reregistration of it is running. On any error nothing changes.
kernel::Status ReregisterRegion(MrObj* mr, abi::MrReregFlags flags, PdObj* new_pd, uint64_t vaddr,
                                uint64_t length, abi::AccessFlags access, uint32_t* lkey,
                                uint32_t* rkey);

}  // namespace softib::al
