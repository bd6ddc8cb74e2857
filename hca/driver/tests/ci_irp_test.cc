// The CI verbs as IRPs (idl/ci.idl) against the HCA driver: the control path through the
// generated IRP builders, in normal and in pend mode (every IRP completed later from a
// DPC), where the driver pends on its own (a QP to Error, a CQ destroy), whose memory a
// registration names (RequestorMode and the IRP's file: a real child process, the kernel,
// a forged request), physical registration over discontiguous buffers, and removal.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <vector>

#include "kernel/hca/ci_irp.h"
#include "ring_fixture.h"
#include "softib/kernel/event.h"
#include "softib/kernel/verb_support.h"
#include "tied_child.h"

namespace softib::hca::testing {
namespace {

using kernel::ProcessorMode;
constexpr ProcessorMode kKernel = ProcessorMode::kKernelMode;
constexpr ProcessorMode kUser = ProcessorMode::kUserMode;
constexpr auto kMrAccess = abi::AccessFlags::LOCAL_WRITE | abi::AccessFlags::REMOTE_WRITE;

// What a CI IRP's completion routine saw. The output is read there, from the system buffer
// (the copy to the builder's `out` happens after the routines).
struct Completion {
  kernel::KEvent done{kernel::EventType::kNotification};
  Status status = Status::UNKNOWN_ERROR;
  uint64_t information = 0;
  bool pended = false;
  std::vector<uint8_t> output;

  Status Wait() { return kernel::KeWaitForSingleObject(&done, kLimit); }
};

kernel::CompletionAction OnCompletion(kernel::DeviceObject*, kernel::Irp* irp, void* context) {
  auto* c = static_cast<Completion*>(context);
  c->status = irp->IoStatus.Status;
  c->information = irp->IoStatus.Information;
  c->pended = irp->PendingReturned;
  const auto* bytes = static_cast<const uint8_t*>(irp->AssociatedIrp.SystemBuffer);
  if (bytes != nullptr) c->output.assign(bytes, bytes + c->information);
  c->done.Set();
  return kernel::CompletionAction::kContinueCompletion;
}

class CiIrpTest : public RingFixture, public ::testing::WithParamInterface<bool> {
 protected:
  bool PendCi() const override { return GetParam(); }

  void SetUp() override {
    RingFixture::SetUp();
    if (HasFatalFailure()) return;
    name_ = ci::CaDeviceName(sides_[0].guid);
    ASSERT_EQ(kernel::IoCreateFile(&node_, name_.c_str(), kKernel, &kernel_file_), Status::SUCCESS);
  }
  void TearDown() override {
    if (kernel_file_ != nullptr) kernel::IoCloseFile(kernel_file_);
    RingFixture::TearDown();
  }

  kernel::DeviceObject* ca() { return sides_[0].device; }

  // An RDMA WRITE of `length` bytes `fill` from side 1 to `remote_addr` of rkey `rkey` on
  // side 0 (their QPs connected by Connect()).
  void WriteFromPeer(uint64_t remote_addr, uint32_t rkey, uint32_t length, uint8_t fill) {
    Side& s = sides_[1];
    std::fill_n(s.buffer.begin(), length, fill);
    abi::SendWorkRequest wr = Send(s, 7, abi::WrType::RDMA_WRITE, 0, length);
    wr.remote_addr = remote_addr;
    wr.rkey = rkey;
    ASSERT_EQ(PostSend(s, wr), Status::SUCCESS);
    abi::WorkCompletion wc{};
    ASSERT_EQ(PollOne(s, &wc), Status::SUCCESS);
    EXPECT_EQ(wc.status, abi::WcStatus::SUCCESS);
  }

