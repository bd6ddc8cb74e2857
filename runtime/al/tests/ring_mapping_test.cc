// MapCqRing / MapQpRings / MapSrqRing as a user process's file sends them through the bridge:
// the memory object rides with the answer, only the owning file can map, a second map
// answers the same memory, shm_mappings counts objects, and destruction or the file's close
// unmaps (the rings say SHUTDOWN).
#include <endian.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "kernel_client.h"
#include "softib/abi/runtime_ioctls.h"
#include "softib/abi/verbs_al.h"
#include "softib/abi/verbs_mr_mw.h"
#include "softib/abi/verbs_pd_av.h"
#include "softib/abi/verbs_qp.h"
#include "softib/abi/verbs_srq.h"
#include "softib/bridge/reply_fds.h"
#include "softib/rings/ring_layout.h"
#include "softib/rings/shared_memory.h"
#include "softib/uvp/uvp.h"

namespace softib::testing {
namespace {

template <typename In>
inline constexpr uint32_t kCode = 0;
template <>
inline constexpr uint32_t kCode<abi::GetFileAlIn> = abi::GetFileAlVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCode<abi::QueryObjectCountsIn> = abi::QueryObjectCountsVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCode<abi::OpenCaIn> = abi::OpenCaVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCode<abi::AllocPdIn> = abi::AllocPdVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCode<abi::CreateCqIn> = abi::CreateCqVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCode<abi::CreateQpIn> = abi::CreateQpVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCode<abi::DestroyQpIn> = abi::DestroyQpVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCode<abi::CreateSrqIn> = abi::CreateSrqVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCode<abi::ModifyQpIn> = abi::ModifyQpVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCode<abi::RegMemIn> = abi::RegMemVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCode<abi::CreateAvIn> = abi::CreateAvVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCode<abi::ModifyAvIn> = abi::ModifyAvVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCode<abi::DestroyAvIn> = abi::DestroyAvVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCode<abi::MapCqRingIn> = abi::MapCqRingVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCode<abi::MapQpRingsIn> = abi::MapQpRingsVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCode<abi::MapSrqRingIn> = abi::MapSrqRingVerb::kIoctlCode;

// A user-mode file of this process, whose requests can bring descriptors back as the
// bridge's do (RegisterReplyIrp before the call, TakeReplyFds at completion).
class ProcessFile {
 public:
  ProcessFile(kernel::Node* node, const std::string& device) {
    EXPECT_EQ(kernel::IoCreateFileForProcess(node, device.c_str(), getpid(), &file_),
              Status::SUCCESS);
  }
  ~ProcessFile() { Close(); }
  void Close() {
    if (file_ != nullptr) kernel::IoCloseFile(std::exchange(file_, nullptr));
  }

  // Synchronous, without descriptors (DeviceIoControl without the bridge).
  template <typename In, typename Out>
  Status Ioctl(const In& in, Out* out) {
    uint64_t information = 0;
    return kernel::IoDeviceIoControlFile(file_, kCode<In>, &in, sizeof in, out, sizeof *out,
                                         kernel::ProcessorMode::kUserMode, &information);
  }
  template <typename In>
  Status Ioctl(const In& in) {
    uint64_t information = 0;
    return kernel::IoDeviceIoControlFile(file_, kCode<In>, &in, sizeof in, nullptr, 0,
                                         kernel::ProcessorMode::kUserMode, &information);
  }

  // As the bridge sends it: the descriptors of the answer land in *fds.
  template <typename In, typename Out>
  Status IoctlWithFds(const In& in, Out* out, std::vector<int>* fds) {
    Call call;
    call.out = out;
    call.out_size = sizeof *out;
    kernel::Irp* irp = kernel::IoBuildDeviceIoControlRequest(
        kCode<In>, file_->DeviceObject, &in, sizeof in, nullptr, sizeof *out, false);
    irp->RequestorMode = kernel::ProcessorMode::kUserMode;
    kernel::IoGetNextIrpStackLocation(irp)->FileObject = file_;
    kernel::IoSetCompletionRoutine(irp, &Call::Done, &call, true, true, true);
    bridge::RegisterReplyIrp(irp);
    kernel::IoCallDriver(file_->DeviceObject, irp);
    EXPECT_EQ(kernel::KeWaitForSingleObject(&call.done, std::chrono::seconds(10)), Status::SUCCESS);
    fds->assign(call.fds, call.fds + call.count);
    return call.status;
  }

