// Memory region reregistration: new key, old key dead, new rights in force, errors change
// nothing.
#include <gtest/gtest.h>

#include "hca/device/tests/rc_fixture.h"

namespace softib::hca {
namespace {

using abi::AccessFlags;
using abi::MrReregFlags;
using abi::Status;
using abi::WcStatus;
using abi::WrType;
using testing::RcPair;

constexpr AccessFlags kAll = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE |
                             AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC;

WcStatus Write(RcPair& p, uint32_t rkey) {
  abi::SendWorkRequest wr = p.Wr(WrType::RDMA_WRITE, 0, 16, 32);
  wr.rkey = rkey;
  EXPECT_EQ(p.a.hca.PostSend(p.a.qpn, wr), Status::SUCCESS);
  EXPECT_TRUE(p.Run());
  const auto done = p.Poll(p.a);
  EXPECT_EQ(done.size(), 1u);
  return done.empty() ? WcStatus::GENERAL_ERR : done[0].status;
}

TEST(Rereg, TheOldKeyDiesAndTheNewRightsApply) {
  struct Case {
    const char* name;
    AccessFlags access;
    bool use_old_key;
    WcStatus expected;
  };
  const Case cases[] = {
      {"new key, same rights", kAll, false, WcStatus::SUCCESS},
      {"old key", kAll, true, WcStatus::REM_ACCESS_ERR},
      {"new key, write taken away", AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ, false,
       WcStatus::REM_ACCESS_ERR},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RcPair p;
    uint32_t key = 0;
    ASSERT_EQ(
        p.b.hca.ReregisterMr(p.b.key, MrReregFlags::ACCESS, 0, 0, 0, 0, c.access, nullptr, &key),
        Status::SUCCESS);
    EXPECT_EQ(key >> 8, p.b.key >> 8);  // same slot
    EXPECT_NE(key, p.b.key);
    EXPECT_EQ(Write(p, c.use_old_key ? p.b.key : key), c.expected);
  }
}

TEST(Rereg, ErrorsLeaveTheRegionAlone) {
  RcPair p;
  Hca& hca = p.b.hca;
  uint32_t key = 0;
  struct Case {
    const char* name;
    uint32_t mr;
    MrReregFlags what;
    PdId pd;
    AccessFlags access;
    Status expected;
  };
  const Case cases[] = {
      {"unknown key", p.b.key ^ 0x1, MrReregFlags::ACCESS, 0, kAll, Status::INVALID_MR_HANDLE},
      {"unknown PD", p.b.key, MrReregFlags::PD, 77, kAll, Status::INVALID_PD_HANDLE},
      {"remote write without local write", p.b.key, MrReregFlags::ACCESS, 0,
       AccessFlags::REMOTE_WRITE, Status::INVALID_PERMISSION},
      {"nothing selected", p.b.key, MrReregFlags{}, 0, kAll, Status::INVALID_PARAMETER},
      {"zero length", p.b.key, MrReregFlags::TRANSLATION, 0, kAll, Status::INVALID_PARAMETER},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(hca.ReregisterMr(c.mr, c.what, c.pd, 0, 0, 0, c.access, std::make_shared<MemcpyDma>(),
                               &key),
              c.expected)
        << c.name;
  }
  EXPECT_EQ(Write(p, p.b.key), WcStatus::SUCCESS);  // still the same region
}

}  // namespace
}  // namespace softib::hca
