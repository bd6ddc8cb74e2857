// One software CA as the driver owns it: the device core behind a spin lock, its pending
// event IRPs and queued news, and the timer that runs the RC timers while RC work waits.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "hca/device/hca.h"
#include "hca/driver/src/ca_rings.h"
#include "hca/driver/src/ring_service.h"
#include "kernel/hca/ci_dispatch.h"
#include "softib/ci/ci.h"
#include "softib/kernel/dpc.h"
#include "softib/kernel/io.h"
#include "softib/kernel/spin_lock.h"
#include "softib/kernel/timer.h"

namespace softib::hca {

class PortLink;

// Whose memory a region is, and how the addresses it is registered at reach that memory:
// what the CI IRP handlers learn from the IRP (a user-mode IRP's file names the process).
struct MemoryOwner {
  int32_t pid = 0;  // the user process; 0: kernel memory (this process's, by memcpy)
  // Added to a registered address to reach the process's own (process_vm_readv/writev): 0
  // natively, qemu's guest base for a 32-bit process under qemu-i386 (GetFileAl).
  uint64_t address_offset = 0;
};

// A SoftCa is both the C++ CI (ci::CaInterface: the speed path and identity) and the
// handler set of the CA device's CI IRPs (ci_handlers.cc), which alone reach its control
// verbs.
class SoftCa final : public ci::CaInterface, public kernel::CiVerbHandlers {
 public:
  // `rings`: the driver's ring service (null: Map* answer INSUFFICIENT_RESOURCES).
  SoftCa(kernel::Node* node, const HcaConfig& config, uint16_t first_lid,
         RingService* rings = nullptr);
  SoftCa(const SoftCa&) = delete;
  SoftCa& operator=(const SoftCa&) = delete;

  void Reference() override { references_.fetch_add(1, std::memory_order_relaxed); }
  void Dereference() override;
  uint64_t node_guid() const override { return config_.node_guid; }
  uint8_t num_ports() const override { return config_.num_ports; }
  bool removed() const override { return removed_.load(std::memory_order_acquire); }

  // --- the speed path of ci::CaInterface ----------------------------------------------
  Status PollCq(uint32_t cq, std::span<abi::WorkCompletion> wcs, uint32_t* count) override;
  Status PeekCq(uint32_t cq, uint32_t* count) override;
  Status RearmCq(uint32_t cq, abi::CqNotify notify) override;
  Status PostSend(uint32_t qpn, std::span<const abi::SendWorkRequest> wrs,
                  uint32_t* num_posted) override;
  Status PostRecv(uint32_t qpn, std::span<const abi::RecvWorkRequest> wrs,
                  uint32_t* num_posted) override;
  Status PostSrqRecv(uint32_t srq, std::span<const abi::RecvWorkRequest> wrs,
                     uint32_t* num_posted) override;
  Status BindMw(uint32_t mw, uint32_t qpn, uint32_t mr_key, const abi::MwBindParams& bind,
                uint32_t* rkey) override;
  // Speed path (ca_rings.cc).
  Status MapCqRing(uint32_t cq, abi::RingMapping* ring, uint32_t* shm_id, int* fd) override;
  Status MapQpRings(uint32_t qpn, abi::RingMapping* send_ring, abi::RingMapping* recv_ring,
                    uint32_t* shm_id, int* fd) override;
  Status MapSrqRing(uint32_t srq, abi::RingMapping* ring, uint32_t* shm_id, int* fd) override;