  uint64_t Al() {
    abi::GetFileAlOut out{};
    EXPECT_EQ(Ioctl(abi::GetFileAlIn{}, &out), Status::SUCCESS);
    return out.al.value;
  }
  abi::ObjectCounts Counts(abi::CountScope scope) {
    abi::QueryObjectCountsOut out{};
    EXPECT_EQ(Ioctl(abi::QueryObjectCountsIn{{Al()}, scope, 0}, &out), Status::SUCCESS);
    return out.counts;
  }

 private:
  struct Call {
    // Takes the answer here and claims the IRP back: the I/O manager would copy the output
    // only after this routine returns, which the waiting thread (woken by the event) could
    // overtake when the IRP completes on another thread (the HCA driver's pend mode).
    static kernel::CompletionAction Done(kernel::DeviceObject*, kernel::Irp* irp, void* context) {
      auto* self = static_cast<Call*>(context);
      bridge::TakeReplyFds(irp, self->fds, &self->count);
      self->status = irp->IoStatus.Status;
      std::memcpy(self->out, irp->AssociatedIrp.SystemBuffer,
                  std::min<uint64_t>(irp->IoStatus.Information, self->out_size));
      kernel::IoFreeIrp(irp);
      kernel::KeSetEvent(&self->done);  // the waiter may return at once: touch nothing after
      return kernel::CompletionAction::kMoreProcessingRequired;
    }
    void* out = nullptr;
    std::size_t out_size = 0;
    int fds[bridge::kMaxReplyFds] = {};
    std::size_t count = 0;
    Status status = Status::PENDING;
    kernel::KEvent done{kernel::EventType::kNotification};
  };
  kernel::FileObject* file_ = nullptr;
};

class RingMapping : public ::testing::Test {
 protected:
  void SetUp() override {
    node_ = BootDefault("al-rings");
    ASSERT_TRUE(node_);
    guid_ = node_->ca_guids()[0];
    al_file_ = std::make_unique<ProcessFile>(node_->node(), al::kAlDeviceName);
    ca_file_ = std::make_unique<ProcessFile>(node_->node(), node_->ca_device_name(guid_));
    Open(*ca_file_, &ca_, &pd_);
    abi::CreateCqOut cq{};
    ASSERT_EQ(ca_file_->Ioctl(abi::CreateCqIn{{ca_}, 64, 0, 0}, &cq), Status::SUCCESS);
    cq_ = cq.cq.value;
    abi::CreateQpIn qp_in{};
    qp_in.pd.value = pd_;
    qp_in.send_cq = cq.cq;
    qp_in.recv_cq = cq.cq;
    qp_in.params.qp_type = abi::QpType::RC;
    qp_in.params.caps = {16, 8, 1, 1, 0, 0};
    abi::CreateQpOut qp{};
    ASSERT_EQ(ca_file_->Ioctl(qp_in, &qp), Status::SUCCESS);
    qp_ = qp.qp.value;
  }
  void Open(ProcessFile& file, uint64_t* ca, uint64_t* pd) {
    abi::OpenCaOut opened{};
    ASSERT_EQ(file.Ioctl(abi::OpenCaIn{{file.Al()}, htobe64(guid_), 0}, &opened), Status::SUCCESS);
    *ca = opened.ca.value;
    abi::AllocPdOut allocated{};
    ASSERT_EQ(file.Ioctl(abi::AllocPdIn{{*ca}, abi::PdType{}, 0, 0}, &allocated), Status::SUCCESS);
    *pd = allocated.pd.value;
  }
  uint32_t NodeMappings() { return al_file_->Counts(abi::CountScope::NODE).shm_mappings; }

