// MapCqRing / MapQpRings / MapSrqRing as a user process's file sends them through the bridge:
// the memory object rides with the answer, only the owning file can map, a second map
// answers the same memory, shm_mappings counts objects, and destruction or the file's close
// unmaps (the rings say SHUTDOWN).
#include <endian.h>
#include <unistd.h>

#include "kernel_client.h"
#include "softib/abi/runtime_ioctls.h"
#include "softib/abi/verbs_al.h"
#include "softib/abi/verbs_srq.h"
#include "softib/bridge/reply_fds.h"
#include "softib/rings/ring_layout.h"
#include "softib/rings/shared_memory.h"

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
    kernel::Irp* irp = kernel::IoBuildDeviceIoControlRequest(kCode<In>, file_->DeviceObject, &in,
                                                             sizeof in, out, sizeof *out, false);
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
    static kernel::CompletionAction Done(kernel::DeviceObject*, kernel::Irp* irp, void* context) {
      auto* self = static_cast<Call*>(context);
      bridge::TakeReplyFds(irp, self->fds, &self->count);
      self->status = irp->IoStatus.Status;
      kernel::KeSetEvent(&self->done);
      return kernel::CompletionAction::kContinueCompletion;  // the I/O manager copies and frees
    }
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

}  // namespace
}  // namespace softib::testing
