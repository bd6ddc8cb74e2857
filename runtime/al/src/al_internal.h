// The Access Layer's private state: the CAs it knows (AlCa), the per-open state (Instance:
// a user file, a kernel client's file, or a CA file reached by the OpenCa redirect), and
// the shared bookkeeping (object counts, pending requests, PnP registrations).
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "runtime/al/src/ioc/io_unit.h"
#include "runtime/al/src/pending_irps.h"
#include "softib/abi/abi_objects.h"
#include "softib/abi/types.h"
#include "softib/al/access_layer.h"
#include "softib/ci/ci.h"
#include "softib/kernel/call_context.h"
#include "softib/kernel/dpc.h"
#include "softib/kernel/event.h"
#include "softib/kernel/handle_table.h"
#include "softib/kernel/mutex.h"
#include "softib/kernel/object.h"
#include "softib/kernel/pnp.h"

namespace softib::al {

class CaObj;
class CqObj;
class QpObj;
class SrqObj;
class PnpRegObj;
class AlObj;
class SpecialQp;
class GsiRegistration;
namespace ioc {
class IocPnp;
}
namespace sa {
class SaClient;
}
namespace cm {
class ConnectionManager;
}

// Live objects per type (leak checks: QueryObjectCounts).
struct Counters {
  std::array<std::atomic<uint32_t>, abi::kObjectTypeCount> by_type{};
  std::atomic<uint32_t> shm_mappings{0};  // objects with speed-path rings mapped
};

// One CA the AL knows. Shared by the AL's list and every object of the CA, so it outlives
// its removal for as long as objects of it remain.
class AlCa {
 public:
  AlCa(AccessLayer* al, ci::CaInterface* ci);
  ~AlCa();  // drops the CI reference and frees the event IRP
  AlCa(const AlCa&) = delete;
  AlCa& operator=(const AlCa&) = delete;

  AccessLayer* const al;
  ci::CaInterface* const ci;                           // referenced
  const uint64_t guid;                                 // host order
  kernel::DeviceObject* lower = nullptr;               // the CA device
  std::atomic<kernel::DeviceObject*> filter{nullptr};  // ours, over it (null once removed)
  std::atomic<bool> removed{false};

  // Event routing (lock held): CQ and QP numbers to the objects, and the open CAs.
  kernel::KSpinLock lock;
  std::map<uint32_t, CqObj*> cqs;
  std::map<uint32_t, QpObj*> qps;
  std::map<uint32_t, SrqObj*> srqs;
  std::set<CaObj*> opens;
  // The AL's view of each port (index port - 1): ACTIVE or not. A PORT_ACTIVE/PORT_DOWN
  // that does not change it (news the CA queued before the AL took it in) is dropped.
  std::vector<bool> port_active;

  void InitPortView();  // PASSIVE, before StartEvents

  // The AL's QP0 and QP1 of every port (index (port - 1) * 2 + qpn), from the arrival on;
  // the CQ number of each routes its completion events (special_qp.h).
  std::vector<std::unique_ptr<SpecialQp>> special_qps;
  std::atomic<uint32_t> next_agent_id{1};  // MAD agents' TID high halves
  // The CA's I/O unit: controllers clients registered (ioc_handlers.cc), reported by the
  // device management agent.
  ioc::IoUnit io_unit;
  // The QPs' setup chains (CI IRPs, special_qp.cc) are started; `done` runs after the last
  // one's last completion (maybe at DISPATCH). A QP whose chain failed stays stopped.
  void StartSpecialQps(std::function<void()> done);  // PASSIVE, before StartEvents
  std::vector<kernel::Status> special_qp_status;     // of each setup chain (index as above)
  void StopSpecialQps();                             // PASSIVE, at removal (MAD QPs' too)
  // Clients' MAD QPs by CQ number (lock; mad_qp.cc): their completions go to them.
  std::map<uint32_t, std::shared_ptr<SpecialQp>> mad_qps;
  void AddMadQp(const std::shared_ptr<SpecialQp>& qp);
  std::shared_ptr<SpecialQp> MadQpOfCq(uint32_t cq);

