#include "runtime/al/src/ioc/ioc_pnp.h"

#include "runtime/al/src/ioc/ioc_traps.h"

#include <endian.h>

#include <cstring>
#include <set>
#include <thread>

#include "runtime/al/src/gsi_agent.h"
#include "runtime/al/src/mad_format.h"
#include "runtime/al/src/objects.h"
#include "runtime/al/src/sa/sa_client.h"
#include "softib/kernel/work_item.h"

namespace softib::al::ioc {

using kernel::Status;

namespace {

constexpr uint8_t kClassDevMgt = 0x06;
constexpr std::size_t kDevMgtData = 64;
constexpr uint16_t kNodeRecord = 0x0011, kPortInfoRecord = 0x0012;
constexpr uint16_t kIoUnitInfo = 0x0010, kIocProfile = 0x0011, kServiceEntries = 0x0012;
constexpr uint64_t kPortInfoRecordCapabilityMask = uint64_t{1} << 7;  // component 7
constexpr uint64_t kNodeRecordLid = uint64_t{1} << 0;                 // component 0
constexpr uint32_t kDeviceManagementSupported = 0x00080000;           // CapabilityMask bit 19
constexpr uint32_t kTimeoutMs = 500;
constexpr uint32_t kRetries = 2;

uint16_t Get16(std::span<const uint8_t> b, std::size_t at) {
  return static_cast<uint16_t>(b[at] << 8 | b[at + 1]);
}
uint64_t Get64(std::span<const uint8_t> b, std::size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | b[at + i];
  return v;
}

abi::PnpEventRecord IouRecord(const FoundIou& iou, abi::PnpEvent event) {
  abi::PnpEventRecord r{};
  r.event = event;
  r.guid = htobe64(iou.guid);
  r.ca_guid = htobe64(iou.ca_guid);
  r.port_num = iou.port;
  r.iou_lid = iou.lid;
  r.iou_gid = iou.gid;
  return r;
}

abi::PnpEventRecord IocRecord(const FoundIou& iou, const FoundIoc& ioc, abi::PnpEvent event) {
  abi::PnpEventRecord r = IouRecord(iou, event);
  r.guid = htobe64(ioc.guid());
  r.ioc_slot = ioc.slot;
  r.num_service_entries = ioc.num_entries;
  std::memcpy(r.ioc_profile, ioc.profile.data(), ioc.profile.size());
  std::memcpy(r.service_entries, ioc.entries.data(), ioc.entries.size());
  return r;
}

}  // namespace

uint64_t FoundIoc::guid() const { return Get64(profile, 0); }

std::vector<abi::PnpEventRecord> Diff(const Snapshot& before, const Snapshot& after,
                                      abi::PnpClass pnp_class) {
  std::vector<abi::PnpEventRecord> removed, added;
  const bool iou_class = pnp_class == abi::PnpClass::IOU;
  for (const auto& [guid, old_iou] : before) {
    auto now = after.find(guid);
    if (iou_class) {
      if (now == after.end()) removed.push_back(IouRecord(old_iou, abi::PnpEvent::IOU_REMOVE));
      continue;
    }
    for (const auto& [ioc_guid, old_ioc] : old_iou.iocs) {
      const bool kept = now != after.end() && now->second.iocs.contains(ioc_guid) &&
                        now->second.iocs.at(ioc_guid) == old_ioc;
      if (!kept) removed.push_back(IocRecord(old_iou, old_ioc, abi::PnpEvent::IOC_REMOVE));
    }
  }
  for (const auto& [guid, iou] : after) {
    auto then = before.find(guid);
    if (iou_class) {
      if (then == before.end()) added.push_back(IouRecord(iou, abi::PnpEvent::IOU_ADD));
      continue;
    }
    for (const auto& [ioc_guid, ioc] : iou.iocs) {
      const bool kept = then != before.end() && then->second.iocs.contains(ioc_guid) &&
                        then->second.iocs.at(ioc_guid) == ioc;
      if (!kept) added.push_back(IocRecord(iou, ioc, abi::PnpEvent::IOC_ADD));
    }
  }
  removed.insert(removed.end(), added.begin(), added.end());
  return removed;
}

// One sweep: its queries in flight, what they found, and the last sweep's units (a unit
// whose ChangeID did not move keeps its controllers without asking again).
struct IocPnp::Sweep {
  IocPnp* owner = nullptr;
  Snapshot previous;
  kernel::KSpinLock lock;
  Snapshot found;                       // lock
  std::set<uint64_t> units_asked;       // lock: IOU GUIDs already being queried
  std::atomic<int32_t> outstanding{1};  // Start's own token until it issued the first queries

