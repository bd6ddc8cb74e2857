// User-mode files, as the bridge delivers a process's requests: the AL opened by name, a CA
// opened by the ResolveCaDevice redirect, verbs as METHOD_BUFFERED IOCTLs, memory reached
// through the process's pid, pending event IOCTLs, and teardown when the file closes.
#include <unistd.h>

#include "kernel_client.h"
#include "softib/abi/runtime_ioctls.h"
#include "softib/abi/verbs_al.h"

namespace softib::testing {
namespace {

// The IOCTL code of a verb, by its input structure.
template <typename In>
inline constexpr uint32_t kCodeOf = 0;
template <>
inline constexpr uint32_t kCodeOf<abi::GetFileAlIn> = abi::GetFileAlVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCodeOf<abi::QueryObjectCountsIn> =
    abi::QueryObjectCountsVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCodeOf<abi::ResolveCaDeviceIn> = abi::ResolveCaDeviceVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCodeOf<abi::OpenCaIn> = abi::OpenCaVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCodeOf<abi::AllocPdIn> = abi::AllocPdVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCodeOf<abi::CreateCqIn> = abi::CreateCqVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCodeOf<abi::RegMemIn> = abi::RegMemVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCodeOf<abi::CreateQpIn> = abi::CreateQpVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCodeOf<abi::ModifyQpIn> = abi::ModifyQpVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCodeOf<abi::DeallocPdIn> = abi::DeallocPdVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCodeOf<abi::OpenAlIn> = abi::OpenAlVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCodeOf<abi::MapCqRingIn> = abi::MapCqRingVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCodeOf<abi::CreateMadPoolIn> = abi::CreateMadPoolVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCodeOf<abi::RegisterPnpIn> = abi::RegisterPnpVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCodeOf<abi::GetPnpEventIn> = abi::GetPnpEventVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCodeOf<abi::GetAsyncEventIn> = abi::GetAsyncEventVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCodeOf<abi::CancelPendingIn> = abi::CancelPendingVerb::kIoctlCode;
template <>
inline constexpr uint32_t kCodeOf<abi::SendSaRequestIn> = abi::SendSaRequestVerb::kIoctlCode;

class UserFile {
 public:
  UserFile(kernel::Node* node, const std::string& device) {
    status_ = kernel::IoCreateFileForProcess(node, device.c_str(), getpid(), &file_);
  }
  ~UserFile() { Close(); }
  void Close() {
    if (file_ != nullptr) kernel::IoCloseFile(std::exchange(file_, nullptr));
  }
  Status open_status() const { return status_; }
  kernel::FileObject* file() const { return file_; }

  template <typename In, typename Out>
  Status Ioctl(const In& in, Out* out) {
    uint64_t information = 0;
    return kernel::IoDeviceIoControlFile(file_, kCodeOf<In>, &in, sizeof(in), out, sizeof(*out),
                                         kernel::ProcessorMode::kUserMode, &information);
  }
  template <typename In>
  Status Ioctl(const In& in) {
    uint64_t information = 0;
    return kernel::IoDeviceIoControlFile(file_, kCodeOf<In>, &in, sizeof(in), nullptr, 0,
                                         kernel::ProcessorMode::kUserMode, &information);
  }
  // Every GetFileAl states the process's DMA address offset (0 natively).
  uint64_t Al() {
    abi::GetFileAlOut out{};
    EXPECT_EQ(Ioctl(abi::GetFileAlIn{dma_address_offset}, &out), Status::SUCCESS);
    return out.al.value;
  }
  uint64_t dma_address_offset = 0;
  abi::ObjectCounts Counts(abi::CountScope scope) {
    abi::QueryObjectCountsOut out{};
    EXPECT_EQ(Ioctl(abi::QueryObjectCountsIn{{Al()}, scope, 0}, &out), Status::SUCCESS);
    return out.counts;
  }