  // The wait-for-events IRP kept pending on the CA device, re-sent from a DPC.
  kernel::Irp* event_irp = nullptr;
  ci::CaEventBatch batch{};
  kernel::Kdpc repost_dpc{};
  kernel::KEvent event_irp_home{kernel::EventType::kNotification, true};

  void StartEvents();  // PASSIVE

  // ---- The AL's own commands to the HCA as CI IRPs (issue 17; port_cache.cc, ci_call.h) --
  // The port attribute cache, as IBAL keeps one: the CA's and its ports' attributes and
  // their P_Key and GID tables, filled by CiQueryCa / CiQueryPkeyTable / CiQueryGidTable
  // IRPs when the CA arrives and on every port event (PORT_ACTIVE, PORT_DOWN, LID, P_Key,
  // GID, SM changes, client reregister), read under `lock` by the AL's own consumers (SA,
  // CM, IOC, MAD redirect, PnP records). Staleness rule: a consumer may read attributes
  // one event old (while the refresh of an event is in flight); the event processing
  // refreshes them BEFORE it announces that event (asynchronous event, PnP record, SA and
  // IOC reactions), so a client that hears PORT_ACTIVE reads the new LID.
  struct CachedPort {
    abi::PortAttributes attributes{};
    std::vector<uint16_t> pkeys;
    std::vector<abi::Gid> gids;
  };
  abi::CaAttributes cached_ca{};         // lock
  std::vector<CachedPort> cached_ports;  // lock; index port - 1; empty until the first refresh
  // Copies from the cache (DISPATCH or below). False when the CA was removed (the CI would
  // answer CA_REMOVED), the port does not exist, or nothing is known yet.
  bool CachedPortAttributes(uint8_t port, abi::PortAttributes* out);
  bool CachedAllPorts(std::vector<abi::PortAttributes>* out);
  bool CachedPkeyTable(uint8_t port, std::vector<uint16_t>* out);
  // Sends the query IRPs (the CA's attributes, and the P_Key and GID tables of `port`, 0:
  // of every port), stores the answers, then runs `done` (inline when the HCA completed
  // at once, else in the last IRP's completion: maybe at DISPATCH).
  void RefreshAttributes(uint8_t port, std::function<void()> done);
  // The event IRP's batch, processed in order; an event that needs the cache refreshed
  // waits for it (in completion routines), then the IRP is re-sent (or comes home).
  void ProcessBatch();
  // ---- end issue 17 block ----
  void Dispatch(const ci::CaEvent& event);
};

// What a file's objects share with it (counts and the objects that hold pending IRPs),
// kept alive by both.
struct FileState {
  Counters counts;
  // Event IRPs taken off a queue whose completion routines have not returned yet (on a
  // DPC, say): IbReleaseAl waits for zero so that nothing of the client runs after it.
  std::atomic<uint32_t> completing{0};

  // Releases of the file's objects whose CI IRPs are in flight (objects.h, ReleaseTicket):
  // the file's cleanup waits for them before it destroys their parents.
  void BeginRelease();
  void EndRelease();  // runs the idle waiter when the last one ends (maybe at DISPATCH)
  // Runs `idle` once no release is in flight: at once, or from the EndRelease of the last.
  void WhenIdle(std::function<void()> idle);

 private:
  // The count is an atomic so that a release's begin and end take no lock (two lock round
  // trips per destroy on issue 17's control path); the lock is taken only once a waiter
  // was set (idle_waiting_), for the hand-over of `idle_` between WhenIdle and the
  // EndRelease that brings the count to zero.
  kernel::KSpinLock release_lock_;
  std::atomic<uint32_t> releasing_{0};
  std::atomic<bool> idle_waiting_{false};
  std::function<void()> idle_;
};

// Extension of the AL's devices: the AL device or a filter over a CA.
struct AlDeviceExtension {
  bool is_filter;
  AccessLayer* al;
  kernel::DeviceObject* lower;  // filters: the CA device below
};

class Instance {
 public:
  Instance(AccessLayer* al, kernel::FileObject* file, std::shared_ptr<AlCa> bound_ca);
  ~Instance();

