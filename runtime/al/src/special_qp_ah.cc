// The AHs a special QP's sends go through (issue 17): made by CiCreateAh IRPs to the CA's
// device, one per address, and kept for the next sends to the same address. A send whose
// address has no AH yet waits in its slot for the IRP's completion, which posts it (inline
// when the HCA completed at once, else from its DPC); a refused creation completes the
// waiting sends in error. The IRPs are sent from a DPC of the QP, never under its lock: the
// code after an IRP's co_await takes the lock, and it runs inline when the HCA completes
// at once.
#include <endian.h>

#include <algorithm>
#include <cstring>

#include "runtime/al/src/ci_call.h"
#include "runtime/al/src/special_qp.h"
#include "softib/kernel/dpc.h"

namespace softib::al {

using kernel::Status;

SpecialQp::AhEntry* SpecialQp::AhForLocked(const abi::AddressVector& av) {
  // What the HCA refuses in an AV (its port is this QP's): refused here, as the verb's
  // INVALID_SETTING, instead of failing the send after the IRP.
  if (av.dlid == 0 || av.sl > 15 || av.grh.flow_label > 0xFFFFF) return nullptr;
  std::size_t cached = 0;
  AhEntry* idle = nullptr;
  for (AhEntry& entry : ahs_) {
    if (!entry.cached) continue;
    if (std::memcmp(&entry.av, &av, sizeof av) == 0) return &entry;
    ++cached;
    if (idle == nullptr && entry.uses == 0 && entry.ah != 0) idle = &entry;
  }
  bool cache = true;
  if (cached >= kAhCacheSize) {
    if (idle != nullptr) {  // an unused one makes room
      idle->cached = false;
      ReleaseAhLocked(idle);
    } else {
      cache = false;  // all busy: this one lives for its sends only
    }
  }
  AhEntry& entry = ahs_.emplace_back();
  entry.av = av;
  entry.cached = cache;
  ahs_to_create_.push_back(&entry);
  kernel::KeInsertQueueDpc(&ah_dpc_, nullptr, nullptr);  // false: already queued
  return &entry;
}

void SpecialQp::ReleaseAhLocked(AhEntry* entry) {
  if (entry->uses > 0) --entry->uses;
  DropIfUnusedLocked(entry);
}

void SpecialQp::DropIfUnusedLocked(AhEntry* entry) {
  if (entry->cached || entry->uses != 0 || entry->creating) return;
  if (entry->ah != 0) {
    SendRelease(kernel::BuildCiDestroyAhIrp(ca_->lower, nullptr, kernel::ProcessorMode::kKernelMode,
                                            {entry->ah}));
  }
  ahs_.remove_if([entry](const AhEntry& e) { return &e == entry; });
}

void SpecialQp::FlushAhsLocked() {
  for (const AhEntry& entry : ahs_) {
    if (entry.ah == 0) continue;
    SendRelease(kernel::BuildCiDestroyAhIrp(ca_->lower, nullptr, kernel::ProcessorMode::kKernelMode,
                                            {entry.ah}));
  }
  ahs_.clear();
  ahs_to_create_.clear();
}

void SpecialQp::AhDpc(kernel::Kdpc*, void* context, void*, void*) {
  static_cast<SpecialQp*>(context)->CreateAhs();
}

void SpecialQp::CreateAhs() {
  std::vector<std::pair<AhEntry*, abi::AddressVector>> todo;
  bool stopped;
  {
    kernel::SpinLockGuard guard(lock);
    for (AhEntry* entry : ahs_to_create_) todo.emplace_back(entry, entry->av);
    ahs_to_create_.clear();
    stopped = stopped_;
  }
  for (const auto& [entry, av] : todo) {
    if (stopped) {
      OnAhCreated(entry, Status::CANCELED, 0);
      continue;
    }
    ci_in_flight_.fetch_add(1, std::memory_order_acq_rel);
    ahs_made.fetch_add(1, std::memory_order_relaxed);
    CreateAhTask(entry, av);
  }
}

kernel::IrpTask SpecialQp::CreateAhTask(AhEntry* entry, abi::AddressVector av) {
  kernel::DeviceObject* const device = ca_->lower;
  const abi::CiCreateAhIn in{pd_, av};
  abi::CiCreateAhOut out{};
  const Status s = co_await CiIrp(
      device,
      kernel::BuildCiCreateAhIrp(device, nullptr, kernel::ProcessorMode::kKernelMode, in, &out),
      &out, sizeof out);
  OnAhCreated(entry, s, out.ah);
  ci_in_flight_.fetch_sub(1, std::memory_order_acq_rel);  // the last touch of this QP
}

// The waiting sends go out through the new AH, or complete LOCAL_QP_OP_ERR (the CA refused
// the AH or the send, or the QP stopped meanwhile) as if the wire had failed them.
void SpecialQp::OnAhCreated(AhEntry* entry, Status status, uint32_t ah) {
  After after;
  {
    kernel::SpinLockGuard guard(lock);
    std::vector<uint32_t> waiting = std::move(entry->waiting);
    entry->waiting.clear();
    const bool usable = status == Status::SUCCESS && !stopped_;
    if (status == Status::SUCCESS) entry->ah = ah;  // destroyed with the entry
    if (!usable) entry->cached = false;
    for (const uint32_t index : waiting) {
      if (usable && PostSlotLocked(index, slot_to_[index]) == Status::SUCCESS) continue;
      abi::WorkCompletion wc{};
      wc.wr_id = index;
      wc.status = abi::WcStatus::LOCAL_QP_OP_ERR;
      OnSendDone(wc, after);
    }
    entry->creating = false;
    DropIfUnusedLocked(entry);
  }
  for (auto& f : after) f();
}

}  // namespace softib::al
