// The ring format is one layout for 32- and 64-bit processes: the generated header's
// static_asserts hold in both builds (this file compiles in the m32 tree too), and a
// golden digest of a formatted, filled region is the same number in both.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <limits>

#include "test_region.h"

namespace softib::rings {
namespace {

using testing::MakeRegion;
using testing::Ring;

static_assert(sizeof(RingControl) == 6 * abi::kRingLineBytes);
static_assert(offsetof(RingControl, producer) == 1 * abi::kRingLineBytes);
static_assert(offsetof(RingControl, consumer) == 2 * abi::kRingLineBytes);
static_assert(offsetof(RingControl, doorbell) == 3 * abi::kRingLineBytes);
static_assert(offsetof(RingControl, arm) == 4 * abi::kRingLineBytes);
static_assert(offsetof(RingControl, status) == 5 * abi::kRingLineBytes);
static_assert(sizeof(abi::SendWorkRequest) == 368 && alignof(abi::SendWorkRequest) <= 8);
static_assert(sizeof(abi::RecvWorkRequest) == 272);
static_assert(sizeof(abi::WorkCompletion) == 48);
static_assert(sizeof(abi::RingMapping) == 32);
static_assert(std::atomic_ref<uint32_t>::required_alignment == alignof(uint32_t));

TEST(RingLayoutTest, RegionLayoutMakesMappingsThatCheck) {
  RegionLayout layout;
  RingMapping send{}, recv{}, cq{};
  ASSERT_TRUE(layout.Add(RingKind::SEND, 64, &send));
  ASSERT_TRUE(layout.Add(RingKind::RECV, 2, &recv));
  ASSERT_TRUE(layout.Add(RingKind::CQ, 65536, &cq));
  EXPECT_FALSE(layout.Add(RingKind::CQ, 3, &cq)) << "not a power of two";
  EXPECT_FALSE(layout.Add(RingKind::CQ, 1, &cq));
  EXPECT_FALSE(layout.Add(RingKind::CQ, 131072, &cq));
  EXPECT_EQ(send.doorbell_offset, 0u);
  EXPECT_EQ(recv.doorbell_offset % kRingAlignment, 0u);
  EXPECT_GE(recv.doorbell_offset, send.ring_offset + send.ring_size);
  EXPECT_TRUE(CheckMapping(send, layout.size(), RingKind::SEND));
  EXPECT_TRUE(CheckMapping(recv, layout.size(), RingKind::RECV));
  EXPECT_TRUE(CheckMapping(cq, layout.size(), RingKind::CQ));
  EXPECT_FALSE(CheckMapping(cq, cq.ring_offset + cq.ring_size - 1, RingKind::CQ))
      << "object too small";
  EXPECT_TRUE(CheckMapping(cq, cq.ring_offset + cq.ring_size, RingKind::CQ));
  EXPECT_FALSE(CheckMapping(send, layout.size(), RingKind::CQ)) << "wrong entry size";
}

TEST(RingLayoutTest, RoundUpEntries) {
  EXPECT_EQ(RoundUpEntries(0), 2u);
  EXPECT_EQ(RoundUpEntries(3), 4u);
  EXPECT_EQ(RoundUpEntries(64), 64u);
  EXPECT_EQ(RoundUpEntries(65536), 65536u);
  EXPECT_EQ(RoundUpEntries(65537), 0u);
}

TEST(RingLayoutTest, CheckMappingRejectsHostileValues) {
  RegionLayout layout;
  RingMapping good{};
  ASSERT_TRUE(layout.Add(RingKind::CQ, 16, &good));
  const uint64_t size = layout.size();
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  auto with = [&](auto change) {
    RingMapping m = good;
    change(m);
    return CheckMapping(m, size, RingKind::CQ);
  };
  EXPECT_FALSE(with([](RingMapping& m) { m.num_entries = 0; }));
  EXPECT_FALSE(with([](RingMapping& m) { m.num_entries = 12; }));
  EXPECT_FALSE(with([](RingMapping& m) { m.num_entries = 0x80000000u; }));
  EXPECT_FALSE(with([](RingMapping& m) { m.ring_size = 1; }));
  EXPECT_FALSE(with([](RingMapping& m) { m.entry_size = 8; }));
  EXPECT_FALSE(with([](RingMapping& m) { m.doorbell_offset = 8; }));
  EXPECT_FALSE(with([=](RingMapping& m) {
    m.doorbell_offset = kMax - 63;
    m.ring_offset = m.doorbell_offset + kEntriesOffset;  // wraps
  }));
  EXPECT_FALSE(with([=](RingMapping& m) { m.ring_offset = kMax; }));
  EXPECT_FALSE(with([=](RingMapping& m) {
    m.doorbell_offset = size - kEntriesOffset;  // control fits, entries do not
    m.ring_offset = size;
  }));
  EXPECT_TRUE(with([](RingMapping&) {}));
}

TEST(RingLayoutTest, HeaderIsCheckedAgainstTheMapping) {
  testing::TestRing ring = Ring(RingKind::SRQ, 8);
  SharedMemory shm = MakeRegion({&ring});
  RingControl* control = ControlAt(shm.base(), ring.mapping);
  EXPECT_TRUE(CheckHeader(*control, ring.mapping, RingKind::SRQ));
  EXPECT_FALSE(CheckHeader(*control, ring.mapping, RingKind::RECV));
  control->header.num_entries = 16;
  EXPECT_FALSE(CheckHeader(*control, ring.mapping, RingKind::SRQ));
}

// FNV-1a over the region's bytes.
uint64_t Digest(const void* data, size_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    h ^= static_cast<const uint8_t*>(data)[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

// The same bytes in 32- and 64-bit builds: a 32-bit process and the 64-bit HCA agree on
// every field of the control blocks and entries.
TEST(RingLayoutTest, GoldenRegionIsTheSameInEveryBuild) {
  testing::TestRing send = Ring(RingKind::SEND, 2);
  testing::TestRing cq = Ring(RingKind::CQ, 2);
  SharedMemory shm = MakeRegion({&send, &cq});
  RingProducer<abi::SendWorkRequest> sq(ControlAt(shm.base(), send.mapping),
                                        EntriesAt<abi::SendWorkRequest>(shm.base(), send.mapping),
                                        2, Side::kClient);
  abi::SendWorkRequest wr{};
  wr.wr_id = 0x0102030405060708ull;
  wr.wr_type = abi::WrType::RDMA_WRITE;
  wr.send_flags = abi::SendFlags::SIGNALED | abi::SendFlags::INLINE;
  wr.inline_length = 8;
  wr.rkey = 0x11223344;
  wr.remote_addr = 0xA0A1A2A3A4A5A6A7ull;
  wr.bind_length = 0x55;
  wr.sge[15].lkey = 0x99;
  ASSERT_TRUE(sq.TryPush(wr));
  sq.Publish();
  CqProducer hca(ControlAt(shm.base(), cq.mapping),
                 EntriesAt<abi::WorkCompletion>(shm.base(), cq.mapping), 2);
  abi::WorkCompletion wc{};
  wc.wr_id = 0x1122334455667788ull;
  wc.status = abi::WcStatus::REM_ACCESS_ERR;
  wc.length = 4096;
  wc.qp_num = 0xABCDEF;
  wc.slid = 0x1234;
  wc.vendor_err = 0x7F;
  bool notify = false;
  ASSERT_EQ(hca.Push(wc, true, &notify), CqProducer::PushResult::kPushed);
  ASSERT_EQ(shm.size(), 8192u);
  EXPECT_EQ(Digest(shm.base(), shm.size()), 0xef8fcf56cc947d92ull)
      << std::hex << Digest(shm.base(), shm.size());
}

}  // namespace
}  // namespace softib::rings
