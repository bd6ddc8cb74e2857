// Two CAs of one HCA driver cabled back to back, reached through their CI as the Access
// Layer reaches them, with an RC QP on each whose rings a "process" (this test, through
// the user-mode verbs provider) maps: the ring service's tests drive the speed path from
// both ends. The control verbs go as the AL sends them, as CI IRPs to each CA's device;
// memory is registered by user-mode IRPs on a file of this process (as a user process's
// registration reaches the driver), so the HCA moves it with process_vm_readv/writev
// exactly as for a user process.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "kernel/hca/ci_irp.h"
#include "softib/ci/ci.h"
#include "softib/hca/hca_driver.h"
#include "softib/kernel/device.h"
#include "softib/kernel/io.h"
#include "softib/kernel/node.h"
#include "softib/rings/shared_memory.h"
#include "softib/uvp/uvp.h"

namespace softib::hca::testing {

using kernel::Status;
constexpr auto kLimit = std::chrono::seconds(10);

// Collects a CA's upward news (kIoctlCiWaitEvents) on a thread of its own, as the AL does.
class EventCollector {
 public:
  void Start(kernel::DeviceObject* device) {
    thread_ = std::thread([this, device] {
      for (;;) {
        ci::CaEventBatch batch{};
        kernel::Irp* irp = kernel::IoBuildDeviceIoControlRequest(
            ci::kIoctlCiWaitEvents, device, nullptr, 0, &batch, sizeof batch, true);
        if (kernel::IoCallDriverAndWait(device, irp) != Status::SUCCESS) return;
        std::lock_guard<std::mutex> lock(mutex_);
        events_.insert(events_.end(), batch.events, batch.events + batch.count);
        changed_.notify_all();
      }
    });
  }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  // Waits until an event of `kind` about `object` (and `type`, for async events) arrived.
  bool WaitFor(ci::CaEventKind kind, uint32_t object,
               abi::AsyncEventType type = abi::AsyncEventType{}) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, kLimit, [&] { return CountLocked(kind, object, type) != 0; });
  }
  std::size_t Count(ci::CaEventKind kind, uint32_t object,
                    abi::AsyncEventType type = abi::AsyncEventType{}) {
    std::lock_guard<std::mutex> lock(mutex_);
    return CountLocked(kind, object, type);
  }

 private:
  std::size_t CountLocked(ci::CaEventKind kind, uint32_t object, abi::AsyncEventType type) {
    std::size_t n = 0;
    for (const ci::CaEvent& e : events_) {
      if (e.kind == kind && e.object == object &&
          (kind == ci::CaEventKind::kCompletion || e.type == type)) {
        ++n;
      }
    }
    return n;
  }
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<ci::CaEvent> events_;
};

struct Side {
  uint64_t guid = 0;
  kernel::DeviceObject* device = nullptr;   // referenced
  ci::CaInterface* ci = nullptr;            // referenced: the speed path
  kernel::FileObject* user_file = nullptr;  // this process's open of the CA device
  EventCollector events;
  uint16_t lid = 0;
  uint32_t pd = 0, cq = 0, qpn = 0, key = 0;
  std::vector<uint8_t> buffer = std::vector<uint8_t>(8192);
  rings::SharedMemory cq_memory, qp_memory;
  uvp::CompletionQueue cq_ring;
  uvp::QueuePair qp_ring;
  abi::RingMapping send_mapping{}, recv_mapping{}, cq_ring_mapping{};
};

class RingFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(LoadHcaDriver(&node_, &driver_), Status::SUCCESS);
    sides_[0].guid = 0x0002C90300AA0001ull;
    sides_[1].guid = 0x0002C90300AA0002ull;
    for (int i = 0; i < 2; ++i) {
      Side& s = sides_[i];
      HcaConfig config;
      config.node_guid = s.guid;
      config.pend_ci = PendCi();
      s.lid = static_cast<uint16_t>(i + 1);
      ASSERT_EQ(HcaAddCa(driver_, config, s.lid), Status::SUCCESS);
      s.device = kernel::IoGetDeviceByName(&node_, ci::CaDeviceName(s.guid).c_str());
      ASSERT_NE(s.device, nullptr);
      ci::CiQueryInterfaceOut query{};
      kernel::Irp* irp = kernel::IoBuildDeviceIoControlRequest(
          ci::kIoctlCiQueryInterface, s.device, nullptr, 0, &query, sizeof query, true);
      ASSERT_EQ(kernel::IoCallDriverAndWait(s.device, irp), Status::SUCCESS);
      s.ci = query.ci;
      ASSERT_EQ(kernel::IoCreateFileForProcess(&node_, ci::CaDeviceName(s.guid).c_str(), getpid(),
                                               &s.user_file),
                Status::SUCCESS);
      s.events.Start(s.device);
    }
    ASSERT_EQ(HcaCablePorts(driver_, sides_[0].guid, 1, sides_[1].guid, 1), Status::SUCCESS);
  }

  void TearDown() override {
    for (Side& s : sides_) {
      if (s.user_file != nullptr) kernel::IoCloseFile(std::exchange(s.user_file, nullptr));
    }
    for (Side& s : sides_) {
      if (s.ci != nullptr) HcaRemoveCa(driver_, s.guid);
    }
    for (Side& s : sides_) {
      s.events.Join();
      if (s.ci != nullptr) s.ci->Dereference();
      if (s.device != nullptr) kernel::ObDereferenceObject(s.device);
    }
    UnloadHcaDriver(driver_);
  }

  // The driver's pend mode for the CAs (HcaConfig::pend_ci).
  virtual bool PendCi() const { return false; }

  // --- the control verbs as CI IRPs (kernel mode, no file, as the AL sends them; a
  // registration user mode on the side's file of this process) ---------------------------
  static constexpr kernel::ProcessorMode kAlMode = kernel::ProcessorMode::kKernelMode;
  Status AllocPd(Side& s, uint32_t* pd) {
    abi::CiAllocPdOut out{};
    const Status status = kernel::CallCiAllocPdIrp(s.device, nullptr, kAlMode, &out);
    *pd = out.pd;
    return status;
  }
  Status RegisterMr(Side& s, uint32_t pd, uint64_t vaddr, uint64_t length, abi::AccessFlags access,
                    uint32_t* key) {
    abi::CiRegisterMrIn in{};
    in.pd = pd;
    in.access = access;
    in.vaddr = vaddr;
    in.length = length;
    abi::CiRegisterMrOut out{};
    const Status status = kernel::CallCiRegisterMrIrp(s.device, s.user_file,
                                                      kernel::ProcessorMode::kUserMode, in, &out);
    *key = out.key;
    return status;
  }
  Status CreateCq(Side& s, uint32_t size, uint32_t* cq) {
    abi::CiCreateCqOut out{};
    const Status status =
        kernel::CallCiCreateCqIrp(s.device, nullptr, kAlMode, abi::CiCreateCqIn{size, 0}, &out);
    *cq = out.cq;
    return status;
  }
  Status ResizeCq(Side& s, uint32_t cq, uint32_t* size) {
    abi::CiResizeCqOut out{};
    const Status status =
        kernel::CallCiResizeCqIrp(s.device, nullptr, kAlMode, abi::CiResizeCqIn{cq, *size}, &out);
    if (status == Status::SUCCESS) *size = out.size;
    return status;
  }
  Status DestroyCq(Side& s, uint32_t cq) {
    return kernel::CallCiDestroyCqIrp(s.device, nullptr, kAlMode, abi::CiDestroyCqIn{cq});
  }
  Status CreateQp(Side& s, uint32_t pd, const abi::QpCreateParams& params, uint32_t send_cq,
                  uint32_t recv_cq, uint32_t srq, uint32_t* qpn) {
    abi::CiCreateQpIn in{};
    in.pd = pd;
    in.send_cq = send_cq;
    in.recv_cq = recv_cq;
    in.srq = srq;
    in.params = params;
    abi::CiCreateQpOut out{};
    const Status status = kernel::CallCiCreateQpIrp(s.device, nullptr, kAlMode, in, &out);
    *qpn = out.qpn;
    return status;
  }
  Status ModifyQp(Side& s, uint32_t qpn, const abi::QpModifyAttributes& attributes) {
    return kernel::CallCiModifyQpIrp(s.device, nullptr, kAlMode,
                                     abi::CiModifyQpIn{qpn, attributes});
  }
  Status QueryQp(Side& s, uint32_t qpn, abi::QpAttributes* attributes) {
    abi::CiQueryQpOut out{};
    const Status status =
        kernel::CallCiQueryQpIrp(s.device, nullptr, kAlMode, abi::CiQueryQpIn{qpn}, &out);
    *attributes = out.attributes;
    return status;
  }
  Status DestroyQp(Side& s, uint32_t qpn) {
    return kernel::CallCiDestroyQpIrp(s.device, nullptr, kAlMode, abi::CiDestroyQpIn{qpn});
  }
  Status CreateSrq(Side& s, uint32_t pd, const abi::SrqAttributes& attributes, uint32_t* srq) {
    abi::CiCreateSrqIn in{};
    in.pd = pd;
    in.attributes = attributes;
    abi::CiCreateSrqOut out{};
    const Status status = kernel::CallCiCreateSrqIrp(s.device, nullptr, kAlMode, in, &out);
    *srq = out.srq;
    return status;
  }
  Status DestroySrq(Side& s, uint32_t srq) {
    return kernel::CallCiDestroySrqIrp(s.device, nullptr, kAlMode, abi::CiDestroySrqIn{srq});
  }
  Status CreateAh(Side& s, uint32_t pd, const abi::AddressVector& av, uint32_t* ah) {
    abi::CiCreateAhOut out{};
    const Status status =
        kernel::CallCiCreateAhIrp(s.device, nullptr, kAlMode, abi::CiCreateAhIn{pd, av}, &out);
    *ah = out.ah;
    return status;
  }
  Status DestroyAh(Side& s, uint32_t ah) {
    return kernel::CallCiDestroyAhIrp(s.device, nullptr, kAlMode, abi::CiDestroyAhIn{ah});
  }
  Status BindAhHandle(Side& s, uint32_t ah, uint64_t handle) {
    return kernel::CallCiBindAhHandleIrp(s.device, nullptr, kAlMode,
                                         abi::CiBindAhHandleIn{ah, 0, handle});
  }

  // PD, MR over the side's buffer, a CQ of `cq_size` and a QP (RC unless told) of `depth`.
  void MakeQp(Side& s, uint32_t cq_size = 32, uint32_t depth = 16,
              abi::QpType type = abi::QpType::RC) {
    ASSERT_EQ(AllocPd(s, &s.pd), Status::SUCCESS);
    const auto access = abi::AccessFlags::LOCAL_WRITE | abi::AccessFlags::REMOTE_WRITE |
                        abi::AccessFlags::REMOTE_READ;
    ASSERT_EQ(RegisterMr(s, s.pd, reinterpret_cast<uintptr_t>(s.buffer.data()), s.buffer.size(),
                         access, &s.key),
              Status::SUCCESS);
    ASSERT_EQ(CreateCq(s, cq_size, &s.cq), Status::SUCCESS);
    abi::QpCreateParams params{};
    params.qp_type = type;
    params.sq_signaled = 1;
    params.caps.sq_depth = depth;
    params.caps.rq_depth = depth;
    params.caps.sq_sge = 4;
    params.caps.rq_sge = 4;
    params.caps.max_inline_data = 64;
    ASSERT_EQ(CreateQp(s, s.pd, params, s.cq, s.cq, 0, &s.qpn), Status::SUCCESS);
  }

  void MapRings(Side& s) {
    abi::RingMapping cq_mapping{};
    uint32_t id = 0;
    int fd = -1;
    ASSERT_EQ(s.ci->MapCqRing(s.cq, &cq_mapping, &id, &fd), Status::SUCCESS);
    s.cq_ring_mapping = cq_mapping;
    std::string error;
    ASSERT_TRUE(rings::SharedMemory::Map(fd, &s.cq_memory, &error)) << error;
    ASSERT_EQ(s.cq_ring.Attach(s.cq_memory.base(), s.cq_memory.size(), cq_mapping),
              Status::SUCCESS);
    ASSERT_EQ(s.ci->MapQpRings(s.qpn, &s.send_mapping, &s.recv_mapping, &id, &fd), Status::SUCCESS);
    ASSERT_TRUE(rings::SharedMemory::Map(fd, &s.qp_memory, &error)) << error;
    ASSERT_EQ(
        s.qp_ring.Attach(s.qp_memory.base(), s.qp_memory.size(), s.send_mapping, s.recv_mapping),
        Status::SUCCESS);
  }

  Status Modify(Side& s, const abi::QpModifyAttributes& attributes) {
    return ModifyQp(s, s.qpn, attributes);
  }
  void Init(Side& s) {
    abi::QpModifyAttributes init{};
    init.mask = abi::QpAttrMask::STATE | abi::QpAttrMask::PKEY_INDEX | abi::QpAttrMask::PORT |
                abi::QpAttrMask::ACCESS_FLAGS;
    init.state = abi::QpState::INIT;
    init.port_num = 1;
    init.access_flags = abi::AccessFlags::REMOTE_WRITE | abi::AccessFlags::REMOTE_READ;
    ASSERT_EQ(Modify(s, init), Status::SUCCESS);
  }
  void ToRtr(Side& s, const Side& peer) {
    abi::QpModifyAttributes rtr{};
    rtr.mask = abi::QpAttrMask::STATE | abi::QpAttrMask::AV | abi::QpAttrMask::PATH_MTU |
               abi::QpAttrMask::DEST_QPN | abi::QpAttrMask::RQ_PSN |
               abi::QpAttrMask::MAX_DEST_RD_ATOMIC | abi::QpAttrMask::MIN_RNR_TIMER;
    rtr.state = abi::QpState::RTR;
    rtr.av.port_num = 1;
    rtr.av.dlid = peer.lid;
    rtr.path_mtu = static_cast<uint8_t>(abi::PathMtu::MTU_1024);
    rtr.dest_qpn = peer.qpn;
    rtr.rq_psn = 0x100;
    rtr.max_dest_rd_atomic = 1;
    rtr.min_rnr_timer = 1;
    ASSERT_EQ(Modify(s, rtr), Status::SUCCESS);
  }
  void ToRts(Side& s) {
    abi::QpModifyAttributes rts{};
    rts.mask = abi::QpAttrMask::STATE | abi::QpAttrMask::SQ_PSN | abi::QpAttrMask::TIMEOUT |
               abi::QpAttrMask::RETRY_COUNT | abi::QpAttrMask::RNR_RETRY |
               abi::QpAttrMask::MAX_RD_ATOMIC;
    rts.state = abi::QpState::RTS;
    rts.sq_psn = 0x100;
    rts.timeout = 14;
    rts.retry_count = 7;
    rts.rnr_retry = 7;
    rts.max_rd_atomic = 1;
    ASSERT_EQ(Modify(s, rts), Status::SUCCESS);
  }
  // Both QPs made, mapped and connected.
  void Connect(uint32_t cq_size = 32, uint32_t depth = 16) {
    for (Side& s : sides_) {
      MakeQp(s, cq_size, depth);
      MapRings(s);
      Init(s);
    }
    ToRtr(sides_[0], sides_[1]);
    ToRtr(sides_[1], sides_[0]);
    ToRts(sides_[0]);
    ToRts(sides_[1]);
  }

  abi::SendWorkRequest Send(Side& s, uint64_t wr_id, abi::WrType type, uint32_t offset,
                            uint32_t length) {
    abi::SendWorkRequest wr{};
    wr.wr_id = wr_id;
    wr.wr_type = type;
    wr.send_flags = abi::SendFlags::SIGNALED;
    wr.num_sge = 1;
    wr.sge[0].vaddr = reinterpret_cast<uintptr_t>(s.buffer.data() + offset);
    wr.sge[0].length = length;
    wr.sge[0].lkey = s.key;
    return wr;
  }
  abi::RecvWorkRequest Recv(Side& s, uint64_t wr_id, uint32_t offset, uint32_t length) {
    abi::RecvWorkRequest wr{};
    wr.wr_id = wr_id;
    wr.num_sge = 1;
    wr.sge[0].vaddr = reinterpret_cast<uintptr_t>(s.buffer.data() + offset);
    wr.sge[0].length = length;
    wr.sge[0].lkey = s.key;
    return wr;
  }
  Status PostSend(Side& s, const abi::SendWorkRequest& wr) {
    uint32_t posted = 0;
    return s.qp_ring.PostSend(std::span<const abi::SendWorkRequest>(&wr, 1), &posted);
  }
  Status PostRecv(Side& s, const abi::RecvWorkRequest& wr) {
    uint32_t posted = 0;
    return s.qp_ring.PostRecv(std::span<const abi::RecvWorkRequest>(&wr, 1), &posted);
  }
  // One completion from the side's CQ ring (SUCCESS), OVERFLOW, or TIMEOUT.
  Status PollOne(Side& s, abi::WorkCompletion* wc) {
    const auto deadline = std::chrono::steady_clock::now() + kLimit;
    for (;;) {
      uint32_t n = 0;
      const Status status = s.cq_ring.PollCq(std::span<abi::WorkCompletion>(wc, 1), &n);
      if (status != Status::NOT_FOUND) return status;
      if (std::chrono::steady_clock::now() > deadline) return Status::TIMEOUT;
      s.cq_ring.Wait(
          {.spin_ns = 1000, .yield_while_spinning = true, .sleep_timeout_ns = 10'000'000});
    }
  }
  abi::QpState StateOf(Side& s) {
    abi::QpAttributes attributes{};
    EXPECT_EQ(QueryQp(s, s.qpn, &attributes), Status::SUCCESS);
    return attributes.state;
  }
  // Polls (bounded) until `done()`.
  template <typename Done>
  bool Eventually(Done done) {
    const auto deadline = std::chrono::steady_clock::now() + kLimit;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

  kernel::Node node_{kernel::NodeOptions{"ring-test", 2}};
  HcaDriver* driver_ = nullptr;
  Side sides_[2];
};

}  // namespace softib::hca::testing