  // A query ended: the last one finishes the sweep at PASSIVE.
  void Done() {
    if (outstanding.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    IocPnp* pnp = owner;
    {
      kernel::SpinLockGuard guard(pnp->lock_);
      pnp->finished_ = self;
      self.reset();
    }
    pnp->QueueWork();
  }
  std::shared_ptr<Sweep> self;  // set while the sweep runs (the owner's pointer to it)
};

namespace {

// Sends a DevMgt Get through the AL's device management agent of (CA, port).
Status AskDevMgt(AccessLayer* al, const FoundIou& iou, uint16_t attribute, uint32_t modifier,
                 GsiSendDone done) {
  if (!al->devmgt_agent) return Status::INSUFFICIENT_RESOURCES;
  GsiAgentRef agent = al->devmgt_agent->Find(iou.ca_guid, iou.port);
  if (!agent) return Status::INVALID_PORT_STATE;
  std::array<uint8_t, mad::kMadSize> m{};
  m[0] = 1;
  m[1] = kClassDevMgt;
  m[2] = 1;
  m[3] = mad::kMethodGet;
  m[16] = static_cast<uint8_t>(attribute >> 8);
  m[17] = static_cast<uint8_t>(attribute);
  for (int i = 0; i < 4; ++i) m[20 + i] = static_cast<uint8_t>(modifier >> (24 - 8 * i));
  MadAddress to;
  to.av.port_num = iou.port;
  to.av.dlid = iou.lid;
  to.remote_qpn = 1;
  to.remote_qkey = mad::kGsiQkey;
  GsiSendOptions options;
  options.response_expected = true;
  options.timeout_ms = kTimeoutMs;
  options.retries = kRetries;
  return agent->Send(to, m, options, std::move(done));
}

// A DevMgt answer with status 0 and its attribute data.
bool DevMgtData(abi::WcStatus status, std::span<const uint8_t> response,
                std::span<const uint8_t>* data) {
  if (status != abi::WcStatus::SUCCESS || response.size() < mad::kMadSize) return false;
  if (mad::Status(response.data()) != 0) return false;
  *data = response.subspan(kDevMgtData);
  return true;
}

}  // namespace

// ---- the queries of a sweep ----------------------------------------------------------------

namespace {

struct SweepQueries {
  AccessLayer* al;
  std::shared_ptr<IocPnp::Sweep> sweep;

  // An async step: counted before it is sent; a send that fails counts as done.
  template <typename Issue>
  void Step(Issue issue) {
    sweep->outstanding.fetch_add(1, std::memory_order_acq_rel);
    if (!issue()) sweep->Done();
  }

  void Port(const sa::SaPort& port) {
    std::array<uint8_t, 68> record{};
    record[24] = static_cast<uint8_t>(kDeviceManagementSupported >> 24);
    record[25] = static_cast<uint8_t>(kDeviceManagementSupported >> 16);
    record[26] = static_cast<uint8_t>(kDeviceManagementSupported >> 8);
    record[27] = static_cast<uint8_t>(kDeviceManagementSupported);
    sa::SaRequest request;
    request.method = sa::kGetTable;
    request.attribute_id = kPortInfoRecord;
    request.component_mask = kPortInfoRecordCapabilityMask;
    request.attribute = record;
    SweepQueries self = *this;
    Step([&] {
      return sa::SaOf(al)->Send(port, request, kTimeoutMs, kRetries,
                                [self, port](Status s, const sa::SaAnswer& answer) mutable {
                                  self.OnPorts(port, s, answer);
                                }) == Status::SUCCESS;
    });
  }

  void OnPorts(const sa::SaPort& port, Status status, const sa::SaAnswer& answer) {
    if (status == Status::SUCCESS && answer.valid && answer.mad_status == 0 &&
        answer.record_size >= 8) {
      for (uint32_t i = 0; i < answer.num_records; ++i) {
        const auto rec = std::span<const uint8_t>(answer.data).subspan(i * answer.record_size);
        Node(port, Get16(rec, 0));
      }
    }
    sweep->Done();
  }