  AccessLayer* const al;
  kernel::FileObject* const file;
  kernel::IbAl* ib_al = nullptr;  // a kernel client's instance
  const int32_t pid;              // the user process (0: kernel)
  // What the process stated in GetFileAl (qemu's guest base under qemu-i386): regions it
  // registers from then on are reached at their addresses + this.
  std::atomic<uint64_t> dma_address_offset{0};
  const std::shared_ptr<AlCa> bound_ca;  // CA files: the CA of the filter device
  std::shared_ptr<FileState> state = std::make_shared<FileState>();
  kernel::ObjectHandleTable table;
  uint64_t al_handle = 0;  // the implicit Al object

  // Objects of this file that hold pending IRPs (CancelPending, cleanup).
  kernel::KSpinLock waitables_lock;
  std::set<kernel::KernelObject*> waitables;

  kernel::Status CreateImplicitAl();
  std::size_t CancelPendingIrps(uint32_t function, uint64_t object_id);
  // IRP_MJ_CLEANUP: pending IRPs cancelled, every object destroyed children first (each
  // parent once its children's CI releases completed); `irp` completes after the last
  // release. Returns PENDING (the cleanup completes `irp`), or the final status (the
  // caller completes it).
  kernel::Status StartCleanup(kernel::Irp* irp);
  // The same, waiting (PASSIVE): a file closed without its cleanup IRP (~Instance).
  void Cleanup();
};

class AccessLayer {
 public:
  // Out of line (al_driver.cc), where the agents' registrations are complete types.
  explicit AccessLayer(kernel::Node* n);
  ~AccessLayer();

  kernel::Node* const node;
  kernel::DriverObject* driver = nullptr;
  kernel::DeviceObject* device = nullptr;
  kernel::PnpRegistration* ci_registration = nullptr;
  Counters node_counts;
  std::atomic<uint32_t> pending{0};
  std::atomic<uint32_t> open_files{0};

  kernel::KSpinLock lock;  // cas, pnp_regs
  // Serializes the PnP announcements of a CA's arrival and removal with a new
  // registration's snapshot of the present state, so a registration racing an arrival
  // sees the CA once (in the snapshot or in the announcement). PASSIVE.
  kernel::FastMutex pnp_mutex;
  std::vector<std::shared_ptr<AlCa>> cas;
  std::set<PnpRegObj*> pnp_regs;
  // The AL's own QP1 agents (gsi_agent.h), started on each arriving CA (pnp_mutex).
  std::set<GsiRegistration*> gsi_registrations;
  // The SA client (sa/sa_client.h): its QP1 agents, path cache and what it re-registers.
  std::shared_ptr<sa::SaClient> sa_client;
  // The device management agent (ioc/devmgt_agent.h), from load to unload.
  std::unique_ptr<GsiRegistration> devmgt_agent;
  // I/O unit and controller discovery for IOU/IOC PnP registrations (ioc/ioc_pnp.h).
  std::unique_ptr<ioc::IocPnp> ioc_pnp;
  cm::ConnectionManager* cm = nullptr;  // from load to unload (cm/cm.h)

  std::shared_ptr<AlCa> FindCa(uint64_t guid);  // host order; null when unknown or removed
  std::vector<std::shared_ptr<AlCa>> Cas();

  // PnP (pnp.cc)
  void OnCaArrival(kernel::DeviceObject* device);  // PASSIVE
  void OnCaRemoval(AlCa* ca);                      // PASSIVE, the filter's remove IRP
  void BroadcastCaEvent(AlCa& ca, abi::PnpEvent event);
};

Instance* InstanceOf(const kernel::CallContext& ctx);
kernel::CallContext ContextFor(Instance* instance, kernel::Irp* irp);

}  // namespace softib::al

namespace softib::kernel {

// A kernel client's open of the AL.
class IbAl {
 public:
  al::AccessLayer* al = nullptr;
  DeviceObject* client = nullptr;  // referenced until IbReleaseAl
  FileObject* file = nullptr;      // kernel-mode open of the AL device
  al::Instance* instance = nullptr;
};

}  // namespace softib::kernel