 private:
  kernel::FileObject* file_ = nullptr;
  Status status_ = Status::SUCCESS;
};

// A pending user IOCTL (overlapped): built, sent, watched.
struct PendingIoctl {
  template <typename In, typename Out>
  PendingIoctl(kernel::FileObject* file, const In& in, Out* out) {
    irp = kernel::IoBuildDeviceIoControlRequest(kCodeOf<In>, file->DeviceObject, &in, sizeof(in),
                                                out, sizeof(*out), false);
    irp->RequestorMode = kernel::ProcessorMode::kUserMode;
    kernel::IoGetNextIrpStackLocation(irp)->FileObject = file;
    kernel::IoSetCompletionRoutine(irp, &Done, this, true, true, true);
    sent = kernel::IoCallDriver(file->DeviceObject, irp);
  }
  static kernel::CompletionAction Done(kernel::DeviceObject*, kernel::Irp* irp, void* context) {
    auto* self = static_cast<PendingIoctl*>(context);
    self->status = irp->IoStatus.Status;
    kernel::KeSetEvent(&self->done);
    return kernel::CompletionAction::kMoreProcessingRequired;  // freed by the destructor
  }
  ~PendingIoctl() { kernel::IoFreeIrp(irp); }
  bool WaitDone() {
    return kernel::KeWaitForSingleObject(&done, std::chrono::seconds(10)) == Status::SUCCESS;
  }
  kernel::Irp* irp;
  Status sent;
  std::atomic<Status> status{Status::PENDING};
  kernel::KEvent done{kernel::EventType::kNotification};
};

// `offset`: what the CA file states in GetFileAl (a process under qemu-i386: its guest
// base). The process registers its memory at addresses `offset` below where this test's
// memory is, and the HCA must reach it there.
void RunVerbsOnProcessMemory(const char* node_name, uint64_t offset) {
  auto node = BootDefault(node_name);
  ASSERT_TRUE(node);
  const auto guids = node->ca_guids();
  UserFile al_file(node->node(), al::kAlDeviceName);
  ASSERT_EQ(al_file.open_status(), Status::SUCCESS);
  const uint64_t al = al_file.Al();
  EXPECT_EQ(al >> 56, static_cast<uint64_t>(abi::ObjectType::Al));

  abi::ResolveCaDeviceOut resolved{};
  ASSERT_EQ(al_file.Ioctl(abi::ResolveCaDeviceIn{{al}, htobe64(guids[0])}, &resolved),
            Status::SUCCESS);
  const std::string path(reinterpret_cast<const char*>(resolved.device_path), resolved.path_length);
  EXPECT_EQ(path, node->ca_device_name(guids[0]));
  EXPECT_EQ(al_file.Ioctl(abi::ResolveCaDeviceIn{{al}, htobe64(0x1234)}, &resolved),
            Status::INVALID_GUID);

  UserFile ca_file(node->node(), path);
  ASSERT_EQ(ca_file.open_status(), Status::SUCCESS);
  ca_file.dma_address_offset = offset;
  const uint64_t ca_al = ca_file.Al();
  EXPECT_NE(ca_al, al);
  abi::OpenCaOut ca{};
  EXPECT_EQ(ca_file.Ioctl(abi::OpenCaIn{{ca_al}, htobe64(guids[1]), 0}, &ca), Status::INVALID_GUID);
  EXPECT_EQ(ca_file.Ioctl(abi::OpenCaIn{{al}, htobe64(guids[0]), 0}, &ca),
            Status::INVALID_AL_HANDLE);  // the AL file's handle means nothing here
  ASSERT_EQ(ca_file.Ioctl(abi::OpenCaIn{{ca_al}, htobe64(guids[0]), 0}, &ca), Status::SUCCESS);
  abi::AllocPdOut pd{};
  ASSERT_EQ(ca_file.Ioctl(abi::AllocPdIn{{ca.ca.value}, abi::PdType{}, 0, 0}, &pd),
            Status::SUCCESS);
  abi::CreateCqOut cq{};
  ASSERT_EQ(ca_file.Ioctl(abi::CreateCqIn{{ca.ca.value}, 64, 0, 0}, &cq), Status::SUCCESS);
  std::vector<uint8_t> memory(8192, 0);
  const uint64_t registered = reinterpret_cast<uint64_t>(memory.data()) - offset;
  abi::RegMemIn reg{};
  reg.pd = pd.pd;
  reg.region.vaddr = registered;
  reg.region.length = memory.size();
  reg.region.access = abi::AccessFlags::LOCAL_WRITE | abi::AccessFlags::REMOTE_WRITE;
  abi::RegMemOut mr{};
  ASSERT_EQ(ca_file.Ioctl(reg, &mr), Status::SUCCESS);
  abi::CreateQpIn qp_in{};
  qp_in.pd = pd.pd;
  qp_in.send_cq = cq.cq;
  qp_in.recv_cq = cq.cq;
  qp_in.params.qp_type = abi::QpType::RC;
  qp_in.params.caps = {16, 16, 1, 1, 0, 0};
  abi::CreateQpOut qp{};
  ASSERT_EQ(ca_file.Ioctl(qp_in, &qp), Status::SUCCESS);
  EXPECT_EQ(ca_file.Counts(abi::CountScope::FILE).qp, 1u);

  // A kernel client on the other CA writes into the process's region: the HCA reaches it
  // by pid (process_vm_writev), through the user QP brought up by IOCTLs.
  // Declared before the client: the HCA may reach registered memory until IbReleaseAl.
  Side k;
  Client kernel_client(node->node());
  ASSERT_NO_FATAL_FAILURE(kernel_client.Build(guids[1], 2, &k));
  Side user;
  user.qp = qp.qp.value;
  user.qpn = qp.qp_num;
  user.lid = 1;
  {
    // Connect the user QP with the same attributes, through its file.
    struct FileConnector {
      UserFile* f;
      Status ModifyQp(const abi::ModifyQpIn& in) { return f->Ioctl(in); }
    } connector{&ca_file};
    using M = abi::QpAttrMask;
    abi::ModifyQpIn in{};
    in.qp = qp.qp;
    in.attributes.mask = M::STATE | M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS;
    in.attributes.state = abi::QpState::INIT;
    in.attributes.port_num = 1;
    in.attributes.access_flags = abi::AccessFlags::REMOTE_WRITE;
    ASSERT_EQ(connector.ModifyQp(in), Status::SUCCESS);
    in.attributes = {};
    in.attributes.mask = M::STATE | M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN |
                         M::MAX_DEST_RD_ATOMIC | M::MIN_RNR_TIMER;
    in.attributes.state = abi::QpState::RTR;
    in.attributes.av.port_num = 1;
    in.attributes.av.dlid = k.lid;
    in.attributes.path_mtu = static_cast<uint8_t>(abi::PathMtu::MTU_1024);
    in.attributes.dest_qpn = k.qpn;
    in.attributes.rq_psn = 0x100;
    in.attributes.max_dest_rd_atomic = 1;
    in.attributes.min_rnr_timer = 1;
    ASSERT_EQ(connector.ModifyQp(in), Status::SUCCESS);
  }
  ASSERT_NO_FATAL_FAILURE(kernel_client.Connect(k, user));
  Pattern(k.buffer, 0, 3000, 3);
  abi::SendWorkRequest wr = Write(k, 0, 3000, k, 0, 42);
  wr.rkey = mr.rkey;
  wr.remote_addr = registered + 1000;
  uint32_t posted = 0;
  ASSERT_EQ(kernel::IbPostSend(kernel_client.al(), k.qp, {&wr, 1}, &posted), Status::SUCCESS);
  const auto done = kernel_client.PollN(k.cq, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, abi::WcStatus::SUCCESS);
  EXPECT_TRUE(HasPattern(memory, 1000, 3000, 3));
  EXPECT_EQ(memory[999], 0);
  EXPECT_EQ(memory[4000], 0);

  // Closing the file tears everything down, children first.
  EXPECT_EQ(ca_file.Ioctl(abi::DeallocPdIn{pd.pd}), Status::RESOURCE_BUSY);
  ca_file.Close();
  const abi::ObjectCounts node_counts = al_file.Counts(abi::CountScope::NODE);
  EXPECT_EQ(node_counts.qp, 1u);  // the kernel client's
  EXPECT_EQ(node_counts.mr, 1u);
  EXPECT_EQ(node_counts.ca, 1u);
  EXPECT_EQ(node_counts.open_files, 2u);  // the AL file and the kernel client's
  kernel_client.Release();
  const abi::ObjectCounts after = al_file.Counts(abi::CountScope::NODE);
  EXPECT_EQ(after.qp + after.cq + after.mr + after.pd + after.ca, 0u);
  EXPECT_EQ(after.al, 1u);
}

TEST(UserFiles, RedirectedCaFileRunsVerbsOnTheProcessMemory) {
  RunVerbsOnProcessMemory("uf-verbs", 0);
}

TEST(UserFiles, StatedDmaAddressOffsetMovesTransfersNotKeysOrBounds) {
  RunVerbsOnProcessMemory("uf-offset", 0x10000);
}

TEST(UserFiles, DmaAddressOffsetThatWrapsIsRefusedAndKernelFilesStateNone) {
  auto node = BootDefault("uf-offset-bad");
  ASSERT_TRUE(node);
  const auto guids = node->ca_guids();
  UserFile ca_file(node->node(), node->ca_device_name(guids[0]));
  ASSERT_EQ(ca_file.open_status(), Status::SUCCESS);
  ca_file.dma_address_offset = ~0ull - 0xfff;  // any region above 4 KiB would wrap
  const uint64_t ca_al = ca_file.Al();
  abi::OpenCaOut ca{};
  ASSERT_EQ(ca_file.Ioctl(abi::OpenCaIn{{ca_al}, htobe64(guids[0]), 0}, &ca), Status::SUCCESS);
  abi::AllocPdOut pd{};
  ASSERT_EQ(ca_file.Ioctl(abi::AllocPdIn{{ca.ca.value}, abi::PdType{}, 0, 0}, &pd),
            Status::SUCCESS);
  std::vector<uint8_t> memory(4096, 0);
  abi::RegMemIn reg{};
  reg.pd = pd.pd;
  reg.region.vaddr = reinterpret_cast<uint64_t>(memory.data());
  reg.region.length = memory.size();
  reg.region.access = abi::AccessFlags::LOCAL_WRITE;
  abi::RegMemOut mr{};
  EXPECT_EQ(ca_file.Ioctl(reg, &mr), Status::INVALID_SETTING);
  EXPECT_EQ(ca_file.Counts(abi::CountScope::FILE).mr, 0u);

  // A file opened in kernel mode: its regions are the kernel's own memory, nothing to offset
  // (the user-mode request gets past the dispatcher's proxy-only rule).
  kernel::FileObject* kernel_file = nullptr;
  ASSERT_EQ(kernel::IoCreateFile(node->node(), al::kAlDeviceName,
                                 kernel::ProcessorMode::kKernelMode, &kernel_file),
            Status::SUCCESS);
  for (const uint64_t offset : {0x1000ull, 0ull}) {
    abi::GetFileAlOut out{};
    uint64_t information = 0;
    const abi::GetFileAlIn in{offset};
    EXPECT_EQ(kernel::IoDeviceIoControlFile(kernel_file, abi::GetFileAlVerb::kIoctlCode, &in,
                                            sizeof(in), &out, sizeof(out),
                                            kernel::ProcessorMode::kUserMode, &information),
              offset == 0 ? Status::SUCCESS : Status::INVALID_PARAMETER);
  }
  kernel::IoCloseFile(kernel_file);
}

TEST(UserFiles, KernelOnlyVerbsAreRefusedAndUserVerbsReachTheirHandlers) {
  auto node = BootDefault("uf-refuse");
  ASSERT_TRUE(node);
  UserFile f(node->node(), al::kAlDeviceName);
  abi::OpenAlOut out{};
  EXPECT_EQ(f.Ioctl(abi::OpenAlIn{abi::kAlInterfaceVersion, 0}, &out), Status::INVALID_PARAMETER);
  abi::MapCqRingOut ring{};
  EXPECT_EQ(f.Ioctl(abi::MapCqRingIn{{0}}, &ring), Status::INVALID_CQ_HANDLE);
  abi::CreateMadPoolOut pool{};
  abi::CreateMadPoolIn pool_in{};
  pool_in.al.value = f.Al();
  EXPECT_EQ(f.Ioctl(pool_in, &pool), Status::SUCCESS);  // MAD services are there (issue 4)
  abi::SendSaRequestOut sa{};
  abi::SendSaRequestIn sa_in{};
  sa_in.al.value = f.Al();
  // The SA client's handler refuses a request that names no method and no attribute.
  EXPECT_EQ(f.Ioctl(sa_in, &sa), Status::INVALID_SETTING);
}

TEST(UserFiles, PendingEventIoctlsAreCancelledByCancelPendingAndByClose) {
  auto node = BootDefault("uf-pending");
  ASSERT_TRUE(node);
  UserFile f(node->node(), al::kAlDeviceName);
  const uint64_t al = f.Al();
  abi::RegisterPnpOut reg{};
  ASSERT_EQ(f.Ioctl(abi::RegisterPnpIn{{al}, abi::PnpClass::PORT, {}, 7}, &reg), Status::SUCCESS);
  // The existing ports (ADD and ACTIVE for each of the two), then REG_COMPLETE.
  std::vector<abi::PnpEvent> seen;
  for (int i = 0; i < 5; ++i) {
    abi::GetPnpEventOut out{};
    ASSERT_EQ(f.Ioctl(abi::GetPnpEventIn{reg.reg}, &out), Status::SUCCESS);
    seen.push_back(out.record.event);
    EXPECT_EQ(out.record.reg.value, reg.reg.value);
  }
  EXPECT_EQ(seen, (std::vector<abi::PnpEvent>{abi::PnpEvent::PORT_ADD, abi::PnpEvent::PORT_ACTIVE,
                                              abi::PnpEvent::PORT_ADD, abi::PnpEvent::PORT_ACTIVE,
                                              abi::PnpEvent::REG_COMPLETE}));
  abi::GetPnpEventOut out1{}, out2{};
  PendingIoctl first(f.file(), abi::GetPnpEventIn{reg.reg}, &out1);
  PendingIoctl second(f.file(), abi::GetAsyncEventIn{{al}}, &out2);
  ASSERT_EQ(first.sent, Status::PENDING);
  ASSERT_EQ(second.sent, Status::PENDING);
  EXPECT_EQ(f.Counts(abi::CountScope::FILE).pending_requests, 2u);
  abi::CancelPendingOut canceled{};
  ASSERT_EQ(f.Ioctl(abi::CancelPendingIn{{al}, 0, 0, reg.reg.value}, &canceled), Status::SUCCESS);
  EXPECT_EQ(canceled.canceled_count, 1u);
  ASSERT_TRUE(first.WaitDone());
  EXPECT_EQ(first.status.load(), Status::CANCELED);
  f.Close();  // the other one goes with the file
  ASSERT_TRUE(second.WaitDone());
  EXPECT_EQ(second.status.load(), Status::CANCELED);
  const abi::ObjectCounts counts = al::QueryNodeObjectCounts(node->access_layer());
  EXPECT_EQ(counts.pending_requests, 0u);
  EXPECT_EQ(counts.pnp_reg + counts.al + counts.open_files, 0u);
}

}  // namespace
}  // namespace softib::testing