  // --- the CI as IRPs (idl/ci.idl; ci_handlers.cc) -------------------------------------------
  // Every completion goes through Complete: in pend mode (HcaConfig::pend_ci) each IRP is
  // marked pending and completed later from the CA's completion DPC.
  Status Complete(kernel::Irp* irp, Status status, uint64_t information) override;
  Status CiQueryCa(const kernel::CallContext& ctx, abi::CiQueryCaOut& out,
                   std::span<abi::PortAttributes> ports, kernel::Irp* irp) override;
  Status CiQueryGidTable(const kernel::CallContext& ctx, const abi::CiQueryGidTableIn& in,
                         abi::CiQueryGidTableOut& out, std::span<abi::Gid> gids,
                         kernel::Irp* irp) override;
  Status CiQueryPkeyTable(const kernel::CallContext& ctx, const abi::CiQueryPkeyTableIn& in,
                          abi::CiQueryPkeyTableOut& out, std::span<uint16_t> pkeys,
                          kernel::Irp* irp) override;
  Status CiModifyCa(const kernel::CallContext& ctx, const abi::CiModifyCaIn& in,
                    kernel::Irp* irp) override;
  Status CiLocalMad(const kernel::CallContext& ctx, const abi::CiLocalMadIn& in,
                    abi::CiLocalMadOut& out, kernel::Irp* irp) override;
  Status CiAllocPd(const kernel::CallContext& ctx, abi::CiAllocPdOut& out,
                   kernel::Irp* irp) override;
  Status CiFreePd(const kernel::CallContext& ctx, const abi::CiFreePdIn& in,
                  kernel::Irp* irp) override;
  Status CiCreateAh(const kernel::CallContext& ctx, const abi::CiCreateAhIn& in,
                    abi::CiCreateAhOut& out, kernel::Irp* irp) override;
  Status CiDestroyAh(const kernel::CallContext& ctx, const abi::CiDestroyAhIn& in,
                     kernel::Irp* irp) override;
  Status CiBindAhHandle(const kernel::CallContext& ctx, const abi::CiBindAhHandleIn& in,
                        kernel::Irp* irp) override;
  Status CiRegisterMr(const kernel::CallContext& ctx, const abi::CiRegisterMrIn& in,
                      abi::CiRegisterMrOut& out, kernel::Irp* irp) override;
  Status CiRegisterPhysMr(const kernel::CallContext& ctx, const abi::CiRegisterPhysMrIn& in,
                          std::span<const abi::PhysRange> ranges, abi::CiRegisterPhysMrOut& out,
                          kernel::Irp* irp) override;
  Status CiDeregisterMr(const kernel::CallContext& ctx, const abi::CiDeregisterMrIn& in,
                        kernel::Irp* irp) override;
  Status CiReregisterMr(const kernel::CallContext& ctx, const abi::CiReregisterMrIn& in,
                        abi::CiReregisterMrOut& out, kernel::Irp* irp) override;
  Status CiCreateCq(const kernel::CallContext& ctx, const abi::CiCreateCqIn& in,
                    abi::CiCreateCqOut& out, kernel::Irp* irp) override;
  Status CiResizeCq(const kernel::CallContext& ctx, const abi::CiResizeCqIn& in,
                    abi::CiResizeCqOut& out, kernel::Irp* irp) override;
  Status CiQueryCq(const kernel::CallContext& ctx, const abi::CiQueryCqIn& in,
                   abi::CiQueryCqOut& out, kernel::Irp* irp) override;
  Status CiDestroyCq(const kernel::CallContext& ctx, const abi::CiDestroyCqIn& in,
                     kernel::Irp* irp) override;
  Status CiCreateQp(const kernel::CallContext& ctx, const abi::CiCreateQpIn& in,
                    abi::CiCreateQpOut& out, kernel::Irp* irp) override;
  Status CiCreateSpecialQp(const kernel::CallContext& ctx, const abi::CiCreateSpecialQpIn& in,
                           abi::CiCreateSpecialQpOut& out, kernel::Irp* irp) override;
  Status CiModifyQp(const kernel::CallContext& ctx, const abi::CiModifyQpIn& in,
                    kernel::Irp* irp) override;
  Status CiQueryQp(const kernel::CallContext& ctx, const abi::CiQueryQpIn& in,
                   abi::CiQueryQpOut& out, kernel::Irp* irp) override;
  Status CiDestroyQp(const kernel::CallContext& ctx, const abi::CiDestroyQpIn& in,
                     kernel::Irp* irp) override;
  Status CiCreateSrq(const kernel::CallContext& ctx, const abi::CiCreateSrqIn& in,
                     abi::CiCreateSrqOut& out, kernel::Irp* irp) override;
  Status CiModifySrq(const kernel::CallContext& ctx, const abi::CiModifySrqIn& in,
                     kernel::Irp* irp) override;
  Status CiQuerySrq(const kernel::CallContext& ctx, const abi::CiQuerySrqIn& in,
                    abi::CiQuerySrqOut& out, kernel::Irp* irp) override;
  Status CiDestroySrq(const kernel::CallContext& ctx, const abi::CiDestroySrqIn& in,
                      kernel::Irp* irp) override;
  Status CiAllocMw(const kernel::CallContext& ctx, const abi::CiAllocMwIn& in,
                   abi::CiAllocMwOut& out, kernel::Irp* irp) override;
  Status CiQueryMw(const kernel::CallContext& ctx, const abi::CiQueryMwIn& in,
                   abi::CiQueryMwOut& out, kernel::Irp* irp) override;
  Status CiDestroyMw(const kernel::CallContext& ctx, const abi::CiDestroyMwIn& in,
                     kernel::Irp* irp) override;
  Status CiAttachMcast(const kernel::CallContext& ctx, const abi::CiAttachMcastIn& in,
                       kernel::Irp* irp) override;
  Status CiDetachMcast(const kernel::CallContext& ctx, const abi::CiDetachMcastIn& in,
                       kernel::Irp* irp) override;
  Status CiMapCqRing(const kernel::CallContext& ctx, const abi::CiMapCqRingIn& in,
                     abi::CiMapCqRingOut& out, kernel::Irp* irp) override;
  Status CiMapQpRings(const kernel::CallContext& ctx, const abi::CiMapQpRingsIn& in,
                      abi::CiMapQpRingsOut& out, kernel::Irp* irp) override;
  Status CiMapSrqRing(const kernel::CallContext& ctx, const abi::CiMapSrqRingIn& in,
                      abi::CiMapSrqRingOut& out, kernel::Irp* irp) override;