  std::unique_ptr<stack::NodeStack> node_;
  uint64_t guid_ = 0;
  std::unique_ptr<ProcessFile> al_file_, ca_file_;
  uint64_t ca_ = 0, pd_ = 0, cq_ = 0, qp_ = 0;
};

TEST_F(RingMapping, MapsComeWithTheirMemoryAndCountOncePerObject) {
  std::vector<int> fds;
  abi::MapCqRingOut cq_ring{};
  ASSERT_EQ(ca_file_->IoctlWithFds(abi::MapCqRingIn{{cq_}}, &cq_ring, &fds), Status::SUCCESS);
  ASSERT_EQ(fds.size(), 1u);
  rings::SharedMemory cq_memory;
  std::string error;
  ASSERT_TRUE(rings::SharedMemory::Map(fds[0], &cq_memory, &error)) << error;
  EXPECT_TRUE(rings::CheckMapping(cq_ring.ring, cq_memory.size(), abi::RingKind::CQ));
  EXPECT_TRUE(rings::CheckHeader(*rings::ControlAt(cq_memory.base(), cq_ring.ring), cq_ring.ring,
                                 abi::RingKind::CQ));
  EXPECT_EQ(cq_ring.ring.num_entries, 64u);
  EXPECT_EQ(ca_file_->Counts(abi::CountScope::FILE).shm_mappings, 1u);

  abi::MapQpRingsOut qp_rings{};
  ASSERT_EQ(ca_file_->IoctlWithFds(abi::MapQpRingsIn{{qp_}}, &qp_rings, &fds), Status::SUCCESS);
  ASSERT_EQ(fds.size(), 1u);
  rings::SharedMemory qp_memory;
  ASSERT_TRUE(rings::SharedMemory::Map(fds[0], &qp_memory, &error)) << error;
  EXPECT_TRUE(rings::CheckMapping(qp_rings.send_ring, qp_memory.size(), abi::RingKind::SEND));
  EXPECT_TRUE(rings::CheckMapping(qp_rings.recv_ring, qp_memory.size(), abi::RingKind::RECV));
  EXPECT_EQ(qp_rings.send_ring.num_entries, 16u);
  EXPECT_EQ(qp_rings.recv_ring.num_entries, 8u);
  EXPECT_NE(qp_rings.shm_id, cq_ring.shm_id);
  EXPECT_EQ(NodeMappings(), 2u);

  // Again: the same memory, not counted twice.
  abi::MapCqRingOut again{};
  ASSERT_EQ(ca_file_->IoctlWithFds(abi::MapCqRingIn{{cq_}}, &again, &fds), Status::SUCCESS);
  ASSERT_EQ(fds.size(), 1u);
  close(fds[0]);
  EXPECT_EQ(again.shm_id, cq_ring.shm_id);
  EXPECT_EQ(std::memcmp(&again.ring, &cq_ring.ring, sizeof again.ring), 0);
  EXPECT_EQ(NodeMappings(), 2u);

  // Destroying the QP unmaps its rings.
  EXPECT_EQ(ca_file_->Ioctl(abi::DestroyQpIn{{qp_}}), Status::SUCCESS);
  EXPECT_EQ(NodeMappings(), 1u);
  EXPECT_EQ(rings::ControlAt(qp_memory.base(), qp_rings.send_ring)->status.error,
            abi::RingError::SHUTDOWN);
  // Its handle is stale now.
  EXPECT_EQ(ca_file_->IoctlWithFds(abi::MapQpRingsIn{{qp_}}, &qp_rings, &fds),
            Status::INVALID_QP_HANDLE);
  EXPECT_TRUE(fds.empty());

  // Closing the file (the process's exit) unmaps the rest.
  ca_file_->Close();
  EXPECT_EQ(NodeMappings(), 0u);
  EXPECT_EQ(rings::ControlAt(cq_memory.base(), cq_ring.ring)->status.error,
            abi::RingError::SHUTDOWN);
}

TEST_F(RingMapping, OnlyTheOwningFileCanMap) {
  ProcessFile other(node_->node(), node_->ca_device_name(guid_));
  uint64_t other_ca = 0, other_pd = 0;
  Open(other, &other_ca, &other_pd);
  std::vector<int> fds;
  abi::MapCqRingOut cq_ring{};
  EXPECT_EQ(other.IoctlWithFds(abi::MapCqRingIn{{cq_}}, &cq_ring, &fds), Status::INVALID_CQ_HANDLE);
  abi::MapQpRingsOut qp_rings{};
  EXPECT_EQ(other.IoctlWithFds(abi::MapQpRingsIn{{qp_}}, &qp_rings, &fds),
            Status::INVALID_QP_HANDLE);
  EXPECT_TRUE(fds.empty());
  // A handle of another type is no CQ either.
  EXPECT_EQ(ca_file_->IoctlWithFds(abi::MapCqRingIn{{qp_}}, &cq_ring, &fds),
            Status::INVALID_CQ_HANDLE);
  EXPECT_EQ(NodeMappings(), 0u);
}

TEST_F(RingMapping, AnAnswerThatCannotCarryTheMemoryIsRefused) {
  // DeviceIoControl without the bridge: nowhere to send a descriptor.
  abi::MapCqRingOut cq_ring{};
  EXPECT_EQ(ca_file_->Ioctl(abi::MapCqRingIn{{cq_}}, &cq_ring), Status::INSUFFICIENT_RESOURCES);
  EXPECT_EQ(NodeMappings(), 0u);
}

TEST_F(RingMapping, SrqRing) {
  abi::CreateSrqIn in{};
  in.pd.value = pd_;
  in.attributes.max_wr = 30;
  in.attributes.max_sge = 1;
  abi::CreateSrqOut srq{};
  ASSERT_EQ(ca_file_->Ioctl(in, &srq), Status::SUCCESS);
  std::vector<int> fds;
  abi::MapSrqRingOut ring{};
  ASSERT_EQ(ca_file_->IoctlWithFds(abi::MapSrqRingIn{srq.srq}, &ring, &fds), Status::SUCCESS);
  ASSERT_EQ(fds.size(), 1u);
  close(fds[0]);
  EXPECT_EQ(ring.ring.num_entries, 32u);
  EXPECT_EQ(ring.ring.entry_size, sizeof(abi::RecvWorkRequest));
  EXPECT_EQ(NodeMappings(), 1u);
  ca_file_->Close();
  EXPECT_EQ(NodeMappings(), 0u);
}

// ---- UD through the rings -------------------------------------------------------------------
// A user file's UD QP posts into its send ring naming the address by the file's AV handle;
// the AL bound the handle to the AH when the AV was made, and the CA translates it through
// the QP's PD. A handle the file no longer holds, or another file's, names nothing.

constexpr uint32_t kUdQkey = 0x0101'0101;
constexpr uint32_t kGrh = 40;

// One user file's UD endpoint on a CA: QP and CQ with their rings mapped, memory registered.
struct UdEndpoint {
  std::unique_ptr<ProcessFile> file;
  uint64_t ca = 0, pd = 0, cq = 0, qp = 0;
  uint32_t qpn = 0, lkey = 0;
  uint16_t lid = 0;
  std::vector<uint8_t> buffer = std::vector<uint8_t>(4096);
  rings::SharedMemory cq_memory, qp_memory;
  uvp::CompletionQueue cq_ring;
  uvp::QueuePair qp_ring;
};

class UdRings : public ::testing::Test {
 protected:
  void SetUp() override {
    node_ = BootDefault("al-ud-rings");
    ASSERT_TRUE(node_);
    ASSERT_NO_FATAL_FAILURE(Build(node_->ca_guids()[0], 1, &a_));
    ASSERT_NO_FATAL_FAILURE(Build(node_->ca_guids()[1], 2, &b_));
  }