  void Node(const sa::SaPort& port, uint16_t lid) {
    std::array<uint8_t, 108> record{};
    record[0] = static_cast<uint8_t>(lid >> 8);
    record[1] = static_cast<uint8_t>(lid);
    sa::SaRequest request;
    request.method = sa::kGetTable;
    request.attribute_id = kNodeRecord;
    request.component_mask = kNodeRecordLid;
    request.attribute = record;
    SweepQueries self = *this;
    Step([&] {
      return sa::SaOf(al)->Send(port, request, kTimeoutMs, kRetries,
                                [self, port, lid](Status s, const sa::SaAnswer& answer) mutable {
                                  self.OnNode(port, lid, s, answer);
                                }) == Status::SUCCESS;
    });
  }

  void OnNode(const sa::SaPort& port, uint16_t lid, Status status, const sa::SaAnswer& answer) {
    if (status == Status::SUCCESS && answer.valid && answer.mad_status == 0 &&
        answer.num_records >= 1 && answer.record_size >= 32) {
      FoundIou iou;
      iou.guid = Get64(answer.data, 16);  // NodeGUID
      iou.ca_guid = port.ca->guid;
      iou.port = port.port;
      iou.lid = lid;
      const uint64_t prefix = port.attributes.subnet_prefix;  // network order
      std::memcpy(iou.gid.raw, &prefix, 8);
      std::memcpy(iou.gid.raw + 8, answer.data.data() + 24, 8);  // PortGUID
      bool first;
      {
        kernel::SpinLockGuard guard(sweep->lock);
        first = sweep->units_asked.insert(iou.guid).second;
      }
      if (first) Unit(iou);
    }
    sweep->Done();
  }

  void Unit(const FoundIou& iou) {
    SweepQueries self = *this;
    Step([&] {
      return AskDevMgt(al, iou, kIoUnitInfo, 0,
                       [self, iou](abi::WcStatus s, std::span<const uint8_t> r,
                                   const MadOrigin&) mutable { self.OnUnit(iou, s, r); }) ==
             Status::SUCCESS;
    });
  }

  void OnUnit(FoundIou iou, abi::WcStatus status, std::span<const uint8_t> response) {
    std::span<const uint8_t> info;
    if (DevMgtData(status, response, &info)) {
      iou.change_id = Get16(info, 0);
      auto then = sweep->previous.find(iou.guid);
      const bool same = then != sweep->previous.end() && then->second.change_id == iou.change_id;
      if (same) iou.iocs = then->second.iocs;
      {
        kernel::SpinLockGuard guard(sweep->lock);
        sweep->found[iou.guid] = iou;
      }
      const uint8_t max = info[2];
      for (unsigned slot = 1; !same && slot <= max; ++slot) {
        const uint8_t nibble = (info[4 + (slot - 1) / 2] >> ((slot % 2) ? 4 : 0)) & 0xF;
        if (nibble == 1) Profile(iou, static_cast<uint8_t>(slot));
      }
    }
    sweep->Done();
  }

  void Profile(const FoundIou& iou, uint8_t slot) {
    SweepQueries self = *this;
    Step([&] {
      return AskDevMgt(al, iou, kIocProfile, slot,
                       [self, iou, slot](abi::WcStatus s, std::span<const uint8_t> r,
                                         const MadOrigin&) mutable {
                         self.OnProfile(iou, slot, s, r);
                       }) == Status::SUCCESS;
    });
  }

  void OnProfile(const FoundIou& iou, uint8_t slot, abi::WcStatus status,
                 std::span<const uint8_t> response) {
    std::span<const uint8_t> data;
    if (DevMgtData(status, response, &data)) {
      FoundIoc ioc;
      ioc.slot = slot;
      std::memcpy(ioc.profile.data(), data.data(), ioc.profile.size());
      ioc.num_entries = data[54];
      {
        kernel::SpinLockGuard guard(sweep->lock);
        sweep->found[iou.guid].iocs[ioc.guid()] = ioc;
      }
      if (ioc.num_entries != 0) Entries(iou, ioc);
    }
    sweep->Done();
  }