  // --- driver side -----------------------------------------------------------------------
  // The port's own agents answering a MAD (HcaLocalMad, and CiLocalMad's handler): SUCCESS
  // with the GetResp in `response`; INVALID_PERMISSION when the agent consumed it without
  // an answer (an M_Key violation, a response or trap MAD); INVALID_SETTING when no agent
  // takes it; INVALID_PORT, CA_REMOVED.
  Status LocalMad(uint8_t port, std::span<const uint8_t, 256> request,
                  std::span<uint8_t, 256> response);
  // Packets for this CA's ports (delivery DPC or ring service), received under one hold of
  // the lock: the rings' completions move once per batch, not once per packet.
  struct InboundPacket {
    uint8_t port;
    std::span<const uint8_t> bytes;
    bool sealed = true;  // false: CRCs not computed (an in-node cable's CRC offload)
  };
  void DeliverPackets(std::span<const InboundPacket> packets);
  void DeliverPacket(uint8_t port, std::span<const uint8_t> packet) {
    const InboundPacket one{port, packet, true};
    DeliverPackets(std::span(&one, 1));
  }
  // kIoctlCiWaitEvents: completes `irp` now when news is queued, else pends it.
  kernel::Status WaitEvents(kernel::Irp* irp);
  // Surprise removal: verbs answer CA_REMOVED, waiting IRPs complete with CA_REMOVED, the
  // timer stops. PASSIVE (flushes the node's DPCs).
  void MarkRemoved();
  void SetPortLink(uint8_t port, Link* link);
  // The ring service's pass over this CA (ca_rings.cc): consumes what its rings hold and
  // the QPs can take; appends the rings to watch while idle. True if anything was consumed.
  bool ServeRings(std::vector<RingWatch>* watches);

  kernel::DeviceObject* device = nullptr;
  const HcaConfig& config() const { return config_; }
  kernel::Node* node() const { return node_; }

 protected:
  ~SoftCa() override;