  void Build(uint64_t guid, uint16_t lid, UdEndpoint* e) {
    e->lid = lid;
    e->file = std::make_unique<ProcessFile>(node_->node(), node_->ca_device_name(guid));
    ProcessFile& f = *e->file;
    abi::OpenCaOut opened{};
    ASSERT_EQ(f.Ioctl(abi::OpenCaIn{{f.Al()}, htobe64(guid), 0}, &opened), Status::SUCCESS);
    e->ca = opened.ca.value;
    abi::AllocPdOut pd{};
    ASSERT_EQ(f.Ioctl(abi::AllocPdIn{{e->ca}, abi::PdType{}, 0, 0}, &pd), Status::SUCCESS);
    e->pd = pd.pd.value;
    abi::RegMemIn reg{};
    reg.pd.value = e->pd;
    reg.region.vaddr = reinterpret_cast<uintptr_t>(e->buffer.data());
    reg.region.length = e->buffer.size();
    reg.region.access = abi::AccessFlags::LOCAL_WRITE;
    abi::RegMemOut mr{};
    ASSERT_EQ(f.Ioctl(reg, &mr), Status::SUCCESS);
    e->lkey = mr.lkey;
    abi::CreateCqOut cq{};
    ASSERT_EQ(f.Ioctl(abi::CreateCqIn{{e->ca}, 16, 0, 0}, &cq), Status::SUCCESS);
    e->cq = cq.cq.value;
    abi::CreateQpIn qp_in{};
    qp_in.pd.value = e->pd;
    qp_in.send_cq = cq.cq;
    qp_in.recv_cq = cq.cq;
    qp_in.params.qp_type = abi::QpType::UD;
    qp_in.params.sq_signaled = 1;
    qp_in.params.caps = {8, 8, 1, 1, 0, 0};
    abi::CreateQpOut qp{};
    ASSERT_EQ(f.Ioctl(qp_in, &qp), Status::SUCCESS);
    e->qp = qp.qp.value;
    e->qpn = qp.qp_num;

    std::vector<int> fds;
    abi::MapCqRingOut cq_ring{};
    ASSERT_EQ(f.IoctlWithFds(abi::MapCqRingIn{{e->cq}}, &cq_ring, &fds), Status::SUCCESS);
    ASSERT_EQ(fds.size(), 1u);
    std::string error;
    ASSERT_TRUE(rings::SharedMemory::Map(fds[0], &e->cq_memory, &error)) << error;
    ASSERT_EQ(e->cq_ring.Attach(e->cq_memory.base(), e->cq_memory.size(), cq_ring.ring),
              Status::SUCCESS);
    abi::MapQpRingsOut qp_rings{};
    ASSERT_EQ(f.IoctlWithFds(abi::MapQpRingsIn{{e->qp}}, &qp_rings, &fds), Status::SUCCESS);
    ASSERT_EQ(fds.size(), 1u);
    ASSERT_TRUE(rings::SharedMemory::Map(fds[0], &e->qp_memory, &error)) << error;
    ASSERT_EQ(e->qp_ring.Attach(e->qp_memory.base(), e->qp_memory.size(), qp_rings.send_ring,
                                qp_rings.recv_ring),
              Status::SUCCESS);

    abi::ModifyQpIn modify{};
    modify.qp.value = e->qp;
    modify.attributes.mask = abi::QpAttrMask::STATE | abi::QpAttrMask::PKEY_INDEX |
                             abi::QpAttrMask::PORT | abi::QpAttrMask::QKEY;
    modify.attributes.state = abi::QpState::INIT;
    modify.attributes.port_num = 1;
    modify.attributes.qkey = htobe32(kUdQkey);
    ASSERT_EQ(f.Ioctl(modify), Status::SUCCESS);
    modify.attributes = {};
    modify.attributes.mask = abi::QpAttrMask::STATE;
    modify.attributes.state = abi::QpState::RTR;
    ASSERT_EQ(f.Ioctl(modify), Status::SUCCESS);
    modify.attributes.mask = abi::QpAttrMask::STATE | abi::QpAttrMask::SQ_PSN;
    modify.attributes.state = abi::QpState::RTS;
    ASSERT_EQ(f.Ioctl(modify), Status::SUCCESS);
  }

