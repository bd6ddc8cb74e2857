// Memory-region reregistration through the device's own ReregisterMr: the region keeps its
// handle and table index and gets a new key (the old one dies at once), moves to another PD
// of its CA with the busy rules following it, answers RESOURCE_BUSY while a window is bound,
// and changes nothing on error. RegPhys / ReregPhys take virtually contiguous ranges.
#include <thread>

#include "kernel_client.h"

namespace softib::testing {
namespace {

using abi::AccessFlags;
using abi::MrReregFlags;

constexpr AccessFlags kRemoteRw =
    AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ;

abi::MrAttributes QueryMr(Client& client, uint64_t mr) {
  abi::QueryMrOut out{};
  EXPECT_EQ(kernel::IbQueryMr(client.al(), {{mr}}, out), Status::SUCCESS);
  return out.attributes;
}

Status ReregMem(Client& client, uint64_t mr, MrReregFlags flags, uint64_t pd,
                const abi::MrRegion& region, abi::ReregMemOut* out) {
  abi::ReregMemIn in{};
  in.mr.value = mr;
  in.flags = flags;
  in.pd.value = pd;
  in.region = region;
  return kernel::IbReregMem(client.al(), in, *out);
}

uint64_t AllocPd(Client& client, uint64_t ca) {
  abi::AllocPdOut pd{};
  EXPECT_EQ(client.AllocPd({{ca}, abi::PdType{}, 0, 0}, &pd), Status::SUCCESS);
  return pd.pd.value;
}

// One RDMA WRITE from `a` to `b` with `rkey`; its completion status (the QP of `a` goes to
// Error on a remote access error, so a test does this last when it expects one).
abi::WcStatus WriteWithRkey(Client& client, const Side& a, const Side& b, uint32_t rkey,
                            uint64_t wr_id) {
  abi::SendWorkRequest wr = Write(a, 0, 256, b, 1024, wr_id);
  wr.rkey = rkey;
  uint32_t posted = 0;
  EXPECT_EQ(kernel::IbPostSend(client.al(), a.qp, {&wr, 1}, &posted), Status::SUCCESS);
  const auto wcs = client.PollN(a.cq, 1);
  EXPECT_EQ(wcs.size(), 1u);
  if (wcs.empty()) return abi::WcStatus::GENERAL_ERR;
  EXPECT_EQ(wcs[0].wr_id, wr_id);
  return wcs[0].status;
}

class Rereg : public ::testing::Test {
 protected:
  void SetUp() override {
    node_ = BootDefault(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(node_);
    client_ = std::make_unique<Client>(node_->node());
    guids_ = node_->ca_guids();
    ASSERT_NO_FATAL_FAILURE(client_->Build(guids_[0], 1, &a_));
    ASSERT_NO_FATAL_FAILURE(client_->Build(guids_[1], 2, &b_));
  }
  void ConnectPair() {
    ASSERT_NO_FATAL_FAILURE(client_->Connect(a_, b_));
    ASSERT_NO_FATAL_FAILURE(client_->Connect(b_, a_));
  }
  void TearDown() override {
    client_.reset();
    if (node_) {
      const abi::ObjectCounts counts = al::QueryNodeObjectCounts(node_->access_layer());
      EXPECT_EQ(counts.mr, 0u);
      EXPECT_EQ(counts.pd, 0u);
    }
  }
  std::unique_ptr<stack::NodeStack> node_;
  std::unique_ptr<Client> client_;
  std::vector<uint64_t> guids_;
  Side a_, b_;
};

TEST_F(Rereg, AccessChangeKeepsHandleAndIndexNewKeyWorksOldKeyIsDead) {
  ASSERT_NO_FATAL_FAILURE(ConnectPair());
  const uint32_t old_key = b_.key;
  abi::ReregMemOut out{};
  abi::MrRegion region{};
  region.access = kRemoteRw | AccessFlags::MW_BIND;
  ASSERT_EQ(ReregMem(*client_, b_.mr, MrReregFlags::ACCESS, 0, region, &out), Status::SUCCESS);
  EXPECT_NE(out.lkey, old_key);
  EXPECT_EQ(out.lkey, out.rkey);
  EXPECT_EQ(out.lkey >> 8, old_key >> 8);  // the same table index: reregistered in place
  const abi::MrAttributes attrs = QueryMr(*client_, b_.mr);
  EXPECT_EQ(attrs.lkey, out.lkey);
  EXPECT_EQ(attrs.access, kRemoteRw | AccessFlags::MW_BIND);
  EXPECT_EQ(attrs.pd.value, b_.pd);
  EXPECT_EQ(attrs.local_lb, b_.addr());  // the translation did not change
  EXPECT_EQ(attrs.local_ub, b_.addr(b_.buffer.size() - 1));

  Pattern(a_.buffer, 0, 256, 3);
  EXPECT_EQ(WriteWithRkey(*client_, a_, b_, out.rkey, 1), abi::WcStatus::SUCCESS);
  EXPECT_TRUE(HasPattern(b_.buffer, 1024, 256, 3));
  EXPECT_EQ(WriteWithRkey(*client_, a_, b_, old_key, 2), abi::WcStatus::REM_ACCESS_ERR);
}

TEST_F(Rereg, TranslationChangeMovesTheBoundsAndRemoteAccessFollows) {
  ASSERT_NO_FATAL_FAILURE(ConnectPair());
  abi::ReregMemOut out{};
  abi::MrRegion region{};
  region.vaddr = b_.addr(4096);
  region.length = 4096;
  ASSERT_EQ(ReregMem(*client_, b_.mr, MrReregFlags::TRANSLATION, 0, region, &out), Status::SUCCESS);
  const abi::MrAttributes attrs = QueryMr(*client_, b_.mr);
  EXPECT_EQ(attrs.local_lb, b_.addr(4096));
  EXPECT_EQ(attrs.local_ub, b_.addr(8191));
  EXPECT_EQ(attrs.access, kRemoteRw);  // untouched without ACCESS

  // Inside the new bounds: placed; at the old offset 1024, outside them now: refused.
  abi::SendWorkRequest wr = Write(a_, 0, 256, b_, 4096 + 100, 1);
  wr.rkey = out.rkey;
  Pattern(a_.buffer, 0, 256, 5);
  uint32_t posted = 0;
  ASSERT_EQ(kernel::IbPostSend(client_->al(), a_.qp, {&wr, 1}, &posted), Status::SUCCESS);
  auto wcs = client_->PollN(a_.cq, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, abi::WcStatus::SUCCESS);
  EXPECT_TRUE(HasPattern(b_.buffer, 4096 + 100, 256, 5));
  EXPECT_EQ(WriteWithRkey(*client_, a_, b_, out.rkey, 2), abi::WcStatus::REM_ACCESS_ERR);
  EXPECT_EQ(b_.buffer[1024], 0);
}

TEST_F(Rereg, MovingToAnotherPdOfTheCaReparentsTheRegion) {
  ASSERT_NO_FATAL_FAILURE(ConnectPair());
  const uint64_t pd2 = AllocPd(*client_, b_.ca);
  abi::ReregMemOut out{};
  ASSERT_EQ(ReregMem(*client_, b_.mr, MrReregFlags::PD, pd2, {}, &out), Status::SUCCESS);
  const abi::MrAttributes attrs = QueryMr(*client_, b_.mr);
  EXPECT_EQ(attrs.pd.value, pd2);
  EXPECT_EQ(attrs.lkey, out.lkey);
  EXPECT_EQ(attrs.access, kRemoteRw);

  // The busy rules follow the region: the new PD has a child, the old one only its QP.
  EXPECT_EQ(client_->DeallocPd({{pd2}}), Status::RESOURCE_BUSY);
  // The device checks the PD too: b's QP lives in the old PD, so its responder refuses the
  // region's new key (IBA 10.6.3.1: PD mismatch is a remote access error).
  EXPECT_EQ(WriteWithRkey(*client_, a_, b_, out.rkey, 1), abi::WcStatus::REM_ACCESS_ERR);

  ASSERT_EQ(client_->DeregMr({{b_.mr}}), Status::SUCCESS);
  EXPECT_EQ(client_->DeallocPd({{pd2}}), Status::SUCCESS);
}

TEST_F(Rereg, TheOldPdIsFreeOnceTheRegionMovedOut) {
  const uint64_t pd2 = AllocPd(*client_, b_.ca);
  // A region alone in its PD (b's PD also holds a QP).
  abi::RegMemIn reg{};
  reg.pd.value = pd2;
  reg.region = {b_.addr(), 4096, AccessFlags::LOCAL_WRITE, 0};
  abi::RegMemOut mr{};
  ASSERT_EQ(client_->RegMem(reg, &mr), Status::SUCCESS);
  EXPECT_EQ(client_->DeallocPd({{pd2}}), Status::RESOURCE_BUSY);
  abi::ReregMemOut out{};
  ASSERT_EQ(ReregMem(*client_, mr.mr.value, MrReregFlags::PD, b_.pd, {}, &out), Status::SUCCESS);
  EXPECT_EQ(client_->DeallocPd({{pd2}}), Status::SUCCESS);
  EXPECT_EQ(QueryMr(*client_, mr.mr.value).pd.value, b_.pd);
  EXPECT_EQ(client_->DeregMr({{mr.mr.value}}), Status::SUCCESS);
}

TEST_F(Rereg, ErrorsChangeNothing) {
  const abi::MrAttributes before = QueryMr(*client_, b_.mr);
  abi::ReregMemOut out{};
  abi::MrRegion region{};
  // Remote write without local write (IBA 10.6.3.1).
  region.access = AccessFlags::REMOTE_WRITE;
  EXPECT_EQ(ReregMem(*client_, b_.mr, MrReregFlags::ACCESS, 0, region, &out),
            Status::INVALID_PERMISSION);
  // A zero-length and a wrapping translation.
  region = {b_.addr(), 0, {}, 0};
  EXPECT_EQ(ReregMem(*client_, b_.mr, MrReregFlags::TRANSLATION, 0, region, &out),
            Status::INVALID_SETTING);
  region = {~uint64_t{0} - 10, 100, {}, 0};
  EXPECT_EQ(ReregMem(*client_, b_.mr, MrReregFlags::TRANSLATION, 0, region, &out),
            Status::INVALID_SETTING);
  // PD without a PD, a PD of the other CA.
  EXPECT_EQ(ReregMem(*client_, b_.mr, MrReregFlags::PD, 0, {}, &out), Status::INVALID_PD_HANDLE);
  EXPECT_EQ(ReregMem(*client_, b_.mr, MrReregFlags::PD, a_.pd, {}, &out),
            Status::INVALID_PD_HANDLE);
  // No flag at all.
  EXPECT_EQ(ReregMem(*client_, b_.mr, MrReregFlags{}, 0, {}, &out), Status::INVALID_SETTING);

  const abi::MrAttributes after = QueryMr(*client_, b_.mr);
  EXPECT_EQ(std::memcmp(&before, &after, sizeof before), 0);
}

TEST_F(Rereg, ABoundWindowMakesItBusyAndNothingChanges) {
  ASSERT_NO_FATAL_FAILURE(ConnectPair());
  abi::ReregMemOut out{};
  abi::MrRegion region{};
  region.access = kRemoteRw | AccessFlags::MW_BIND;
  ASSERT_EQ(ReregMem(*client_, a_.mr, MrReregFlags::ACCESS, 0, region, &out), Status::SUCCESS);
  abi::CreateMwOut mw{};
  ASSERT_EQ(kernel::IbCreateMw(client_->al(), {{a_.pd}, abi::MwType::TYPE1, 0}, mw),
            Status::SUCCESS);
  abi::MwBindParams bind{};
  bind.wr_id = 42;
  bind.vaddr = a_.addr();
  bind.length = 4096;
  bind.access = AccessFlags::REMOTE_READ;
  bind.send_flags = abi::SendFlags::SIGNALED;
  uint32_t rkey = 0;
  ASSERT_EQ(kernel::IbBindMw(client_->al(), mw.mw.value, a_.qp, a_.mr, bind, &rkey),
            Status::SUCCESS);
  const auto wcs = client_->PollN(a_.cq, 1);
  ASSERT_EQ(wcs.size(), 1u);
  ASSERT_EQ(wcs[0].status, abi::WcStatus::SUCCESS);
  EXPECT_EQ(wcs[0].opcode, abi::WcOpcode::MW_BIND);

  const abi::MrAttributes before = QueryMr(*client_, a_.mr);
  region.access = kRemoteRw;
  EXPECT_EQ(ReregMem(*client_, a_.mr, MrReregFlags::ACCESS, 0, region, &out),
            Status::RESOURCE_BUSY);
  const uint64_t pd2 = AllocPd(*client_, a_.ca);
  EXPECT_EQ(ReregMem(*client_, a_.mr, MrReregFlags::PD, pd2, {}, &out), Status::RESOURCE_BUSY);
  const abi::MrAttributes after = QueryMr(*client_, a_.mr);
  EXPECT_EQ(std::memcmp(&before, &after, sizeof before), 0);
  EXPECT_EQ(client_->DeallocPd({{pd2}}), Status::SUCCESS);  // it never gained the region

  ASSERT_EQ(kernel::IbDestroyMw(client_->al(), {{mw.mw.value}}), Status::SUCCESS);
  EXPECT_EQ(ReregMem(*client_, a_.mr, MrReregFlags::ACCESS, 0, region, &out), Status::SUCCESS);
}

// Two threads move one region back and forth between two PDs while a third deregisters a
// second region and queries the first: every answer is SUCCESS or RESOURCE_BUSY, and the
// region ends in the PD its last successful move named.
TEST_F(Rereg, ConcurrentMovesAreSerializedAndLeaveAConsistentRegion) {
  const uint64_t pd2 = AllocPd(*client_, b_.ca);
  std::atomic<int> unexpected{0};
  auto mover = [&](uint64_t to_first, uint64_t to_second) {
    for (int i = 0; i < 200; ++i) {
      abi::ReregMemOut out{};
      const Status s =
          ReregMem(*client_, b_.mr, MrReregFlags::PD, i % 2 ? to_second : to_first, {}, &out);
      if (s != Status::SUCCESS && s != Status::RESOURCE_BUSY) unexpected.fetch_add(1);
    }
  };
  std::thread t1(mover, pd2, b_.pd);
  std::thread t2(mover, b_.pd, pd2);
  for (int i = 0; i < 200; ++i) {
    abi::QueryMrOut out{};
    const Status s = kernel::IbQueryMr(client_->al(), {{b_.mr}}, out);
    if (s != Status::SUCCESS ||
        (out.attributes.pd.value != pd2 && out.attributes.pd.value != b_.pd))
      unexpected.fetch_add(1);
  }
  t1.join();
  t2.join();
  EXPECT_EQ(unexpected.load(), 0);
  const uint64_t home = QueryMr(*client_, b_.mr).pd.value;
  const uint64_t other = home == pd2 ? b_.pd : pd2;
  // Exactly one of the PDs holds the region: the other (if it is pd2) is free to go.
  if (other == pd2) {
    EXPECT_EQ(client_->DeallocPd({{pd2}}), Status::SUCCESS);
  } else {
    EXPECT_EQ(client_->DeallocPd({{pd2}}), Status::RESOURCE_BUSY);
    abi::ReregMemOut out{};
    ASSERT_EQ(ReregMem(*client_, b_.mr, MrReregFlags::PD, b_.pd, {}, &out), Status::SUCCESS);
    EXPECT_EQ(client_->DeallocPd({{pd2}}), Status::SUCCESS);
  }
}

// ---- physical regions ------------------------------------------------------------------

Status RegPhys(Client& client, uint64_t pd, std::span<const abi::PhysRange> ranges, uint32_t offset,
               uint64_t length, abi::RegPhysOut* out) {
  abi::RegPhysIn in{};
  in.pd.value = pd;
  in.length = length;
  in.buf_offset = offset;
  in.hca_page_size = 4096;
  in.access = kRemoteRw;
  in.num_ranges = static_cast<uint32_t>(ranges.size());
  return kernel::IbRegPhys(client.al(), in, ranges, *out);
}

TEST_F(Rereg, RegPhysTakesVirtuallyContiguousRangesAsOneRegion) {
  ASSERT_NO_FATAL_FAILURE(ConnectPair());
  const abi::PhysRange ranges[] = {
      {b_.addr(0), 4096}, {b_.addr(4096), 8192}, {b_.addr(12288), 4096}};
  abi::RegPhysOut out{};
  ASSERT_EQ(RegPhys(*client_, b_.pd, ranges, 100, 16384 - 100, &out), Status::SUCCESS);
  EXPECT_EQ(out.iova, b_.addr(100));
  const abi::MrAttributes attrs = QueryMr(*client_, out.mr.value);
  EXPECT_EQ(attrs.local_lb, b_.addr(100));
  EXPECT_EQ(attrs.local_ub, b_.addr(16383));
  // A write across the ranges' seams lands.
  abi::SendWorkRequest wr = Write(a_, 0, 9000, b_, 3000, 1);
  wr.rkey = out.rkey;
  Pattern(a_.buffer, 0, 9000, 11);
  uint32_t posted = 0;
  ASSERT_EQ(kernel::IbPostSend(client_->al(), a_.qp, {&wr, 1}, &posted), Status::SUCCESS);
  const auto wcs = client_->PollN(a_.cq, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, abi::WcStatus::SUCCESS);
  EXPECT_TRUE(HasPattern(b_.buffer, 3000, 9000, 11));
  EXPECT_EQ(client_->DeregMr({{out.mr.value}}), Status::SUCCESS);
}

TEST_F(Rereg, RegPhysRefusesGapsAsUnsupportedAndMalformedRangesAsInvalid) {
  abi::RegPhysOut out{};
  const abi::PhysRange gap[] = {{b_.addr(0), 4096}, {b_.addr(8192), 4096}};
  EXPECT_EQ(RegPhys(*client_, b_.pd, gap, 0, 8192, &out), Status::UNSUPPORTED);
  const abi::PhysRange overlap[] = {{b_.addr(0), 8192}, {b_.addr(4096), 4096}};
  EXPECT_EQ(RegPhys(*client_, b_.pd, overlap, 0, 8192, &out), Status::UNSUPPORTED);
  const abi::PhysRange zero[] = {{b_.addr(0), 4096}, {b_.addr(4096), 0}};
  EXPECT_EQ(RegPhys(*client_, b_.pd, zero, 0, 4096, &out), Status::INVALID_SETTING);
  const abi::PhysRange wrap[] = {{~uint64_t{0} - 100, 4096}};
  EXPECT_EQ(RegPhys(*client_, b_.pd, wrap, 0, 10, &out), Status::INVALID_SETTING);
  const abi::PhysRange two[] = {{b_.addr(0), 4096}, {b_.addr(4096), 4096}};
  EXPECT_EQ(RegPhys(*client_, b_.pd, two, 4096, 4097, &out), Status::INVALID_SETTING);
  EXPECT_EQ(RegPhys(*client_, b_.pd, two, 8193, 1, &out), Status::INVALID_SETTING);
  EXPECT_EQ(RegPhys(*client_, b_.pd, {}, 0, 1, &out), Status::INVALID_SETTING);
  EXPECT_EQ(al::QueryNodeObjectCounts(node_->access_layer()).mr, 2u);  // a's and b's only
}

TEST_F(Rereg, ReregPhysMovesTranslationAndPdOrChangesNothing) {
  const abi::PhysRange ranges[] = {{b_.addr(0), 4096}};
  abi::RegPhysOut reg{};
  ASSERT_EQ(RegPhys(*client_, b_.pd, ranges, 0, 4096, &reg), Status::SUCCESS);
  const uint64_t pd2 = AllocPd(*client_, b_.ca);

  abi::ReregPhysIn in{};
  in.mr.value = reg.mr.value;
  in.flags = MrReregFlags::TRANSLATION | MrReregFlags::PD | MrReregFlags::ACCESS;
  in.pd.value = pd2;
  in.buf_offset = 512;
  in.length = 8192;
  in.hca_page_size = 4096;
  in.access = AccessFlags::LOCAL_WRITE;
  const abi::PhysRange gap[] = {{b_.addr(8192), 4096}, {b_.addr(16384), 8192}};
  in.num_ranges = 2;
  abi::ReregPhysOut out{};
  const abi::MrAttributes before = QueryMr(*client_, reg.mr.value);
  EXPECT_EQ(kernel::IbReregPhys(client_->al(), in, gap, out), Status::UNSUPPORTED);
  const abi::MrAttributes unchanged = QueryMr(*client_, reg.mr.value);
  EXPECT_EQ(std::memcmp(&before, &unchanged, sizeof before), 0);

  const abi::PhysRange contiguous[] = {{b_.addr(8192), 4096}, {b_.addr(12288), 8192}};
  ASSERT_EQ(kernel::IbReregPhys(client_->al(), in, contiguous, out), Status::SUCCESS);
  EXPECT_EQ(out.iova, b_.addr(8192 + 512));
  EXPECT_EQ(out.lkey >> 8, reg.lkey >> 8);
  EXPECT_NE(out.lkey, reg.lkey);
  const abi::MrAttributes attrs = QueryMr(*client_, reg.mr.value);
  EXPECT_EQ(attrs.pd.value, pd2);
  EXPECT_EQ(attrs.local_lb, b_.addr(8192 + 512));
  EXPECT_EQ(attrs.local_ub, b_.addr(8192 + 512 + 8192 - 1));
  EXPECT_EQ(attrs.access, AccessFlags::LOCAL_WRITE);
  EXPECT_EQ(attrs.lkey, out.lkey);

  // ACCESS alone: the ranges do not count.
  in.flags = MrReregFlags::ACCESS;
  in.num_ranges = 0;
  in.access = kRemoteRw;
  ASSERT_EQ(kernel::IbReregPhys(client_->al(), in, {}, out), Status::SUCCESS);
  EXPECT_EQ(out.iova, b_.addr(8192 + 512));
  EXPECT_EQ(client_->DeallocPd({{pd2}}), Status::RESOURCE_BUSY);
  EXPECT_EQ(client_->DeregMr({{reg.mr.value}}), Status::SUCCESS);
  EXPECT_EQ(client_->DeallocPd({{pd2}}), Status::SUCCESS);
}

}  // namespace
}  // namespace softib::testing