 private:
  // --- the control verbs: the CA's own, reached only by its CI IRPs' handlers
  // (ci_handlers.cc), which learn from the IRP whose memory a registration names --------
  // `ports` gets min(ports.size(), num_ports) entries.
  Status QueryCa(abi::CaAttributes* attributes, std::span<abi::PortAttributes> ports);
  Status QueryGidTable(uint8_t port, uint32_t start, std::span<abi::Gid> out, uint32_t* count);
  Status QueryPkeyTable(uint8_t port, uint32_t start, std::span<uint16_t> out, uint32_t* count);
  Status ModifyCa(uint8_t port, abi::ModifyCaFlags flags, abi::PortCapabilities cap_set,
                  abi::PortCapabilities cap_clear, uint8_t init_type, uint64_t system_image_guid);
  Status AllocPd(uint32_t* pd);
  Status FreePd(uint32_t pd);
  Status CreateAh(uint32_t pd, const abi::AddressVector& av, uint32_t* ah);
  Status DestroyAh(uint32_t ah);
  Status RegisterMr(uint32_t pd, uint64_t vaddr, uint64_t length, abi::AccessFlags access,
                    MemoryOwner owner, uint32_t* key);
  Status DeregisterMr(uint32_t key);
  // A physical registration (CiRegisterPhysMr, IBAL ib_reg_phys): the kernel buffers
  // `ranges` (pointers of this process) laid end to end are the region at `iova`; its pages
  // may be discontiguous. INVALID_PARAMETER: no range, an empty or wrapping one, a region
  // that wraps.
  Status RegisterPhysMr(uint32_t pd, uint64_t iova, std::span<const abi::PhysRange> ranges,
                        abi::AccessFlags access, uint32_t* key);
  // MR reregistration
  Status ReregisterMr(uint32_t key, abi::MrReregFlags what, uint32_t pd, uint64_t vaddr,
                      uint64_t length, abi::AccessFlags access, MemoryOwner owner,
                      uint32_t* new_key);
  Status CreateCq(uint32_t size, uint32_t* cq, uint32_t* actual_size);
  Status ResizeCq(uint32_t cq, uint32_t* size);
  Status QueryCq(uint32_t cq, uint32_t* size);
  Status DestroyCq(uint32_t cq);
  Status CreateQp(uint32_t pd, const abi::QpCreateParams& params, uint32_t send_cq,
                  uint32_t recv_cq, uint32_t srq, uint32_t* qpn, abi::QpCaps* caps);
  Status CreateSpecialQp(uint32_t pd, uint8_t port, const abi::QpCreateParams& params,
                         uint32_t send_cq, uint32_t recv_cq, uint32_t* qp, uint32_t* qp_num,
                         abi::QpCaps* caps);
  Status ModifyQp(uint32_t qpn, const abi::QpModifyAttributes& attributes);
  Status QueryQp(uint32_t qpn, abi::QpAttributes* attributes);
  Status DestroyQp(uint32_t qpn);
  Status CreateSrq(uint32_t pd, const abi::SrqAttributes& attributes, uint32_t* srq,
                   abi::SrqAttributes* granted);
  Status ModifySrq(uint32_t srq, abi::SrqAttrMask mask, const abi::SrqAttributes& attributes);
  Status QuerySrq(uint32_t srq, abi::SrqAttributes* attributes);
  Status DestroySrq(uint32_t srq);
  Status AllocMw(uint32_t pd, abi::MwType type, uint32_t* mw, uint32_t* rkey);
  Status QueryMw(uint32_t mw, abi::MwType* type, uint32_t* rkey);
  Status DestroyMw(uint32_t mw);
  Status AttachMcast(uint32_t qpn, const abi::Gid& mgid, uint16_t mlid);
  Status DetachMcast(uint32_t qpn, const abi::Gid& mgid, uint16_t mlid);
  // Tells the CA which AH a user process's AV handle names, in the AH's PD (the ring
  // consumer looks a UD entry's av.value up in the sending QP's PD). INVALID_AV_HANDLE (no
  // such AH), INVALID_PARAMETER (handle 0), CA_REMOVED.
  Status BindAhHandle(uint32_t ah, uint64_t handle);

