// Scatter lists: where the bytes of an incoming message (a receive, a read response, an
// atomic result) land. Every segment is checked before any byte moves, so a protection
// error leaves memory untouched.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hca/device/mr.h"
#include "softib/abi/types.h"

namespace softib::hca {

struct ScatterSegment {
  const MemoryRegion* mr;
  uint64_t va;
  uint32_t length;
};

// Checks the segments (local write needed) that the first `total` bytes land in and lists
// them in `plan`. LOCAL_PROT_ERR for a bad segment, LOCAL_LENGTH_ERR when they hold less.
abi::WcStatus PlanScatter(const MrTable& mrs, PdId pd, std::span<const abi::LocalDataSegment> sges,
                          uint64_t total, std::vector<ScatterSegment>* plan);

// Bytes the plan can hold.
uint64_t PlanCapacity(const std::vector<ScatterSegment>& plan);

// Writes `data` at byte `offset` of the buffer the plan describes; false when it does
// not fit or the memory could not be reached.
bool WriteAt(const std::vector<ScatterSegment>& plan, uint64_t offset,
             std::span<const uint8_t> data);

}  // namespace softib::hca
