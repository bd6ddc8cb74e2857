// The AL's objects (idl/objects.idl): each is a KernelObject with its parent link, counted
// per file and per node, and releases what it holds in the HCA in OnDestroy.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "runtime/al/src/al_internal.h"
#include "softib/kernel/irp_task.h"

namespace softib::al {

// One object's place in the shm_mappings counts (ring_handlers.cc): counted once, at its
// first ring mapping, until the object goes (the CA unmaps its side when the object is
// destroyed).
class RingMappingCount {
 public:
  RingMappingCount() = default;
  RingMappingCount(const RingMappingCount&) = delete;
  RingMappingCount& operator=(const RingMappingCount&) = delete;
  ~RingMappingCount() {
    if (node_ != nullptr) {
      node_->shm_mappings.fetch_sub(1, std::memory_order_relaxed);
      file_->shm_mappings.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  // The first call counts; later ones do nothing.
  void Note(Counters* node, Counters* file) {
    bool expected = false;
    if (!noted_.compare_exchange_strong(expected, true)) return;
    node->shm_mappings.fetch_add(1, std::memory_order_relaxed);
    file->shm_mappings.fetch_add(1, std::memory_order_relaxed);
    node_ = node;
    file_ = file;
  }

 private:
  std::atomic<bool> noted_{false};
  Counters* node_ = nullptr;
  Counters* file_ = nullptr;
};

class AlObject : public kernel::KernelObject {
 public:
  AlObject(abi::ObjectType type, Instance* owner);
  ~AlObject() override;

  // In the owner's table, once published (event routing reads it from other threads).
  std::atomic<uint64_t> handle{0};

  // Its rings were mapped (MapCqRing/MapQpRings/MapSrqRing): counted in shm_mappings.
  void NoteRingMapping() { ring_mapping_.Note(&al_->node_counts, &file_->counts); }

  // Runs `done` once the release a destroy started (ReleaseTicket) is done: at once when it
  // is, else from the release's CI completion (maybe at DISPATCH). Only for objects whose
  // OnDestroy takes a ticket, after a Destroy that succeeded.
  void WhenReleased(std::function<void()> done);
  // Whether that release is done (no lock): a destroy whose release completed inline, the
  // common case, need not wait through WhenReleased (two std::functions and a lock round
  // trip per destroy on issue 17's control path).
  bool Released() const { return released_.load(std::memory_order_acquire); }

 protected:
  AccessLayer* const al_;
  const std::shared_ptr<FileState> file_;

 private:
  friend class ReleaseTicket;
  RingMappingCount ring_mapping_;  // after file_: uncounted before the file state can go
  kernel::KSpinLock release_lock_;
  // The release's end and WhenReleased pair up without the lock when nobody waits: each
  // writes its flag, then reads the other's (sequentially consistent), so at least one sees
  // the other and hands the waiters over under the lock.
  std::atomic<bool> released_{false};
  std::atomic<bool> release_waiting_{false};
  std::vector<std::function<void()>> release_waiters_;
};

// The second phase of a destroy (issue 17). An object that gives back what it holds in the
// HCA takes a ticket in OnDestroy and moves it into the coroutine that sends the CI release
// IRP; the release is done when the ticket goes (after the IRP completed). Until then the
// ticket keeps
//   - a child count on the object's parent (KernelObject::Destroy drops the object's own
//     as OnDestroy returns), so the parent stays busy and its own release cannot overtake
//     the child's at the HCA (which would answer RESOURCE_BUSY);
//   - the uses the object counted on others (a QP's on its CQs and SRQ: TakeUse);
//   - a reference on the object, so it is freed after its release (when the destroy found it
//     alive: an object freed without Destroy has no waiters and is gone after OnDestroy);
//   - a count in its file's releases (FileState), which the file's cleanup waits for.
// When it goes: the uses and the parent's count are dropped, then the object's reference,
// then the destroy's waiters run (WhenReleased: the destroy verb's IRP completes), then the
// file's count. Move-only; any IRQL <= DISPATCH.
class ReleaseTicket {
 public:
  explicit ReleaseTicket(AlObject* object);
  ReleaseTicket(ReleaseTicket&& other) noexcept;
  ReleaseTicket(const ReleaseTicket&) = delete;
  ReleaseTicket& operator=(const ReleaseTicket&) = delete;
  ReleaseTicket& operator=(ReleaseTicket&&) = delete;
  ~ReleaseTicket();

  // A child count the object holds on `used` (a dependent that is not its child) moves to
  // the ticket, which drops it (RemoveChild) when the release is done.
  void TakeUse(kernel::KernelObject* used);

 private:
  AlObject* object_ = nullptr;                   // referenced, or null
  kernel::KernelObject* parent_ = nullptr;       // child count held and referenced, or null
  std::array<kernel::KernelObject*, 3> uses_{};  // referenced, their counts held
  std::size_t num_uses_ = 0;
  std::shared_ptr<FileState> file_;  // null once moved from
};

// Publishes a new object (which holds the creator's reference) under a handle of
// `instance`; on failure the object is destroyed. Either way the creator's reference goes.
kernel::Status Publish(Instance* instance, AlObject* object, uint64_t* handle);

// An object holding pending IRPs: listed in its file's waitables while it lives.
class Waitable : public AlObject {
 public:
  Waitable(abi::ObjectType type, Instance* owner, uint32_t function);
  PendingIrps waiters;
  const uint32_t function;  // IOCTL function code of the wait verb (CancelPending)

 protected:
  void StopWaiting();  // OnDestroy: unlisted, waiters CANCELED
  Instance* const owner_;
};

// Event records for a wait verb (GetAsyncEvent, GetPnpEvent): queued until a waiting IRP
// takes them; bounded (the oldest news is dropped). The pairing happens under the lock, so
// a record and a waiter never both stay queued. `Out` is the verb's output, {record}.
template <typename Out>
class EventRecordQueue {
 public:
  using Record = decltype(Out::record);
  static constexpr std::size_t kMaxQueued = 4096;

  void Post(PendingIrps& waiters, const Record& record) {
    {
      kernel::SpinLockGuard guard(lock_);
      if (queue_.size() == kMaxQueued) queue_.pop_front();
      queue_.push_back(record);
    }
    Pump(waiters);
  }

  // Answers at once with a queued record, else pends `irp` (a call without an IRP cannot
  // wait: CANCELED).
  kernel::Status Wait(PendingIrps& waiters, kernel::Irp* irp, Out& out) {
    {
      kernel::SpinLockGuard guard(lock_);
      if (!queue_.empty()) {
        out.record = queue_.front();
        queue_.pop_front();
        return kernel::Status::SUCCESS;
      }
    }
    if (irp == nullptr) return kernel::Status::CANCELED;
    irp->DriverContext[1] = &out;  // where the waiting call wants its output
    const kernel::Status status = waiters.Insert(irp);
    Pump(waiters);
    return status;
  }

 private:
  void Pump(PendingIrps& waiters) {
    for (;;) {
      kernel::Irp* irp;
      Record record;
      {
        kernel::SpinLockGuard guard(lock_);
        if (queue_.empty()) return;
        irp = waiters.Remove();
        if (irp == nullptr) return;
        record = queue_.front();
        queue_.pop_front();
      }
      auto* out = static_cast<Out*>(irp->DriverContext[1]);
      *out = Out{record};
      waiters.Complete(irp, kernel::Status::SUCCESS, sizeof(*out));
    }
  }

  kernel::KSpinLock lock_;
  std::deque<Record> queue_;
};

class AlObj final : public Waitable {
 public:
  explicit AlObj(Instance* owner);
  // Queues an async event record (completes a waiter if any).
  void Post(const abi::AsyncEventRecord& record);
  // GetAsyncEvent: answers at once with a queued record, else pends.
  kernel::Status Wait(kernel::Irp* irp, abi::GetAsyncEventOut& out);

 private:
  void OnDestroy() override;
  EventRecordQueue<abi::GetAsyncEventOut> events_;
};

class CaObj final : public AlObject {
 public:
  CaObj(Instance* owner, std::shared_ptr<AlCa> ca, uint64_t context);
  const std::shared_ptr<AlCa> ca;
  const uint64_t context;
  AlObj* al_obj = nullptr;  // parent
  // Ports (bit n: port n) where this open set CapabilityMask.IsSM with ModifyCa: an SM above
  // the AL. Closing clears it there, as closing Linux's issm device does, so an SM that dies
  // stops being advertised.
  std::atomic<uint32_t> is_sm_ports{0};

 private:
  void OnDestroy() override;
  static kernel::IrpTask ClearIsSm(std::shared_ptr<AlCa> ca, uint32_t ports, ReleaseTicket ticket);
};

class PdObj final : public AlObject {
 public:
  PdObj(Instance* owner, CaObj* ca_obj, uint32_t pd);
  CaObj* const ca_obj;  // parent
  const uint32_t pd;

 private:
  void OnDestroy() override;
};

class AvObj final : public AlObject {
 public:
  AvObj(Instance* owner, PdObj* pd_obj, uint32_t ah, const abi::AddressVector& av);
  PdObj* const pd_obj;
  uint32_t ah;  // the AL serializes ModifyAv through the object's lock
  abi::AddressVector av;
  kernel::KSpinLock lock;
  // ModifyAv one at a time (its CI IRPs cannot be awaited under `lock`): EnterModify runs
  // `go` at once when no modify is in progress, else when the ones before it are done;
  // ExitModify ends the turn. Any IRQL <= DISPATCH.
  void EnterModify(std::function<void()> go);
  void ExitModify();

 private:
  void OnDestroy() override;
  bool modifying_ = false;                          // lock
  std::deque<std::function<void()>> modify_queue_;  // lock
};

class CqObj final : public Waitable {
 public:
  CqObj(Instance* owner, CaObj* ca_obj, uint32_t number, uint64_t context);
  ~CqObj() override;
  CaObj* const ca_obj;
  const uint32_t number;
  const uint64_t context;
  // A completion notification: completes a waiting GetCompletionEvent or counts it.
  void Notify();
  // GetCompletionEvent: answers at once with counted notifications, else pends.
  kernel::Status Wait(kernel::Irp* irp, abi::GetCompletionEventOut& out);
  void Register();  // listed in the CA's routing table

 private:
  void OnDestroy() override;
  void Pump();
  kernel::KSpinLock lock_;
  uint32_t unclaimed_ = 0;
};

class SrqObj final : public AlObject {
 public:
  SrqObj(Instance* owner, PdObj* pd_obj, uint32_t number, uint64_t context);
  PdObj* const pd_obj;
  const uint32_t number;
  const uint64_t context;
  void Register();

 private:
  void OnDestroy() override;
};

class QpObj final : public AlObject {
 public:
  // The QP counts as a dependent of its CQs and SRQ (uses): the caller added it.
  QpObj(Instance* owner, PdObj* pd_obj, CqObj* send_cq, CqObj* recv_cq, SrqObj* srq, uint32_t qpn,
        uint32_t qp_num, abi::QpType type, uint64_t context, uint8_t port = 0);
  ~QpObj() override;
  // SMI_ALIAS/GSI_ALIAS: no device QP of its own; MAD services reach the AL's special QP
  // of `port` through it.
  bool alias() const { return type == abi::QpType::SMI_ALIAS || type == abi::QpType::GSI_ALIAS; }
  PdObj* const pd_obj;
  CqObj* const send_cq;  // referenced
  CqObj* const recv_cq;
  SrqObj* const srq;      // null, or referenced
  const uint32_t qpn;     // the device's handle of the QP
  const uint32_t qp_num;  // its number on the wire (0/1 for the special QPs)
  const abi::QpType type;
  const uint64_t context;
  const uint8_t port;  // special QPs and aliases (0 for others)
  // MAD: the AL's engine behind the QP (mad_qp.cc), which owns the device QP `qpn`.
  std::shared_ptr<SpecialQp> mad_qp;
  void Register();

 private:
  void OnDestroy() override;
};

// Whom a CI request is for (ci_call.h): a user process's verb carries UserMode and that
// process's file (the HCA reads its memory at the file's DmaAddressOffset); a kernel
// client's carries KernelMode and its kernel open of the AL.
struct CiRequestor {
  kernel::FileObject* file = nullptr;
  kernel::ProcessorMode mode = kernel::ProcessorMode::kKernelMode;
};

class MrObj final : public AlObject {
 public:
  MrObj(Instance* owner, PdObj* pd_obj, uint32_t key, const abi::MrRegion& region,
        CiRequestor memory);
  // The CA of every PD the region may live in (moves stay within a CA); alive as long as the
  // region has a parent PD.
  AlCa* const ca;
  // Whose memory, as registered: the requestor of its reregistrations and shares.
  const CiRequestor memory;
  kernel::KSpinLock lock;  // key, region and pd_obj change with ReregMem / ReregPhys
  uint32_t key;
  abi::MrRegion region;
  PdObj* pd_obj;  // the parent; MrReregFlags.PD moves the region to another PD
  // One reregistration at a time: a second concurrent one answers RESOURCE_BUSY.
  std::atomic<bool> reregistering{false};

 private:
  void OnDestroy() override;
};

class MwObj final : public AlObject {
 public:
  MwObj(Instance* owner, PdObj* pd_obj, uint32_t mw, abi::MwType type);
  PdObj* const pd_obj;
  const uint32_t mw;
  const abi::MwType type;

 private:
  void OnDestroy() override;
};

class McastObj final : public AlObject {
 public:
  McastObj(Instance* owner, QpObj* qp_obj, const abi::Gid& mgid, uint16_t mlid);
  QpObj* const qp_obj;
  const abi::Gid mgid;
  const uint16_t mlid;

 private:
  void OnDestroy() override;
};

class PnpRegObj final : public Waitable {
 public:
  PnpRegObj(Instance* owner, abi::PnpClass pnp_class, uint64_t context);
  const abi::PnpClass pnp_class;
  const uint64_t context;
  void Post(abi::PnpEventRecord record);
  kernel::Status Wait(kernel::Irp* irp, abi::GetPnpEventOut& out);
  void Register();  // listed in the AL's registrations

 private:
  void OnDestroy() override;
  EventRecordQueue<abi::GetPnpEventOut> events_;
};

}  // namespace softib::al
