// One software CA as the driver owns it: the device core behind a spin lock, its pending
// event IRPs and queued news, and the timer that runs the RC timers while RC work waits.
#pragma once

#include <atomic>
#include <memory>
#include <set>
#include <vector>

#include "hca/device/hca.h"
#include "softib/hca/ci.h"
#include "softib/kernel/dpc.h"
#include "softib/kernel/io.h"
#include "softib/kernel/spin_lock.h"
#include "softib/kernel/timer.h"

namespace softib::hca {

class PortLink;

class SoftCa final : public ci::CaInterface {
 public:
  SoftCa(kernel::Node* node, const HcaConfig& config, uint16_t first_lid);
  SoftCa(const SoftCa&) = delete;
  SoftCa& operator=(const SoftCa&) = delete;

  void Reference() override { references_.fetch_add(1, std::memory_order_relaxed); }
  void Dereference() override;
  uint64_t node_guid() const override { return config_.node_guid; }
  uint8_t num_ports() const override { return config_.num_ports; }
  bool removed() const override { return removed_.load(std::memory_order_acquire); }

  Status QueryCa(abi::CaAttributes* attributes, std::span<abi::PortAttributes> ports) override;
  Status QueryGidTable(uint8_t port, uint32_t start, std::span<abi::Gid> out,
                       uint32_t* count) override;
  Status QueryPkeyTable(uint8_t port, uint32_t start, std::span<uint16_t> out,
                        uint32_t* count) override;
  Status ModifyCa(uint8_t port, abi::ModifyCaFlags flags, abi::PortCapabilities cap_set,
                  abi::PortCapabilities cap_clear, uint8_t init_type,
                  uint64_t system_image_guid) override;
  Status AllocPd(uint32_t* pd) override;
  Status FreePd(uint32_t pd) override;
  Status CreateAh(uint32_t pd, const abi::AddressVector& av, uint32_t* ah) override;
  Status DestroyAh(uint32_t ah) override;
  Status RegisterMr(uint32_t pd, uint64_t vaddr, uint64_t length, abi::AccessFlags access,
                    int32_t pid, uint32_t* key) override;
  Status DeregisterMr(uint32_t key) override;
  // MR reregistration
  Status ReregisterMr(uint32_t key, abi::MrReregFlags what, uint32_t pd, uint64_t vaddr,
                      uint64_t length, abi::AccessFlags access, int32_t pid,
                      uint32_t* new_key) override;
  Status CreateCq(uint32_t size, uint32_t* cq, uint32_t* actual_size) override;
  Status ResizeCq(uint32_t cq, uint32_t* size) override;
  Status QueryCq(uint32_t cq, uint32_t* size) override;
  Status DestroyCq(uint32_t cq) override;
  Status PollCq(uint32_t cq, std::span<abi::WorkCompletion> wcs, uint32_t* count) override;
  Status PeekCq(uint32_t cq, uint32_t* count) override;
  Status RearmCq(uint32_t cq, abi::CqNotify notify) override;
  Status CreateQp(uint32_t pd, const abi::QpCreateParams& params, uint32_t send_cq,
                  uint32_t recv_cq, uint32_t srq, uint32_t* qpn, abi::QpCaps* caps) override;
  Status CreateSpecialQp(uint32_t pd, uint8_t port, const abi::QpCreateParams& params,
                         uint32_t send_cq, uint32_t recv_cq, uint32_t* qp, uint32_t* qp_num,
                         abi::QpCaps* caps) override;
  Status ModifyQp(uint32_t qpn, const abi::QpModifyAttributes& attributes) override;
  Status QueryQp(uint32_t qpn, abi::QpAttributes* attributes) override;
  Status DestroyQp(uint32_t qpn) override;
  Status PostSend(uint32_t qpn, std::span<const abi::SendWorkRequest> wrs,
                  uint32_t* num_posted) override;
  Status PostRecv(uint32_t qpn, std::span<const abi::RecvWorkRequest> wrs,
                  uint32_t* num_posted) override;
  Status CreateSrq(uint32_t pd, const abi::SrqAttributes& attributes, uint32_t* srq,
                   abi::SrqAttributes* granted) override;
  Status ModifySrq(uint32_t srq, abi::SrqAttrMask mask,
                   const abi::SrqAttributes& attributes) override;
  Status QuerySrq(uint32_t srq, abi::SrqAttributes* attributes) override;
  Status DestroySrq(uint32_t srq) override;
  Status PostSrqRecv(uint32_t srq, std::span<const abi::RecvWorkRequest> wrs,
                     uint32_t* num_posted) override;
  Status AllocMw(uint32_t pd, abi::MwType type, uint32_t* mw, uint32_t* rkey) override;
  Status QueryMw(uint32_t mw, abi::MwType* type, uint32_t* rkey) override;
  Status DestroyMw(uint32_t mw) override;
  Status BindMw(uint32_t mw, uint32_t qpn, uint32_t mr_key, const abi::MwBindParams& bind,
                uint32_t* rkey) override;
  Status AttachMcast(uint32_t qpn, const abi::Gid& mgid, uint16_t mlid) override;
  Status DetachMcast(uint32_t qpn, const abi::Gid& mgid, uint16_t mlid) override;

  // --- driver side -----------------------------------------------------------------------
  // A packet for `port` (delivery DPC).
  void DeliverPacket(uint8_t port, std::span<const uint8_t> packet);
  // kIoctlCiWaitEvents: completes `irp` now when news is queued, else pends it.
  kernel::Status WaitEvents(kernel::Irp* irp);
  // Surprise removal: verbs answer CA_REMOVED, waiting IRPs complete with CA_REMOVED, the
  // timer stops. PASSIVE (flushes the node's DPCs).
  void MarkRemoved();
  void SetPortLink(uint8_t port, PortLink* link);

  kernel::DeviceObject* device = nullptr;

 protected:
  ~SoftCa() override;

 private:
  class Locked;  // the lock held and the CA present
  void OnAsync(const DeviceEvent& event);
  void OnCompletion(uint32_t cq);
  // Completes waiting IRPs with queued news; never with the lock held.
  void FlushEvents();
  void ArmTickLocked();
  static void TickDpc(kernel::Kdpc* dpc, void* context, void* arg1, void* arg2);

  kernel::Node* const node_;
  HcaConfig config_;
  std::atomic<uint32_t> references_{1};
  std::atomic<bool> removed_{false};
  kernel::KSpinLock lock_;
  Hca hca_;  // lock_ held
  std::vector<ci::CaEvent> news_;
  kernel::CancelSafeQueue waiters_;
  std::set<uint32_t> rc_qps_;
  bool tick_armed_ = false;
  kernel::Ktimer timer_;
  kernel::Kdpc tick_dpc_;
  std::shared_ptr<DmaAccessor> kernel_dma_;
};

}  // namespace softib::hca