  std::string name_;
  kernel::FileObject* kernel_file_ = nullptr;
};

TEST_P(CiIrpTest, ControlVerbsThroughIrps) {
  kernel::FileObject* f = kernel_file_;
  abi::CiAllocPdOut pd{};
  ASSERT_EQ(kernel::CallCiAllocPdIrp(ca(), f, kKernel, &pd), Status::SUCCESS);
  abi::CiCreateCqOut cq{};
  ASSERT_EQ(kernel::CallCiCreateCqIrp(ca(), f, kKernel, abi::CiCreateCqIn{100, 0}, &cq),
            Status::SUCCESS);
  EXPECT_GE(cq.actual_size, 100u);
  abi::CiQueryCqOut queried{};
  EXPECT_EQ(kernel::CallCiQueryCqIrp(ca(), f, kKernel, abi::CiQueryCqIn{cq.cq}, &queried),
            Status::SUCCESS);
  EXPECT_EQ(queried.size, cq.actual_size);

  abi::CiCreateQpIn qp_in{};
  qp_in.pd = pd.pd;
  qp_in.send_cq = cq.cq;
  qp_in.recv_cq = cq.cq;
  qp_in.params.qp_type = abi::QpType::RC;
  qp_in.params.caps = {16, 16, 1, 1, 0, 0};
  abi::CiCreateQpOut qp{};
  ASSERT_EQ(kernel::CallCiCreateQpIrp(ca(), f, kKernel, qp_in, &qp), Status::SUCCESS);
  EXPECT_GE(qp.caps.sq_depth, 16u);

  abi::CiModifyQpIn init{};
  init.qpn = qp.qpn;
  init.attributes.mask = abi::QpAttrMask::STATE | abi::QpAttrMask::PKEY_INDEX |
                         abi::QpAttrMask::PORT | abi::QpAttrMask::ACCESS_FLAGS;
  init.attributes.state = abi::QpState::INIT;
  init.attributes.port_num = 1;
  EXPECT_EQ(kernel::CallCiModifyQpIrp(ca(), f, kKernel, init), Status::SUCCESS);
  abi::CiQueryQpOut attributes{};
  EXPECT_EQ(kernel::CallCiQueryQpIrp(ca(), f, kKernel, abi::CiQueryQpIn{qp.qpn}, &attributes),
            Status::SUCCESS);
  EXPECT_EQ(attributes.attributes.state, abi::QpState::INIT);
  EXPECT_EQ(attributes.attributes.qp_num, qp.qpn);

  // To Error: the driver pends it in either mode (it completes after the flush's news).
  abi::CiModifyQpIn to_error{};
  to_error.qpn = qp.qpn;
  to_error.attributes.mask = abi::QpAttrMask::STATE;
  to_error.attributes.state = abi::QpState::ERROR;
  Completion modified;
  EXPECT_EQ(kernel::SendCiModifyQpIrp(ca(), f, kKernel, to_error, &OnCompletion, &modified),
            Status::PENDING);
  ASSERT_EQ(modified.Wait(), Status::SUCCESS);
  EXPECT_EQ(modified.status, Status::SUCCESS);
  EXPECT_TRUE(modified.pended);
  EXPECT_EQ(kernel::CallCiQueryQpIrp(ca(), f, kKernel, abi::CiQueryQpIn{qp.qpn}, &attributes),
            Status::SUCCESS);
  EXPECT_EQ(attributes.attributes.state, abi::QpState::ERROR);

  // The CA's attributes with room for two ports: one written.
  std::vector<uint8_t> ca_out(sizeof(abi::CiQueryCaOut) + 2 * sizeof(abi::PortAttributes));
  EXPECT_EQ(kernel::CallCiQueryCaIrp(ca(), f, kKernel, ca_out.data(),
                                     static_cast<uint32_t>(ca_out.size())),
            Status::SUCCESS);
  const auto* ca_attributes = reinterpret_cast<const abi::CiQueryCaOut*>(ca_out.data());
  EXPECT_EQ(ca_attributes->num_ports, 1u);
  EXPECT_EQ(ca_attributes->attributes.num_ports, 1u);
  EXPECT_EQ(reinterpret_cast<const abi::PortAttributes*>(ca_out.data() + sizeof(abi::CiQueryCaOut))
                ->port_num,
            1u);
  std::vector<uint8_t> gid_out(sizeof(abi::CiQueryGidTableOut) + 4 * sizeof(abi::Gid));
  EXPECT_EQ(kernel::CallCiQueryGidTableIrp(ca(), f, kKernel, abi::CiQueryGidTableIn{1, 0, 0, 0},
                                           gid_out.data(), static_cast<uint32_t>(gid_out.size())),
            Status::SUCCESS);
  EXPECT_EQ(reinterpret_cast<const abi::CiQueryGidTableOut*>(gid_out.data())->num_gids, 4u);
  EXPECT_EQ(kernel::CallCiQueryGidTableIrp(ca(), f, kKernel, abi::CiQueryGidTableIn{2, 0, 0, 0},
                                           gid_out.data(), static_cast<uint32_t>(gid_out.size())),
            Status::INVALID_PORT);

  // A ring map (PASSIVE): the fd is the sender's.
  abi::CiMapCqRingOut ring{};
  ASSERT_EQ(kernel::CallCiMapCqRingIrp(ca(), f, kKernel, abi::CiMapCqRingIn{cq.cq}, &ring),
            Status::SUCCESS);
  EXPECT_GE(ring.fd, 0);
  EXPECT_GE(ring.ring.num_entries, cq.actual_size);
  EXPECT_EQ(close(ring.fd), 0);
  EXPECT_EQ(kernel::CallCiMapCqRingIrp(ca(), f, kKernel, abi::CiMapCqRingIn{cq.cq + 1000}, &ring),
            Status::INVALID_CQ_HANDLE);
  EXPECT_EQ(ring.fd, -1);

  EXPECT_EQ(kernel::CallCiDestroyCqIrp(ca(), f, kKernel, abi::CiDestroyCqIn{cq.cq}),
            Status::RESOURCE_BUSY);  // the QP uses it
  EXPECT_EQ(kernel::CallCiDestroyQpIrp(ca(), f, kKernel, abi::CiDestroyQpIn{qp.qpn}),
            Status::SUCCESS);
  // A CQ's destruction pends in either mode (completed after the DPCs queued before it).
  Completion destroyed;
  EXPECT_EQ(kernel::SendCiDestroyCqIrp(ca(), f, kKernel, abi::CiDestroyCqIn{cq.cq}, &OnCompletion,
                                       &destroyed),
            Status::PENDING);
  ASSERT_EQ(destroyed.Wait(), Status::SUCCESS);
  EXPECT_EQ(destroyed.status, Status::SUCCESS);
  EXPECT_EQ(kernel::CallCiQueryCqIrp(ca(), f, kKernel, abi::CiQueryCqIn{cq.cq}, &queried),
            Status::INVALID_CQ_HANDLE);
  EXPECT_EQ(kernel::CallCiFreePdIrp(ca(), f, kKernel, abi::CiFreePdIn{pd.pd}), Status::SUCCESS);
  EXPECT_EQ(kernel::CallCiFreePdIrp(ca(), f, kKernel, abi::CiFreePdIn{pd.pd}),
            Status::INVALID_PD_HANDLE);
}

// Pend mode completes every CI IRP later from a DPC, rejections included; normal mode
// completes what is immediate inline.
TEST_P(CiIrpTest, PendModeCompletesEveryIrpLater) {
  ASSERT_NO_FATAL_FAILURE(MakeQp(sides_[0]));
  const bool pend = GetParam();
  abi::CiQueryCqOut out{};
  Completion queried;
  const Status sent = kernel::SendCiQueryCqIrp(
      ca(), kernel_file_, kKernel, abi::CiQueryCqIn{sides_[0].cq}, &out, &OnCompletion, &queried);
  EXPECT_EQ(sent, pend ? Status::PENDING : Status::SUCCESS);
  ASSERT_EQ(queried.Wait(), Status::SUCCESS);
  EXPECT_EQ(queried.status, Status::SUCCESS);
  EXPECT_EQ(queried.pended, pend);
  ASSERT_EQ(queried.output.size(), sizeof(abi::CiQueryCqOut));
  abi::CiQueryCqOut seen{};
  std::memcpy(&seen, queried.output.data(), sizeof seen);
  EXPECT_GE(seen.size, 32u);

  abi::CiCreateCqOut created{};
  Completion rejected;
  const Status bad = kernel::SendCiCreateCqIrp(ca(), kernel_file_, kKernel,
                                               abi::CiCreateCqIn{16, 1}, &created, &OnCompletion,
                                               &rejected);  // a reserved field set
  EXPECT_EQ(bad, pend ? Status::PENDING : Status::INVALID_PARAMETER);
  ASSERT_EQ(rejected.Wait(), Status::SUCCESS);
  EXPECT_EQ(rejected.status, Status::INVALID_PARAMETER);
  EXPECT_EQ(rejected.information, 0u);
  EXPECT_EQ(rejected.pended, pend);
}

TEST_P(CiIrpTest, UserModeRegistrationReachesTheProcessOfTheFile) {
  ASSERT_NO_FATAL_FAILURE(Connect());
  // The buffer exists at the same address in the child; after the fork the copies are
  // separate, so what lands in the child's came through its pid.
  static std::array<uint8_t, 4096> buffer;
  buffer.fill(0x11);
  int to_child[2], to_parent[2];
  ASSERT_EQ(pipe(to_child), 0);
  ASSERT_EQ(pipe(to_parent), 0);
  const pid_t parent = getpid();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    test_support::DieWithParent(parent);
    buffer.fill(0x22);
    char c = 0;
    if (write(to_parent[1], &c, 1) != 1) _exit(2);
    if (read(to_child[0], &c, 1) != 1) _exit(2);  // the peer has written into us
    for (std::size_t i = 0; i < 128; ++i) {
      if (buffer[i] != (i < 64 ? 0x5A : 0x22)) _exit(1);
    }
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(to_parent[0], &c, 1), 1);