  class Locked;  // the lock held and the CA present
  void OnAsync(const DeviceEvent& event);
  void OnCompletion(uint32_t cq);
  // ca_rings.cc, lock held. After every call into the device: stalled rings are served
  // again, and the ring CQs' completions move from the device into their rings.
  void AfterDeviceCallLocked();
  bool ServeQpLocked(uint32_t qpn, RingQp& ring);
  bool ServeSendLocked(QueuePair& qp, RingQp& ring);
  bool ServeRecvLocked(QueuePair& qp, RingQp& ring);
  // A datagram entry's av.value (the process's AV handle) to the AH number it names in
  // the QP's PD; INVALID_AV_HANDLE when it names none there.
  Status TranslateAvLocked(const QueuePair& qp, abi::SendWorkRequest* wr);
  bool ServeSrqLocked(uint32_t number, RingSrq& ring);
  void MoveCompletionsLocked(uint32_t number, RingCq& ring);
  // A work request the CA refused after taking it from a ring: LOCAL_QP_OP_ERR completion
  // on the QP's CQ, the QP to Error (the rest of its work is flushed).
  void RefuseLocked(QueuePair& qp, uint64_t wr_id, abi::WcOpcode opcode, bool send,
                    abi::Status why);
  void QpToErrorLocked(uint32_t qpn);
  // A packet for a QP whose receive ring may hold WQEs the device does not have yet.
  void ServeReceiverLocked(uint8_t port, std::span<const uint8_t> packet);
  void ShutDownRingsLocked();
  Status NewRegion(const char* name, const rings::RegionLayout& layout,
                   std::shared_ptr<RingRegion>* region);
  Status DupFd(const RingRegion& region, uint32_t* shm_id, int* fd);
  // The DMA engine's way into `owner`'s memory (allocates: call before taking the lock).
  std::shared_ptr<DmaAccessor> AccessorOf(MemoryOwner owner) const;
  bool has_rings() const { return !ring_qps_.empty() || !ring_cqs_.empty() || !ring_srqs_.empty(); }
  // Completes waiting IRPs with queued news; never with the lock held.
  void FlushEvents();
  // A Tick at `due_ns` (steady clock), one period from now at the earliest (0: then); a tick
  // armed for sooner stays.
  void ArmTickLocked(uint64_t due_ns = 0);
  static void TickDpc(kernel::Kdpc* dpc, void* context, void* arg1, void* arg2);
  // ci_handlers.cc: completes `irp` (its IoStatus set) from the completion DPC, after every
  // DPC queued before it; holds a CA reference until then.
  Status CompleteLater(kernel::Irp* irp, Status status, uint64_t information);
  static void CompletionDpc(kernel::Kdpc* dpc, void* context, void* arg1, void* arg2);

  kernel::Node* const node_;
  HcaConfig config_;
  std::atomic<uint32_t> references_{1};
  std::atomic<bool> removed_{false};
  kernel::KSpinLock lock_;
  Hca hca_;  // lock_ held
  std::vector<ci::CaEvent> news_;
  kernel::CancelSafeQueue waiters_;
  std::set<uint32_t> rc_qps_;
  std::set<uint32_t> qps_;  // every QP (ring CQ overflow: the QPs completing into it)
  RingService* const rings_;
  std::map<uint32_t, RingQp> ring_qps_;  // lock_ held
  std::map<uint32_t, RingCq> ring_cqs_;
  std::map<uint32_t, RingSrq> ring_srqs_;
  uint32_t next_region_id_ = 1;
  bool tick_armed_ = false;
  bool tick_late_ = false;    // armed for later than one period (a trap's next repeat)
  uint64_t tick_due_ns_ = 0;  // when the armed tick runs
  kernel::Ktimer timer_;
  kernel::Kdpc tick_dpc_;
  std::shared_ptr<DmaAccessor> kernel_dma_;
  // CI IRPs completed later (CompleteLater), in order; later_lock_ only (never lock_).
  kernel::KSpinLock later_lock_;
  std::vector<kernel::Irp*> later_;
  kernel::Kdpc completion_dpc_;
};

// Every CI verb's scope: the lock held, and on the way out (the device's work done) the
// ring CQs filled and stalled rings served again, then the news handed on without the lock.
class SoftCa::Locked {
 public:
  // Every entry but packet delivery is a control operation, before which the device
  // places what its responder staged (hca/device/write_combiner.h).
  enum class Path { kControl, kPacket };
  explicit Locked(SoftCa* ca, Path path = Path::kControl)
      : ca_(ca), previous_(ca->lock_.Acquire()) {
    if (path == Path::kControl && !gone()) ca_->hca_.FlushStagedWrites();
  }
  ~Locked() {
    if (ca_->has_rings() && !ca_->removed()) ca_->AfterDeviceCallLocked();
    // A trap is repeated until repressed: a tick when it is next due.
    if (const uint64_t due = ca_->hca_.next_trap_ns(); due != UINT64_MAX) ca_->ArmTickLocked(due);
    // News is only ever queued under the lock, by a scope like this one (whose own release
    // hands it on): with none queued now there is nothing to hand on, and FlushEvents would
    // take the lock again only to find that out — a spin-lock round trip per CI verb, ~80
    // instructions of every control verb's path.
    const bool news = !ca_->news_.empty();
    ca_->lock_.Release(previous_);
    if (news) ca_->FlushEvents();
  }
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;
  bool gone() const { return ca_->removed(); }

 private:
  SoftCa* ca_;
  kernel::Irql previous_;
};

}  // namespace softib::hca
