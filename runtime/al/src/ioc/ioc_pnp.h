// I/O unit and controller discovery for the IOU and IOC class PnP registrations (IBAL's
// ioc_pnp): while such a registration exists, the AL sweeps the subnet — through each
// active port, the SA's PortInfoRecords of the ports with IsDeviceManagementSupported, the
// NodeRecord of each (its node GUID is the I/O unit's GUID), then each unit's device
// management agent: IOUnitInfo, and for a unit whose ChangeID moved, the profiles and
// service entries of its controllers. What differs from the last sweep becomes IOU_ADD /
// IOU_REMOVE and IOC_ADD / IOC_REMOVE records (a changed controller: REMOVE then ADD).
// Sweeps run when a registration is made, when a port becomes active or its LID or SM
// changes, when the SA reports a GID in or out of service or a CapabilityMask change
// (ioc_traps.h: the subscriptions are made on each port a sweep goes through), and every
// `interval` (10 s: what no trap announces, such as a second controller in a unit; IBAL
// only polls, every 30 s).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "runtime/al/src/sa/sa_client.h"
#include "softib/abi/types.h"
#include "softib/kernel/dpc.h"
#include "softib/kernel/spin_lock.h"
#include "softib/kernel/timer.h"
#include "softib/kernel/work_item.h"

namespace softib::kernel {
struct DeviceObject;
}

namespace softib::al {

class AccessLayer;
class PnpRegObj;

namespace ioc {

class TrapWatch;

struct FoundIoc {
  uint8_t slot = 0;
  std::array<uint8_t, abi::kIocProfileBytes> profile{};
  std::array<uint8_t, abi::kIocServiceEntriesBytes> entries{};  // the first four
  uint8_t num_entries = 0;
  bool operator==(const FoundIoc&) const = default;
  uint64_t guid() const;  // host order, from the profile
};

struct FoundIou {
  uint64_t guid = 0;     // host order: the node GUID
  uint64_t ca_guid = 0;  // host order: the local CA it was reached through
  uint8_t port = 0;      // and its port
  uint16_t lid = 0;      // the unit's port
  abi::Gid gid{};        // the unit's port GID
  uint16_t change_id = 0;
  std::map<uint64_t, FoundIoc> iocs;  // by IOC GUID
};

using Snapshot = std::map<uint64_t, FoundIou>;  // by IOU GUID

// The records that take a registration of `pnp_class` (IOU or IOC) from `before` to `after`:
// removals first, then additions.
std::vector<abi::PnpEventRecord> Diff(const Snapshot& before, const Snapshot& after,
                                      abi::PnpClass pnp_class);

class IocPnp {
 public:
  explicit IocPnp(AccessLayer* al);
  ~IocPnp();
  IocPnp(const IocPnp&) = delete;
  IocPnp& operator=(const IocPnp&) = delete;

  void Stop();  // PASSIVE: no sweep runs or starts afterwards

  // A sweep soon (a registration, a port event); nothing while no IOU/IOC registration exists.
  void Kick();
  void set_interval(std::chrono::milliseconds interval) { interval_ms_ = interval.count(); }

  // A new IOU/IOC registration (pnp_mutex held): the units and controllers known now.
  void PostPresent(PnpRegObj* reg);

  std::atomic<uint64_t> sweeps{0};  // finished sweeps (tests)

 private:
 public:
  struct Sweep;  // ioc_pnp.cc

 private:
  struct WorkContext {
    IocPnp* pnp;
    kernel::IoWorkItem* item;
  };
  static void TimerDpc(kernel::Kdpc*, void* context, void*, void*);
  void QueueWork();  // SweepWork at PASSIVE: Finish a finished sweep, else Start one
  static void SweepWork(kernel::DeviceObject*, void* context);
  void Start();                         // PASSIVE: a new sweep's first queries
  void Finish(std::shared_ptr<Sweep>);  // PASSIVE: diff, post, re-arm
  void Arm(std::chrono::milliseconds due);
  bool Wanted() const;

  // Trap subscriptions of the ports swept through, by (CA GUID, port). Only Start touches
  // it (one sweep at a time), and Stop once no sweep can start.
  void WatchPorts(const std::vector<std::pair<uint64_t, sa::SaPort>>& ports);

  AccessLayer* const al_;
  std::atomic<int64_t> interval_ms_{10000};
  std::map<std::pair<uint64_t, uint8_t>, TrapWatch*> watches_;
  kernel::Ktimer timer_{};
  kernel::Kdpc dpc_{};
  kernel::KSpinLock lock_;
  bool stopped_ = false;                // lock_
  bool running_ = false;                // lock_: a sweep is out
  bool again_ = false;                  // lock_: kicked while running
  std::atomic<uint32_t> in_flight_{0};  // callbacks that may still run
  std::shared_ptr<Sweep> finished_;     // lock_: the sweep whose last query ended
  Snapshot present_;                    // al->pnp_mutex
};

}  // namespace ioc
}  // namespace softib::al