  // An AV of `from`'s PD towards `to`.
  uint64_t AvTo(UdEndpoint& from, const UdEndpoint& to) {
    abi::CreateAvIn in{};
    in.pd.value = from.pd;
    in.attributes.port_num = 1;
    in.attributes.dlid = to.lid;
    abi::CreateAvOut out{};
    EXPECT_EQ(from.file->Ioctl(in, &out), Status::SUCCESS);
    return out.av.value;
  }
  void PostRecv(UdEndpoint& e, uint64_t wr_id) {
    abi::RecvWorkRequest wr{};
    wr.wr_id = wr_id;
    wr.num_sge = 1;
    wr.sge[0] = {reinterpret_cast<uintptr_t>(e.buffer.data() + 2048), kGrh + 256, e.lkey};
    uint32_t posted = 0;
    ASSERT_EQ(e.qp_ring.PostRecv({&wr, 1}, &posted), Status::SUCCESS);
  }
  void PostSend(UdEndpoint& from, const UdEndpoint& to, uint64_t wr_id, uint64_t av,
                uint32_t length) {
    abi::SendWorkRequest wr{};
    wr.wr_id = wr_id;
    wr.wr_type = abi::WrType::SEND;
    wr.send_flags = abi::SendFlags::SIGNALED;
    wr.num_sge = 1;
    wr.sge[0] = {reinterpret_cast<uintptr_t>(from.buffer.data()), length, from.lkey};
    wr.av.value = av;
    wr.remote_qpn = to.qpn;
    wr.remote_qkey = kUdQkey;
    uint32_t posted = 0;
    ASSERT_EQ(from.qp_ring.PostSend({&wr, 1}, &posted), Status::SUCCESS);
  }
  // One completion from the endpoint's CQ ring (bounded wait).
  Status PollOne(UdEndpoint& e, abi::WorkCompletion* wc) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      uint32_t n = 0;
      const Status status = e.cq_ring.PollCq({wc, 1}, &n);
      if (status != Status::NOT_FOUND) return status;
      if (std::chrono::steady_clock::now() > deadline) return Status::TIMEOUT;
      e.cq_ring.Wait(
          {.spin_ns = 1000, .yield_while_spinning = true, .sleep_timeout_ns = 10'000'000});
    }
  }

