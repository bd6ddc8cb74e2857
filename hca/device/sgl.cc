#include "hca/device/sgl.h"

#include <algorithm>

namespace softib::hca {

abi::WcStatus PlanScatter(const MrTable& mrs, PdId pd, std::span<const abi::LocalDataSegment> sges,
                          uint64_t total, std::vector<ScatterSegment>* plan) {
  plan->clear();
  uint64_t covered = 0;
  for (std::size_t i = 0; i < sges.size() && covered < total; ++i) {
    const abi::LocalDataSegment& sge = sges[i];
    const MemoryRegion* mr = nullptr;
    if (mrs.CheckLocal(sge.lkey, pd, sge.vaddr, sge.length, abi::AccessFlags::LOCAL_WRITE, &mr) !=
        AccessError::kNone)
      return abi::WcStatus::LOCAL_PROT_ERR;
    plan->push_back({mr, sge.vaddr, sge.length});
    covered += sge.length;
  }
  return covered >= total ? abi::WcStatus::SUCCESS : abi::WcStatus::LOCAL_LENGTH_ERR;
}

uint64_t PlanCapacity(const std::vector<ScatterSegment>& plan) {
  uint64_t total = 0;
  for (const ScatterSegment& seg : plan) total += seg.length;
  return total;
}

bool WriteAt(const std::vector<ScatterSegment>& plan, uint64_t offset,
             std::span<const uint8_t> data) {
  for (const ScatterSegment& seg : plan) {
    if (data.empty()) break;
    if (offset >= seg.length) {
      offset -= seg.length;
      continue;
    }
    const std::size_t n = std::min<uint64_t>(seg.length - offset, data.size());
    if (!seg.mr->Write(seg.va + offset, data.first(n))) return false;
    data = data.subspan(n);
    offset = 0;
  }
  return data.empty();
}

}  // namespace softib::hca
