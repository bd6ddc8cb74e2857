// The requester builds the packets of a multi-packet request straight from memory of this
// process (DmaAccessor::Direct, MemcpyDma) when a gather window lies in one SGE, and
// gathers a copy first otherwise (windows crossing SGEs, accessors without direct access):
// either way every byte arrives where it belongs.
#include <gtest/gtest.h>

#include "hca/device/tests/rc_fixture.h"

namespace softib::hca {
namespace {

using abi::WcStatus;
using abi::WrType;
using testing::Fill;
using testing::Matches;
using testing::RcOptions;
using testing::RcPair;

TEST(DirectGather, MemcpyDmaGivesDirectAccessOtherAccessorsDoNot) {
  uint8_t byte = 7;
  const auto addr = reinterpret_cast<uint64_t>(&byte);
  EXPECT_EQ(MemcpyDma().Direct(addr), &byte);
  EXPECT_EQ(ProcessVmDma(1).Direct(addr), nullptr);
  EXPECT_EQ(PhysRangesDma({{addr, 1}}).Direct(0), nullptr);
}

TEST(DirectGather, WindowsInOneSegmentAndWindowsAcrossSegmentsBothArriveWhole) {
  RcOptions options;
  options.mtu = abi::PathMtu::MTU_4096;
  RcPair p(options);
  // 300 KiB in two SGEs: the first gather window (128 KiB) lies in the first SGE (direct),
  // the second crosses into the second SGE (copied), the third lies in the second (direct).
  constexpr uint32_t kFirst = 128 * 1024 + 100, kSecond = 300 * 1024 - kFirst;
  Fill(p.a.buffer, 0, kFirst, 11);
  Fill(p.a.buffer, 512 * 1024, kSecond, 12);
  abi::SendWorkRequest wr = p.Wr(WrType::RDMA_WRITE, 0, kFirst, 4);
  wr.num_sge = 2;
  wr.sge[1] = {p.a.addr(512 * 1024), kSecond, p.a.key};
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, wr), abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  EXPECT_TRUE(Matches(p.b.buffer, 4, kFirst, 11));
  EXPECT_TRUE(Matches(p.b.buffer, 4 + kFirst, kSecond, 12));
  EXPECT_EQ(p.b.buffer[4 + kFirst + kSecond], 0);
  const auto done = p.Poll(p.a);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::SUCCESS);
}

TEST(DirectGather, ABadKeyInALaterWindowStillFailsTheRequest) {
  RcPair p;
  Fill(p.a.buffer, 0, 200 * 1024, 13);
  abi::SendWorkRequest wr = p.Wr(WrType::RDMA_WRITE, 0, 200 * 1024, 0);
  wr.sge[0].lkey ^= 0x80;  // not a key of any region
  EXPECT_EQ(p.a.hca.PostSend(p.a.qpn, wr), abi::Status::SUCCESS);
  p.Run();
  const auto done = p.Poll(p.a);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::LOCAL_PROT_ERR);
  EXPECT_EQ(p.b.buffer[0], 0);
}

}  // namespace
}  // namespace softib::hca