  std::unique_ptr<stack::NodeStack> node_;
  UdEndpoint a_, b_;
};

TEST_F(UdRings, AUserFilesUdSendThroughItsRingNamesTheAvByHandle) {
  const uint64_t av = AvTo(a_, b_);
  for (int round = 0; round < 3; ++round) {
    for (uint32_t i = 0; i < 200; ++i) a_.buffer[i] = static_cast<uint8_t>(i + round);
    ASSERT_NO_FATAL_FAILURE(PostRecv(b_, 10 + round));
    ASSERT_NO_FATAL_FAILURE(PostSend(a_, b_, 20 + round, av, 200));
    abi::WorkCompletion wc{};
    ASSERT_EQ(PollOne(a_, &wc), Status::SUCCESS);
    EXPECT_EQ(wc.wr_id, 20u + round);
    ASSERT_EQ(wc.status, abi::WcStatus::SUCCESS);
    ASSERT_EQ(PollOne(b_, &wc), Status::SUCCESS);
    EXPECT_EQ(wc.wr_id, 10u + round);
    ASSERT_EQ(wc.status, abi::WcStatus::SUCCESS);
    EXPECT_EQ(wc.opcode, abi::WcOpcode::RECV);
    EXPECT_EQ(wc.length, kGrh + 200);
    EXPECT_EQ(wc.src_qp, a_.qpn);
    EXPECT_EQ(wc.slid, a_.lid);
    for (uint32_t i = 0; i < 200; ++i) {
      ASSERT_EQ(b_.buffer[2048 + kGrh + i], static_cast<uint8_t>(i + round)) << i;
    }
  }

  // ModifyAv towards a LID nobody has: the handle follows the new AH (the send completes,
  // the datagram is lost on the wire, as UD may be); back towards b: b receives again.
  abi::ModifyAvIn modify{};
  modify.av.value = av;
  modify.attributes.port_num = 1;
  modify.attributes.dlid = 0x77;
  ASSERT_EQ(a_.file->Ioctl(modify), Status::SUCCESS);
  ASSERT_NO_FATAL_FAILURE(PostRecv(b_, 30));
  a_.buffer[0] = 0x31;
  ASSERT_NO_FATAL_FAILURE(PostSend(a_, b_, 31, av, 8));
  abi::WorkCompletion wc{};
  ASSERT_EQ(PollOne(a_, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 31u);
  EXPECT_EQ(wc.status, abi::WcStatus::SUCCESS);
  modify.attributes.dlid = b_.lid;
  ASSERT_EQ(a_.file->Ioctl(modify), Status::SUCCESS);
  a_.buffer[0] = 0x32;
  ASSERT_NO_FATAL_FAILURE(PostSend(a_, b_, 32, av, 8));
  ASSERT_EQ(PollOne(a_, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 32u);
  EXPECT_EQ(wc.status, abi::WcStatus::SUCCESS);
  ASSERT_EQ(PollOne(b_, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 30u);
  EXPECT_EQ(wc.status, abi::WcStatus::SUCCESS);
  EXPECT_EQ(b_.buffer[2048 + kGrh], 0x32);  // the second send's, not the lost one's
}

TEST_F(UdRings, ADestroyedAvsHandleCompletesInError) {
  const uint64_t av = AvTo(a_, b_);
  ASSERT_EQ(a_.file->Ioctl(abi::DestroyAvIn{{av}}), Status::SUCCESS);
  ASSERT_NO_FATAL_FAILURE(PostSend(a_, b_, 5, av, 8));
  abi::WorkCompletion wc{};
  ASSERT_EQ(PollOne(a_, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 5u);
  EXPECT_EQ(wc.status, abi::WcStatus::LOCAL_QP_OP_ERR);
  EXPECT_EQ(wc.vendor_err, static_cast<uint8_t>(abi::ToUnderlying(Status::INVALID_AV_HANDLE)));
}

TEST_F(UdRings, AnotherFilesAvHandleNamesNothing) {
  // A second file on a's CA sends naming the handle of a's AV (towards b): in its QP's PD
  // the handle names nothing, so the request is refused; a's AV is untouched and a still
  // sends through it.
  UdEndpoint c;
  ASSERT_NO_FATAL_FAILURE(Build(node_->ca_guids()[0], 1, &c));
  const uint64_t av = AvTo(a_, b_);
  ASSERT_NO_FATAL_FAILURE(PostRecv(b_, 1));
  ASSERT_NO_FATAL_FAILURE(PostSend(c, b_, 6, av, 8));
  abi::WorkCompletion wc{};
  ASSERT_EQ(PollOne(c, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 6u);
  EXPECT_EQ(wc.status, abi::WcStatus::LOCAL_QP_OP_ERR);
  EXPECT_EQ(wc.vendor_err, static_cast<uint8_t>(abi::ToUnderlying(Status::INVALID_AV_HANDLE)));

  ASSERT_NO_FATAL_FAILURE(PostSend(a_, b_, 7, av, 8));
  ASSERT_EQ(PollOne(a_, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 7u);
  EXPECT_EQ(wc.status, abi::WcStatus::SUCCESS);
  ASSERT_EQ(PollOne(b_, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 1u);  // the receive c's refused send never reached
  EXPECT_EQ(wc.src_qp, a_.qpn);
}

}  // namespace
}  // namespace softib::testing