  // The first four entries (what a record carries).
  void Entries(const FoundIou& iou, const FoundIoc& ioc) {
    const uint32_t last = std::min<uint32_t>(ioc.num_entries, 4) - 1;
    const uint32_t modifier = uint32_t{ioc.slot} << 16 | last << 8;
    const uint64_t ioc_guid = ioc.guid();
    SweepQueries self = *this;
    Step([&] {
      return AskDevMgt(al, iou, kServiceEntries, modifier,
                       [self, iou, ioc_guid, last](abi::WcStatus s, std::span<const uint8_t> r,
                                                   const MadOrigin&) mutable {
                         std::span<const uint8_t> data;
                         if (DevMgtData(s, r, &data)) {
                           kernel::SpinLockGuard guard(self.sweep->lock);
                           FoundIoc& found = self.sweep->found[iou.guid].iocs[ioc_guid];
                           std::memcpy(found.entries.data(), data.data(), 48 * (last + 1));
                         }
                         self.sweep->Done();
                       }) == Status::SUCCESS;
    });
  }
};

}  // namespace

// ---- IocPnp --------------------------------------------------------------------------------

IocPnp::IocPnp(AccessLayer* al) : al_(al) {
  kernel::KeInitializeTimer(&timer_, al->node);
  kernel::KeInitializeDpc(&dpc_, al->node, &TimerDpc, this);
}

IocPnp::~IocPnp() { Stop(); }

bool IocPnp::Wanted() const {
  kernel::SpinLockGuard guard(al_->lock);
  for (PnpRegObj* reg : al_->pnp_regs) {
    if (reg->pnp_class == abi::PnpClass::IOU || reg->pnp_class == abi::PnpClass::IOC) return true;
  }
  return false;
}

void IocPnp::Kick() { Arm(std::chrono::milliseconds(0)); }

void IocPnp::Arm(std::chrono::milliseconds due) {
  {
    kernel::SpinLockGuard guard(lock_);
    if (stopped_) return;
  }
  kernel::KeSetTimer(&timer_, due, &dpc_);
}

void IocPnp::TimerDpc(kernel::Kdpc*, void* context, void*, void*) {
  auto* pnp = static_cast<IocPnp*>(context);
  {
    kernel::SpinLockGuard guard(pnp->lock_);
    if (pnp->stopped_) return;
    if (pnp->running_) {
      pnp->again_ = true;  // the sweep out now may have missed what caused this
      return;
    }
    pnp->running_ = true;
  }
  pnp->QueueWork();
}

// The sweep's start and finish run from a work item, not from the timer's DPC or the last
// query's completion, and must (issue 17 asked): both take the AL's pnp_mutex, a FastMutex
// (it waits: PASSIVE/APC only) that orders the IOU/IOC records against PnP registrations
// (RegisterPnp posts the present state under it) and against CA arrival and removal (which
// start and stop GSI agents under it; GsiAgent::Close is PASSIVE). Start also
// subscribes and ends the ports' trap watches through the SA client. None of this waits for
// the HCA, so the AL speaking IRPs to the HCA driver does not let the work item go; turning
// pnp_mutex into a spin lock would, once CA arrival/removal no longer blocks while holding it
// (GSI agents closing asynchronously) — a change to the AL's PnP core, not here.
void IocPnp::QueueWork() {
  kernel::IoWorkItem* item = kernel::IoAllocateWorkItem(al_->device);
  in_flight_.fetch_add(1, std::memory_order_acq_rel);
  kernel::IoQueueWorkItem(item, &SweepWork, new WorkContext{this, item});
}

void IocPnp::SweepWork(kernel::DeviceObject*, void* context) {
  std::unique_ptr<WorkContext> work(static_cast<WorkContext*>(context));
  IocPnp* pnp = work->pnp;
  kernel::IoFreeWorkItem(work->item);
  std::shared_ptr<Sweep> finished;
  {
    kernel::SpinLockGuard guard(pnp->lock_);
    finished = std::move(pnp->finished_);
  }
  if (finished) {
    pnp->Finish(std::move(finished));
  } else {
    pnp->Start();
  }
  pnp->in_flight_.fetch_sub(1, std::memory_order_acq_rel);
}

void IocPnp::Start() {
  bool stopped;
  {
    kernel::SpinLockGuard guard(lock_);
    stopped = stopped_;
  }
  if (stopped || !Wanted()) {
    kernel::SpinLockGuard guard(lock_);
    running_ = false;
    return;
  }
  auto sweep = std::make_shared<Sweep>();
  sweep->owner = this;
  sweep->self = sweep;
  al_->pnp_mutex.Acquire();
  sweep->previous = present_;
  al_->pnp_mutex.Release();
  SweepQueries queries{al_, sweep};
  std::vector<std::pair<uint64_t, sa::SaPort>> active;  // with the port GUID, network order
  for (const auto& ca : al_->Cas()) {
    if (ca->removed.load()) continue;
    std::vector<abi::PortAttributes> ports;
    if (!ca->CachedAllPorts(&ports)) continue;  // the port cache (al_internal.h)
    for (const abi::PortAttributes& p : ports) {
      sa::SaPort port;
      if (sa::SaOf(al_)->FindPort(p.port_guid, &port) != Status::SUCCESS) continue;
      queries.Port(port);
      active.emplace_back(p.port_guid, port);
    }
  }
  WatchPorts(active);
  sweep->Done();  // Start's token
}

void IocPnp::WatchPorts(const std::vector<std::pair<uint64_t, sa::SaPort>>& ports) {
  std::set<uint64_t> cas;
  for (const auto& ca : al_->Cas()) {
    if (!ca->removed.load()) cas.insert(ca->guid);
  }
  for (auto it = watches_.begin(); it != watches_.end();) {
    if (cas.contains(it->first.first)) {
      ++it;
      continue;
    }
    it->second->End();  // its CA is gone
    it = watches_.erase(it);
  }
  for (const auto& [port_guid, port] : ports) {
    TrapWatch*& watch = watches_[{port.ca->guid, port.port}];
    if (watch != nullptr) continue;  // its subscriptions follow the port (the redo list)
    watch = new TrapWatch(al_, this, port.ca->guid, port.port, port_guid);
    watch->Subscribe();
  }
}

void IocPnp::Finish(std::shared_ptr<Sweep> sweep) {
  Snapshot after;
  {
    kernel::SpinLockGuard guard(sweep->lock);
    after = std::move(sweep->found);
  }
  bool again, stopped;
  {
    kernel::SpinLockGuard guard(lock_);
    again = std::exchange(again_, false);
    stopped = stopped_;
    running_ = false;
  }
  if (stopped) return;
  al_->pnp_mutex.Acquire();
  const auto iou_records = Diff(present_, after, abi::PnpClass::IOU);
  const auto ioc_records = Diff(present_, after, abi::PnpClass::IOC);
  present_ = std::move(after);
  std::vector<kernel::ObjectRef> regs;
  {
    kernel::SpinLockGuard guard(al_->lock);
    for (PnpRegObj* reg : al_->pnp_regs) {
      if (reg->pnp_class != abi::PnpClass::IOU && reg->pnp_class != abi::PnpClass::IOC) continue;
      kernel::ReferenceObject(reg);
      regs.emplace_back(reg);
    }
  }
  for (auto& ref : regs) {
    auto* reg = static_cast<PnpRegObj*>(ref.get());
    for (const auto& r : reg->pnp_class == abi::PnpClass::IOU ? iou_records : ioc_records) {
      reg->Post(r);
    }
  }
  al_->pnp_mutex.Release();
  sweeps.fetch_add(1, std::memory_order_relaxed);
  Arm(again ? std::chrono::milliseconds(0) : std::chrono::milliseconds(interval_ms_.load()));
}

void IocPnp::PostPresent(PnpRegObj* reg) {
  const Snapshot none;
  for (const auto& r : Diff(none, present_, reg->pnp_class)) reg->Post(r);
}

void IocPnp::Stop() {
  {
    kernel::SpinLockGuard guard(lock_);
    if (stopped_) return;
    stopped_ = true;
  }
  kernel::KeCancelTimer(&timer_);
  kernel::KeFlushQueuedDpcs(al_->node);
  // A sweep out ends by its queries' answers, timeouts or cancellation; its last step
  // queues the work that sees `stopped_`.
  for (;;) {
    {
      kernel::SpinLockGuard guard(lock_);
      if (!running_ && in_flight_.load() == 0) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (auto& [where, watch] : watches_) watch->End();
  watches_.clear();
}

}  // namespace softib::al::ioc
