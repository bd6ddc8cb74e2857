// Memory-region reregistration (ReregMem, ReregPhys) and the physical ranges of RegPhys /
// ReregPhys, shared by the MR handlers.
#pragma once

#include <span>

#include "runtime/al/src/objects.h"
#include "softib/kernel/verb_task.h"

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
// As a verb coroutine (kernel/verb_task.h): `lkey`, `rkey` and (when not null) `iova`
// receive the result; `information` is the verb's output length.
kernel::VerbTask ReregisterRegion(kernel::ObjectRef mr_ref, abi::MrReregFlags flags,
                                  kernel::ObjectRef new_pd_ref, uint64_t vaddr, uint64_t length,
                                  abi::AccessFlags access, uint32_t* lkey, uint32_t* rkey,
                                  uint64_t* iova, uint64_t information);

}  // namespace softib::al
