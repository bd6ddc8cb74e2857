// The responder's write combining (write_combiner.h): consecutive RDMA WRITE packets of a
// message reach a process-style accessor as one transfer, are placed before the ACK, and
// a transfer that fails still ends the message in a remote access error.
#include "hca/device/write_combiner.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "rc_fixture.h"

namespace softib::hca {
namespace {

using abi::WcStatus;
using abi::WrType;
using testing::Fill;
using testing::Matches;
using testing::RcOptions;
using testing::RcPair;

// Memory of this process reached the way ProcessVmDma reaches another's: each transfer
// recorded, and made to fail on request.
class RecordingDma final : public DmaAccessor {
 public:
  bool Read(uint64_t addr, std::span<uint8_t> data) override {
    std::memcpy(data.data(), reinterpret_cast<const void*>(addr), data.size());
    return true;
  }
  bool Write(uint64_t addr, std::span<const uint8_t> data) override {
    writes.push_back({addr, data.size()});
    if (fail_writes) return false;
    std::memcpy(reinterpret_cast<void*>(addr), data.data(), data.size());
    return true;
  }
  bool CombinesWrites() const override { return combines; }

  struct Transfer {
    uint64_t addr;
    std::size_t bytes;
  };
  std::vector<Transfer> writes;
  bool fail_writes = false;
  bool combines = true;
};

TEST(WriteCombiner, ConsecutiveBytesOfOneOwnerBecomeOneTransfer) {
  auto dma = std::make_shared<RecordingDma>();
  std::vector<uint8_t> target(64, 0);
  const uint64_t base = reinterpret_cast<uint64_t>(target.data());
  const std::vector<uint8_t> part(16, 0xAB);
  WriteCombiner combiner;
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(combiner.Write(7, dma, base + 16 * i, part));
  EXPECT_TRUE(dma->writes.empty());  // staged, not placed
  EXPECT_EQ(target[0], 0);
  uint32_t failed = 99;
  ASSERT_TRUE(combiner.Flush(&failed));
  EXPECT_EQ(failed, 0u);
  ASSERT_EQ(dma->writes.size(), 1u);
  EXPECT_EQ(dma->writes[0].addr, base);
  EXPECT_EQ(dma->writes[0].bytes, 64u);
  EXPECT_EQ(target, std::vector<uint8_t>(64, 0xAB));
  EXPECT_FALSE(combiner.pending());
}

TEST(WriteCombiner, AGapAnotherOwnerOrAnotherAccessorPlacesTheRunFirst) {
  auto dma = std::make_shared<RecordingDma>();
  auto other = std::make_shared<RecordingDma>();
  std::vector<uint8_t> target(256, 0);
  const uint64_t base = reinterpret_cast<uint64_t>(target.data());
  const std::vector<uint8_t> part(8, 1);
  WriteCombiner combiner;
  ASSERT_TRUE(combiner.Write(1, dma, base, part));
  ASSERT_TRUE(combiner.Write(1, dma, base + 32, part));  // a gap
  ASSERT_EQ(dma->writes.size(), 1u);
  ASSERT_TRUE(combiner.Write(2, dma, base + 40, part));  // contiguous, but another QP
  ASSERT_EQ(dma->writes.size(), 2u);
  ASSERT_TRUE(combiner.Write(2, other, base + 48, part));  // another process
  ASSERT_EQ(dma->writes.size(), 3u);
  EXPECT_EQ(dma->writes[1].addr, base + 32);
  EXPECT_EQ(combiner.owner(), 2u);
  uint32_t failed = 0;
  ASSERT_TRUE(combiner.Flush(&failed));
  ASSERT_EQ(other->writes.size(), 1u);
  EXPECT_EQ(other->writes[0].addr, base + 48);
}

TEST(WriteCombiner, AccessorsWithoutAFixedCostAndLargeDataAreWrittenAtOnce) {
  auto memcpy_like = std::make_shared<RecordingDma>();
  memcpy_like->combines = false;
  std::vector<uint8_t> target(WriteCombiner::kCapacity + 8, 0);
  const uint64_t base = reinterpret_cast<uint64_t>(target.data());
  WriteCombiner combiner;
  ASSERT_TRUE(combiner.Write(1, memcpy_like, base, std::vector<uint8_t>(8, 2)));
  EXPECT_EQ(memcpy_like->writes.size(), 1u);
  EXPECT_FALSE(combiner.pending());
  auto process = std::make_shared<RecordingDma>();
  ASSERT_TRUE(combiner.Write(1, process, base, std::vector<uint8_t>(WriteCombiner::kCapacity + 1)));
  EXPECT_EQ(process->writes.size(), 1u);
  EXPECT_FALSE(combiner.pending());
}

TEST(WriteCombiner, AFailedRunNamesItsOwner) {
  auto dma = std::make_shared<RecordingDma>();
  dma->fail_writes = true;
  std::vector<uint8_t> target(32, 0);
  WriteCombiner combiner;
  ASSERT_TRUE(
      combiner.Write(5, dma, reinterpret_cast<uint64_t>(target.data()), std::vector<uint8_t>(8)));
  uint32_t failed = 0;
  EXPECT_FALSE(combiner.Flush(&failed));
  EXPECT_EQ(failed, 5u);
  EXPECT_FALSE(combiner.pending());  // the bytes are gone, not retried into freed memory
}

// b's memory registered a second time, through the recording accessor.
uint32_t RegisterRecorded(testing::RcSide& b, std::shared_ptr<RecordingDma> dma) {
  uint32_t key = 0;
  EXPECT_EQ(b.hca.RegisterMr(b.pd, b.addr(), b.buffer.size(), b.addr(),
                             abi::AccessFlags::LOCAL_WRITE | abi::AccessFlags::REMOTE_WRITE,
                             std::move(dma), &key),
            abi::Status::SUCCESS);
  return key;
}

TEST(WriteCombinerRc, A64KiBWriteIsPlacedByOneTransferBeforeItCompletes) {
  RcPair q(RcOptions{});  // MTU 1024: 64 packets
  auto dma = std::make_shared<RecordingDma>();
  const uint32_t rkey = RegisterRecorded(q.b, dma);
  Fill(q.a.buffer, 0, 65536, 3);
  abi::SendWorkRequest wr = q.Wr(WrType::RDMA_WRITE, 0, 65536, 4096);
  wr.rkey = rkey;
  ASSERT_EQ(q.a.hca.PostSend(q.a.qpn, wr), abi::Status::SUCCESS);
  ASSERT_TRUE(q.Run());
  const auto done = q.Poll(q.a);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::SUCCESS);
  ASSERT_EQ(dma->writes.size(), 1u);
  EXPECT_EQ(dma->writes[0].addr, q.b.addr(4096));
  EXPECT_EQ(dma->writes[0].bytes, 65536u);
  EXPECT_TRUE(Matches(q.b.buffer, 4096, 65536, 3));
  EXPECT_EQ(q.b.hca.staged_write_runs(), 1u);
}

TEST(WriteCombinerRc, TwoWritesInFlightArePlacedAsTwoRuns) {
  RcPair q(RcOptions{});
  auto dma = std::make_shared<RecordingDma>();
  const uint32_t rkey = RegisterRecorded(q.b, dma);
  Fill(q.a.buffer, 0, 8192, 4);
  for (uint64_t i = 0; i < 2; ++i) {
    // Adjacent targets: still two messages, each placed at its own last packet.
    abi::SendWorkRequest wr = q.Wr(WrType::RDMA_WRITE, 4096 * i, 4096, 4096 * i, 10 + i);
    wr.rkey = rkey;
    ASSERT_EQ(q.a.hca.PostSend(q.a.qpn, wr), abi::Status::SUCCESS);
  }
  ASSERT_TRUE(q.Run());
  EXPECT_EQ(q.Poll(q.a).size(), 2u);
  ASSERT_EQ(dma->writes.size(), 2u);
  EXPECT_EQ(dma->writes[0].bytes, 4096u);
  EXPECT_EQ(dma->writes[1].addr, q.b.addr(4096));
  EXPECT_TRUE(Matches(q.b.buffer, 0, 8192, 4));
}

TEST(WriteCombinerRc, ARunThatCannotBePlacedEndsTheWriteInARemoteAccessError) {
  RcPair q(RcOptions{});
  auto dma = std::make_shared<RecordingDma>();
  dma->fail_writes = true;  // as process_vm_writev into memory the process unmapped
  const uint32_t rkey = RegisterRecorded(q.b, dma);
  abi::SendWorkRequest wr = q.Wr(WrType::RDMA_WRITE, 0, 16384, 0);
  wr.rkey = rkey;
  ASSERT_EQ(q.a.hca.PostSend(q.a.qpn, wr), abi::Status::SUCCESS);
  ASSERT_TRUE(q.Run());
  const auto done = q.Poll(q.a);
  ASSERT_FALSE(done.empty());
  EXPECT_EQ(done[0].status, WcStatus::REM_ACCESS_ERR);
}

TEST(WriteCombinerRc, AControlOperationPlacesStagedBytesFirst) {
  RcPair q(RcOptions{});
  auto dma = std::make_shared<RecordingDma>();
  const uint32_t rkey = RegisterRecorded(q.b, dma);
  Fill(q.a.buffer, 0, 4096, 5);
  abi::SendWorkRequest wr = q.Wr(WrType::RDMA_WRITE, 0, 4096, 0);
  wr.rkey = rkey;
  ASSERT_EQ(q.a.hca.PostSend(q.a.qpn, wr), abi::Status::SUCCESS);
  q.cable.DropPacket(3);  // the last of four packets: the first three stay staged
  q.cable.Pump();
  EXPECT_TRUE(dma->writes.empty());
  q.b.hca.FlushStagedWrites();  // what the driver does before, e.g., deregistering
  ASSERT_EQ(dma->writes.size(), 1u);
  EXPECT_EQ(dma->writes[0].bytes, 3072u);
  EXPECT_TRUE(Matches(q.b.buffer, 0, 3072, 5));
  ASSERT_TRUE(q.Run());  // the retransmitted last packet completes the message
  EXPECT_EQ(q.Poll(q.a).at(0).status, WcStatus::SUCCESS);
  EXPECT_TRUE(Matches(q.b.buffer, 0, 4096, 5));
}

}  // namespace
}  // namespace softib::hca
