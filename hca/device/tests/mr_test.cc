// Memory regions: key format, registration rules, and the checks before every DMA. A failed
// check must leave the target memory exactly as it was.
#include "hca/device/mr.h"

#include <gtest/gtest.h>

#include <array>

namespace softib::hca {
namespace {

using abi::AccessFlags;

class MrTest : public ::testing::Test {
 protected:
  uint32_t Register(PdId pd, AccessFlags access) {
    uint32_t key = 0;
    EXPECT_EQ(mrs_.Register(pd, kIova, buffer_.size(), reinterpret_cast<uint64_t>(buffer_.data()),
                            access, dma_, &key),
              abi::Status::SUCCESS);
    return key;
  }
  static constexpr uint64_t kIova = 0x10000;
  std::array<uint8_t, 64> buffer_{};
  std::shared_ptr<DmaAccessor> dma_ = std::make_shared<MemcpyDma>();
  MrTable mrs_;
};

TEST_F(MrTest, KeysAreIndexAndKeyByteAndChangeOnReuse) {
  const uint32_t first = Register(1, AccessFlags::LOCAL_WRITE);
  EXPECT_EQ(first >> 8, 1u);
  EXPECT_NE(first & 0xFF, 0u);
  ASSERT_EQ(mrs_.Deregister(first), abi::Status::SUCCESS);
  const uint32_t second = Register(1, AccessFlags::LOCAL_WRITE);
  EXPECT_EQ(second >> 8, first >> 8);  // same slot...
  EXPECT_NE(second, first);            // ...new key byte
  const MemoryRegion* mr = nullptr;
  EXPECT_EQ(mrs_.CheckLocal(first, 1, kIova, 1, {}, &mr), AccessError::kInvalidKey);
  EXPECT_EQ(mrs_.CheckLocal(second, 1, kIova, 1, {}, &mr), AccessError::kNone);
  EXPECT_EQ(mrs_.Deregister(first), abi::Status::INVALID_MR_HANDLE);
}

TEST_F(MrTest, RemoteWriteOrAtomicNeedsLocalWrite) {
  uint32_t key;
  const auto addr = reinterpret_cast<uint64_t>(buffer_.data());
  EXPECT_EQ(mrs_.Register(1, kIova, 8, addr, AccessFlags::REMOTE_WRITE, dma_, &key),
            abi::Status::INVALID_PERMISSION);
  EXPECT_EQ(mrs_.Register(1, kIova, 8, addr, AccessFlags::REMOTE_ATOMIC, dma_, &key),
            abi::Status::INVALID_PERMISSION);
  EXPECT_EQ(mrs_.Register(1, kIova, 0, addr, AccessFlags::LOCAL_WRITE, dma_, &key),
            abi::Status::INVALID_PARAMETER);
  EXPECT_EQ(mrs_.Register(1, ~0ull - 4, 8, addr, AccessFlags::LOCAL_WRITE, dma_, &key),
            abi::Status::INVALID_PARAMETER);
  EXPECT_EQ(mrs_.size(), 0u);
}

TEST_F(MrTest, RemoteViolationsAreRefusedAndTouchNoMemory) {
  const uint32_t rw = Register(1, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE);
  const uint32_t ro = Register(1, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ);
  const uint32_t local_only = Register(1, AccessFlags::LOCAL_WRITE);
  buffer_.fill(0x5A);
  const std::array<uint8_t, 16> data{1, 2, 3};
  struct Case {
    const char* what;
    uint32_t rkey;
    PdId pd;
    uint64_t va;
    std::size_t len;
    AccessError expected;
  };
  const Case cases[] = {
      {"before the region", rw, 1, kIova - 1, 16, AccessError::kOutOfBounds},
      {"past the end", rw, 1, kIova + 56, 16, AccessError::kOutOfBounds},
      {"wrapping", rw, 1, ~0ull - 7, 16, AccessError::kOutOfBounds},
      {"other PD", rw, 2, kIova, 16, AccessError::kPdMismatch},
      {"read-only region", ro, 1, kIova, 16, AccessError::kAccessDenied},
      {"no remote rights", local_only, 1, kIova, 16, AccessError::kAccessDenied},
      {"unknown key", rw + 0x1000, 1, kIova, 16, AccessError::kInvalidKey},
      {"stale key byte", rw ^ 0x01, 1, kIova, 16, AccessError::kInvalidKey},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(WriteRemote(mrs_, c.rkey, c.pd, c.va, std::span(data).first(c.len)), c.expected);
    for (uint8_t b : buffer_) ASSERT_EQ(b, 0x5A) << "memory touched";
  }
  // The same write inside the rules lands.
  EXPECT_EQ(WriteRemote(mrs_, rw, 1, kIova + 48, data), AccessError::kNone);
  EXPECT_EQ(buffer_[48], 1);
  EXPECT_EQ(buffer_[47], 0x5A);
  std::array<uint8_t, 4> got{};
  EXPECT_EQ(ReadRemote(mrs_, rw, 1, kIova + 48, got), AccessError::kAccessDenied);
  EXPECT_EQ(got[0], 0);
  EXPECT_EQ(ReadRemote(mrs_, ro, 1, kIova + 48, got), AccessError::kNone);
  EXPECT_EQ(got[1], 2);
  EXPECT_EQ(LocalWcStatus(AccessError::kOutOfBounds), abi::WcStatus::LOCAL_PROT_ERR);
}

TEST_F(MrTest, LocalChecksUseTheRightsAsked) {
  const uint32_t ro = Register(1, AccessFlags::REMOTE_READ);
  const MemoryRegion* mr = nullptr;
  EXPECT_EQ(mrs_.CheckLocal(ro, 1, kIova, 64, {}, &mr), AccessError::kNone);  // gather
  EXPECT_EQ(mrs_.CheckLocal(ro, 1, kIova, 64, AccessFlags::LOCAL_WRITE, &mr),
            AccessError::kAccessDenied);  // scatter
  EXPECT_EQ(mrs_.CheckLocal(ro, 1, kIova, 65, {}, &mr), AccessError::kOutOfBounds);
  EXPECT_EQ(mr, nullptr);
}

}  // namespace
}  // namespace softib::hca
