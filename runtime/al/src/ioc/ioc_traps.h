// What makes I/O unit discovery (ioc_pnp.h) look again at once instead of at its next
// poll: on each active port it sweeps through, InformInfo subscriptions to the SA's traps
// 64 and 65 (a GID came into or went out of service: a unit's node arrived or left) and
// 144 (a port's CapabilityMask changed: a unit began or stopped advertising
// IsDeviceManagementSupported, as when its last controller goes). A Report of any of them
// kicks a sweep. The watch is on the SA client's redo list, so the subscriptions are made
// again after an SM change, a LID change, a reregister request or the port's return.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>

#include "runtime/al/src/sa/sa_client.h"
#include "softib/kernel/spin_lock.h"

namespace softib::al::ioc {

class IocPnp;

class TrapWatch final : public sa::SaRedo {
 public:
  static constexpr uint16_t kTraps[] = {64, 65, 144};

  // One reference, the creator's; Subscribe lists it on the SA client (a second one).
  TrapWatch(AccessLayer* al, IocPnp* pnp, uint64_t ca_guid, uint8_t port, uint64_t port_guid_be)
      : al_(al), pnp_(pnp), ca_guid_(ca_guid), port_(port), port_guid_be_(port_guid_be) {}

  // Lists the watch and sends the subscriptions.
  void Subscribe();
  // No more kicks, off the SA client's list, the creator's reference dropped (PASSIVE).
  void End();

  void Redo() override;
  void Hold() override { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Release() override;
  bool OnPort(uint64_t ca_guid, uint8_t port) const override {
    return ca_guid == ca_guid_ && port == port_;
  }
  void OnReport(std::span<const uint8_t> notice) override;

  uint64_t ca_guid() const { return ca_guid_; }
  uint8_t port() const { return port_; }

 private:
  ~TrapWatch() override = default;

  AccessLayer* const al_;
  kernel::KSpinLock lock_;
  IocPnp* pnp_;  // lock_: null once ended
  const uint64_t ca_guid_;
  const uint8_t port_;
  const uint64_t port_guid_be_;
  std::atomic<int32_t> refs_{1};
};

}  // namespace softib::al::ioc