  kernel::FileObject* user_file = nullptr;
  ASSERT_EQ(kernel::IoCreateFileForProcess(&node_, name_.c_str(), child, &user_file),
            Status::SUCCESS);
  // The file states a DMA offset (as for a 32-bit process under qemu-i386): the process
  // names its memory `offset` below where it is.
  constexpr uint64_t kOffset = 0x1000;
  user_file->DmaAddressOffset = kOffset;
  const uint64_t vaddr = reinterpret_cast<uint64_t>(buffer.data()) - kOffset;
  abi::CiRegisterMrIn reg{sides_[0].pd, kMrAccess, vaddr, buffer.size()};
  abi::CiRegisterMrOut mr{};
  // A forged request (kernel mode on the user's file) and user requests without a user's
  // file are refused before anything is registered.
  EXPECT_EQ(kernel::CallCiRegisterMrIrp(ca(), user_file, kKernel, reg, &mr),
            Status::INVALID_PERMISSION);
  EXPECT_EQ(kernel::CallCiRegisterMrIrp(ca(), kernel_file_, kUser, reg, &mr),
            Status::INVALID_PERMISSION);
  EXPECT_EQ(kernel::CallCiRegisterMrIrp(ca(), nullptr, kUser, reg, &mr),
            Status::INVALID_PERMISSION);
  ASSERT_EQ(kernel::CallCiRegisterMrIrp(ca(), user_file, kUser, reg, &mr), Status::SUCCESS);
  ASSERT_NO_FATAL_FAILURE(WriteFromPeer(vaddr, mr.key, 64, 0x5A));
  EXPECT_EQ(buffer[0], 0x11);  // ours is untouched: the write reached the child
  ASSERT_EQ(write(to_child[1], &c, 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(kernel::CallCiDeregisterMrIrp(ca(), user_file, kUser, abi::CiDeregisterMrIn{mr.key}),
            Status::SUCCESS);
  kernel::IoCloseFile(user_file);
  for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) close(fd);
}

TEST_P(CiIrpTest, KernelModeRegistrationReachesKernelMemory) {
  ASSERT_NO_FATAL_FAILURE(Connect());
  for (kernel::FileObject* file : {kernel_file_, static_cast<kernel::FileObject*>(nullptr)}) {
    std::vector<uint8_t> memory(4096, 0x11);
    const uint64_t vaddr = reinterpret_cast<uint64_t>(memory.data());
    abi::CiRegisterMrOut mr{};
    ASSERT_EQ(kernel::CallCiRegisterMrIrp(
                  ca(), file, kKernel,
                  abi::CiRegisterMrIn{sides_[0].pd, kMrAccess, vaddr, memory.size()}, &mr),
              Status::SUCCESS);
    ASSERT_NO_FATAL_FAILURE(WriteFromPeer(vaddr + 100, mr.key, 64, 0x5A));
    EXPECT_EQ(memory[99], 0x11);
    EXPECT_EQ(memory[100], 0x5A);
    EXPECT_EQ(memory[163], 0x5A);
    EXPECT_EQ(memory[164], 0x11);
    EXPECT_EQ(kernel::CallCiDeregisterMrIrp(ca(), file, kKernel, abi::CiDeregisterMrIn{mr.key}),
              Status::SUCCESS);
  }
}

TEST_P(CiIrpTest, PhysicalRegistrationJoinsDiscontiguousBuffers) {
  ASSERT_NO_FATAL_FAILURE(Connect());
  std::vector<uint8_t> first(4096, 0x11), second(4096, 0x11);
  const abi::PhysRange ranges[] = {{reinterpret_cast<uint64_t>(first.data()), first.size()},
                                   {reinterpret_cast<uint64_t>(second.data()), second.size()}};
  constexpr uint64_t kIova = 0x7000'0000;
  const abi::CiRegisterPhysMrIn in{sides_[0].pd, kMrAccess, kIova, 2, 0};
  abi::CiRegisterPhysMrOut mr{};
  EXPECT_EQ(kernel::CallCiRegisterPhysMrIrp(ca(), nullptr, kUser, in, ranges, &mr),
            Status::INVALID_PERMISSION);  // no file: refused by the dispatch
  EXPECT_EQ(kernel::CallCiRegisterPhysMrIrp(
                ca(), kernel_file_, kKernel,
                abi::CiRegisterPhysMrIn{sides_[0].pd, kMrAccess, kIova, 0, 0}, {}, &mr),
            Status::INVALID_PARAMETER);  // no range
  ASSERT_EQ(kernel::CallCiRegisterPhysMrIrp(ca(), kernel_file_, kKernel, in, ranges, &mr),
            Status::SUCCESS);
  // 64 bytes across the end of the first buffer: 32 at its end, 32 at the second's start.
  ASSERT_NO_FATAL_FAILURE(WriteFromPeer(kIova + first.size() - 32, mr.key, 64, 0x5A));
  EXPECT_EQ(first[first.size() - 33], 0x11);
  EXPECT_EQ(first[first.size() - 32], 0x5A);
  EXPECT_EQ(first[first.size() - 1], 0x5A);
  EXPECT_EQ(second[0], 0x5A);
  EXPECT_EQ(second[31], 0x5A);
  EXPECT_EQ(second[32], 0x11);
  EXPECT_EQ(
      kernel::CallCiDeregisterMrIrp(ca(), kernel_file_, kKernel, abi::CiDeregisterMrIn{mr.key}),
      Status::SUCCESS);
}

TEST_P(CiIrpTest, PhysicalRegistrationIsForKernelRequestorsOnly) {
  ASSERT_NO_FATAL_FAILURE(MakeQp(sides_[0]));
  kernel::FileObject* user_file = nullptr;
  ASSERT_EQ(kernel::IoCreateFileForProcess(&node_, name_.c_str(), getpid(), &user_file),
            Status::SUCCESS);
  std::vector<uint8_t> memory(4096);
  const abi::PhysRange range{reinterpret_cast<uint64_t>(memory.data()), memory.size()};
  abi::CiRegisterPhysMrOut mr{};
  EXPECT_EQ(
      kernel::CallCiRegisterPhysMrIrp(
          ca(), user_file, kUser, abi::CiRegisterPhysMrIn{sides_[0].pd, kMrAccess, 0x1000, 1, 0},
          std::span(&range, 1), &mr),
      Status::INVALID_PERMISSION);
  kernel::IoCloseFile(user_file);
}

TEST_P(CiIrpTest, RemovedCaAnswersCaRemovedButReleasesSucceed) {
  ASSERT_NO_FATAL_FAILURE(MakeQp(sides_[0]));
  kernel::FileObject* f = kernel_file_;
  ASSERT_EQ(HcaRemoveCa(driver_, sides_[0].guid), Status::SUCCESS);
  abi::CiAllocPdOut pd{};
  EXPECT_EQ(kernel::CallCiAllocPdIrp(ca(), f, kKernel, &pd), Status::CA_REMOVED);
  abi::CiQueryCqOut size{};
  EXPECT_EQ(kernel::CallCiQueryCqIrp(ca(), f, kKernel, abi::CiQueryCqIn{sides_[0].cq}, &size),
            Status::CA_REMOVED);
  EXPECT_EQ(kernel::CallCiDestroyQpIrp(ca(), f, kKernel, abi::CiDestroyQpIn{sides_[0].qpn}),
            Status::SUCCESS);
  EXPECT_EQ(kernel::CallCiDestroyCqIrp(ca(), f, kKernel, abi::CiDestroyCqIn{sides_[0].cq}),
            Status::SUCCESS);
  EXPECT_EQ(kernel::CallCiDeregisterMrIrp(ca(), f, kKernel, abi::CiDeregisterMrIn{sides_[0].key}),
            Status::SUCCESS);
  EXPECT_EQ(kernel::CallCiFreePdIrp(ca(), f, kKernel, abi::CiFreePdIn{sides_[0].pd}),
            Status::SUCCESS);
}

INSTANTIATE_TEST_SUITE_P(Modes, CiIrpTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("Pend") : std::string("Normal");
                         });

}  // namespace
}  // namespace softib::hca::testing