namespace softib::testing {
namespace {

TEST(UserFiles, CaRemovalReachesTheProcessAndItsFilesCloseCleanly) {
  auto node = BootDefault("uf-remove");
  ASSERT_TRUE(node);
  const auto guids = node->ca_guids();
  UserFile al_file(node->node(), al::kAlDeviceName);
  const uint64_t al = al_file.Al();
  abi::RegisterPnpOut reg{};
  ASSERT_EQ(al_file.Ioctl(abi::RegisterPnpIn{{al}, abi::PnpClass::CA, {}, 3}, &reg),
            Status::SUCCESS);
  for (int i = 0; i < 3; ++i) {  // two CA_ADD, REG_COMPLETE
    abi::GetPnpEventOut out{};
    ASSERT_EQ(al_file.Ioctl(abi::GetPnpEventIn{reg.reg}, &out), Status::SUCCESS);
  }
  UserFile ca_file(node->node(), node->ca_device_name(guids[1]));
  ASSERT_EQ(ca_file.open_status(), Status::SUCCESS);
  abi::OpenCaOut ca{};
  ASSERT_EQ(ca_file.Ioctl(abi::OpenCaIn{{ca_file.Al()}, htobe64(guids[1]), 0}, &ca),
            Status::SUCCESS);
  abi::AllocPdOut pd{};
  ASSERT_EQ(ca_file.Ioctl(abi::AllocPdIn{{ca.ca.value}, abi::PdType{}, 0, 0}, &pd),
            Status::SUCCESS);
  abi::CreateCqOut cq{};
  ASSERT_EQ(ca_file.Ioctl(abi::CreateCqIn{{ca.ca.value}, 16, 0, 0}, &cq), Status::SUCCESS);
  abi::GetPnpEventOut removal{};
  PendingIoctl pnp_wait(al_file.file(), abi::GetPnpEventIn{reg.reg}, &removal);
  ASSERT_EQ(pnp_wait.sent, Status::PENDING);

  ASSERT_EQ(node->RemoveCa(guids[1]), Status::SUCCESS);
  ASSERT_TRUE(pnp_wait.WaitDone());
  EXPECT_EQ(pnp_wait.status.load(), Status::SUCCESS);
  const auto* record =
      static_cast<const abi::GetPnpEventOut*>(pnp_wait.irp->AssociatedIrp.SystemBuffer);
  EXPECT_EQ(record->record.event, abi::PnpEvent::CA_REMOVE);
  EXPECT_EQ(be64toh(record->record.ca_guid), guids[1]);

  // The process's calls on the removed CA fail cleanly; the device is gone for new opens.
  abi::CreateCqOut more{};
  EXPECT_EQ(ca_file.Ioctl(abi::CreateCqIn{{ca.ca.value}, 16, 0, 0}, &more), Status::CA_REMOVED);
  abi::AllocPdOut pd2{};
  EXPECT_EQ(ca_file.Ioctl(abi::AllocPdIn{{ca.ca.value}, abi::PdType{}, 0, 0}, &pd2),
            Status::CA_REMOVED);
  UserFile late(node->node(), node->ca_device_name(guids[1]));
  EXPECT_NE(late.open_status(), Status::SUCCESS);
  abi::ResolveCaDeviceOut resolved{};
  EXPECT_EQ(al_file.Ioctl(abi::ResolveCaDeviceIn{{al}, htobe64(guids[1])}, &resolved),
            Status::INVALID_GUID);

  ca_file.Close();  // the process exits: its objects of the removed CA go
  const abi::ObjectCounts counts = al_file.Counts(abi::CountScope::NODE);
  EXPECT_EQ(counts.ca + counts.pd + counts.cq, 0u);
  EXPECT_EQ(counts.open_files, 1u);
  EXPECT_EQ(counts.pending_requests, 0u);
}

}  // namespace
}  // namespace softib::testing
