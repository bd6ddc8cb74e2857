// Memory windows type 1 and 2: binding (BindMw verb, BIND_MW work request), the R_Key
// checks of RDMA through a window, LOCAL_INV, SEND_WITH_INVALIDATE and bind errors.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "hca/device/tests/rc_fixture.h"

namespace softib::hca {
namespace {

using abi::AccessFlags;
using abi::Status;
using abi::WcStatus;
using abi::WrType;
using testing::RcPair;

constexpr uint64_t kWindowAt = 4096;
constexpr uint64_t kWindowLength = 1024;

// An RC pair where b registered a region that windows may be bound to.
struct WindowPair {
  explicit WindowPair(AccessFlags region_access = AccessFlags::LOCAL_WRITE | AccessFlags::MW_BIND) {
    EXPECT_EQ(p.b.hca.RegisterMr(p.b.pd, p.b.addr(), 65536, p.b.addr(), region_access,
                                 std::make_shared<MemcpyDma>(), &region),
              Status::SUCCESS);
  }
  // b binds a type 1 window through the verb; returns its new R_Key.
  uint32_t BindType1(uint32_t mw, AccessFlags access, uint64_t at = kWindowAt,
                     uint64_t length = kWindowLength) {
    abi::MwBindParams bind{};
    bind.wr_id = 50;
    bind.vaddr = p.b.addr(at);
    bind.length = length;
    bind.access = access;
    uint32_t rkey = 0;
    EXPECT_EQ(p.b.hca.BindMw(mw, p.b.qpn, region, bind, &rkey), Status::SUCCESS);
    return rkey;
  }
  abi::SendWorkRequest Type2Bind(uint32_t rkey, AccessFlags access, uint64_t at = kWindowAt,
                                 uint64_t length = kWindowLength) {
    abi::SendWorkRequest wr{};
    wr.wr_id = 60;
    wr.wr_type = WrType::BIND_MW;
    wr.bind_lkey = region;
    wr.bind_rkey = rkey;
    wr.bind_vaddr = p.b.addr(at);
    wr.bind_length = length;
    wr.bind_access = access;
    return wr;
  }
  abi::SendWorkRequest LocalInv(uint32_t rkey) {
    abi::SendWorkRequest wr{};
    wr.wr_id = 70;
    wr.wr_type = WrType::LOCAL_INV;
    wr.invalidate_rkey = rkey;
    return wr;
  }
  // a's RDMA write or read of `length` bytes at b's `offset` with `rkey`; a's status.
  WcStatus Rdma(WrType type, uint32_t rkey, uint64_t offset, uint32_t length) {
    abi::SendWorkRequest wr = p.Wr(type, 0, length, offset, 80);
    wr.rkey = rkey;
    EXPECT_EQ(p.a.hca.PostSend(p.a.qpn, wr), Status::SUCCESS);
    EXPECT_TRUE(p.Run());
    const auto done = p.Poll(p.a);
    EXPECT_EQ(done.size(), 1u);
    return done.empty() ? WcStatus::GENERAL_ERR : done.back().status;
  }

  RcPair p;
  uint32_t region = 0;
};

TEST(Mw, KeysAreIndexAndKeyByteAndType1BindsChangeTheKeyByte) {
  WindowPair w;
  uint32_t mw = 0, rkey0 = 0;
  ASSERT_EQ(w.p.b.hca.AllocMw(w.p.b.pd, abi::MwType::TYPE1, &mw, &rkey0), Status::SUCCESS);
  EXPECT_EQ(rkey0 >> 8, mw);
  EXPECT_LT(mw, 1u << 24);
  const uint32_t rkey1 = w.BindType1(mw, AccessFlags::REMOTE_WRITE);
  const uint32_t rkey2 = w.BindType1(mw, AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ);
  EXPECT_EQ(rkey1 >> 8, mw);
  EXPECT_EQ(rkey1 & 0xFF, (rkey0 + 1) & 0xFF);
  EXPECT_EQ(rkey2 & 0xFF, (rkey0 + 2) & 0xFF);
  const auto binds = w.p.Poll(w.p.b);
  ASSERT_EQ(binds.size(), 2u);
  EXPECT_EQ(binds[0].opcode, abi::WcOpcode::MW_BIND);
  EXPECT_EQ(binds[0].status, WcStatus::SUCCESS);
  EXPECT_EQ(binds[0].wr_id, 50u);
  PdId pd = 0;
  abi::MwType type{};
  uint32_t now = 0;
  ASSERT_EQ(w.p.b.hca.QueryMw(mw, &pd, &type, &now), Status::SUCCESS);
  EXPECT_EQ(pd, w.p.b.pd);
  EXPECT_EQ(type, abi::MwType::TYPE1);
  EXPECT_EQ(now, rkey2);
  EXPECT_EQ(w.p.b.hca.QueryMw(mw + 1, &pd, &type, &now), Status::INVALID_MW_HANDLE);
  // The region under a bound window cannot go away; the window can.
  EXPECT_EQ(w.p.b.hca.DeregisterMr(w.region), Status::RESOURCE_BUSY);
  EXPECT_EQ(w.p.b.hca.FreePd(w.p.b.pd), Status::RESOURCE_BUSY);
  ASSERT_EQ(w.p.b.hca.DestroyMw(mw), Status::SUCCESS);
  EXPECT_EQ(w.p.b.hca.DestroyMw(mw), Status::INVALID_MW_HANDLE);
  EXPECT_EQ(w.p.b.hca.DeregisterMr(w.region), Status::SUCCESS);
}

// RDMA through a type 1 window: each case on a fresh pair, since a failure ends the QP.
TEST(Mw, RemoteAccessThroughAType1WindowIsCheckedAgainstTheWindow) {
  struct Case {
    std::string name;
    AccessFlags window;
    WrType op;
    int64_t offset;  // from the window's start
    uint32_t length;
    bool stale_key;  // use the key from before the bind
    bool unbind;     // bind again with length 0 first
    WcStatus expected;
  };
  const AccessFlags rw = AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ;
  const Case cases[] = {
      {"write inside", rw, WrType::RDMA_WRITE, 10, 100, false, false, WcStatus::SUCCESS},
      {"read inside", rw, WrType::RDMA_READ, 0, 1024, false, false, WcStatus::SUCCESS},
      {"write before", rw, WrType::RDMA_WRITE, -1, 8, false, false, WcStatus::REM_ACCESS_ERR},
      {"write past end", rw, WrType::RDMA_WRITE, 1020, 8, false, false, WcStatus::REM_ACCESS_ERR},
      {"read write-only", AccessFlags::REMOTE_WRITE, WrType::RDMA_READ, 0, 8, false, false,
       WcStatus::REM_ACCESS_ERR},
      {"stale key", rw, WrType::RDMA_WRITE, 0, 8, true, false, WcStatus::REM_ACCESS_ERR},
      {"unbound", rw, WrType::RDMA_WRITE, 0, 8, false, true, WcStatus::REM_ACCESS_ERR},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    WindowPair w;
    uint32_t mw = 0, old_key = 0;
    ASSERT_EQ(w.p.b.hca.AllocMw(w.p.b.pd, abi::MwType::TYPE1, &mw, &old_key), Status::SUCCESS);
    uint32_t key = w.BindType1(mw, c.window);
    if (c.unbind) key = w.BindType1(mw, c.window, 0, 0);
    testing::Fill(w.p.a.buffer, 0, c.length, 9);
    const WcStatus got = w.Rdma(c.op, c.stale_key ? old_key : key, kWindowAt + c.offset, c.length);
    EXPECT_EQ(got, c.expected);
    if (c.expected == WcStatus::SUCCESS && c.op == WrType::RDMA_WRITE) {
      EXPECT_TRUE(testing::Matches(w.p.b.buffer, kWindowAt + c.offset, c.length, 9));
    }
    if (c.expected != WcStatus::SUCCESS && c.op == WrType::RDMA_WRITE) {
      EXPECT_EQ(w.p.b.buffer[kWindowAt + 5], 0);  // nothing written
    }
  }
}

TEST(Mw, Type2BindsByWorkRequestAndLocalInvalidateEndsTheKey) {
  WindowPair w;
  uint32_t mw = 0, rkey = 0;
  ASSERT_EQ(w.p.b.hca.AllocMw(w.p.b.pd, abi::MwType::TYPE2B, &mw, &rkey), Status::SUCCESS);
  const uint32_t key = mw << 8 | 0x42;  // the consumer picks the key byte
  ASSERT_EQ(w.p.b.hca.PostSend(w.p.b.qpn, w.Type2Bind(key, AccessFlags::REMOTE_WRITE)),
            Status::SUCCESS);
  auto done = w.p.Poll(w.p.b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::SUCCESS);
  EXPECT_EQ(done[0].opcode, abi::WcOpcode::MW_BIND);
  testing::Fill(w.p.a.buffer, 0, 64, 3);
  EXPECT_EQ(w.Rdma(WrType::RDMA_WRITE, key, kWindowAt, 64), WcStatus::SUCCESS);
  EXPECT_TRUE(testing::Matches(w.p.b.buffer, kWindowAt, 64, 3));
  ASSERT_EQ(w.p.b.hca.PostSend(w.p.b.qpn, w.LocalInv(key)), Status::SUCCESS);
  done = w.p.Poll(w.p.b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::SUCCESS);
  EXPECT_EQ(done[0].opcode, abi::WcOpcode::LOCAL_INV);
  EXPECT_EQ(w.p.b.hca.DeregisterMr(w.region), Status::SUCCESS);  // no longer bound
  EXPECT_EQ(w.Rdma(WrType::RDMA_WRITE, key, kWindowAt, 8), WcStatus::REM_ACCESS_ERR);
}

TEST(Mw, SendWithInvalidateFreesAType2WindowOfTheResponder) {
  WindowPair w;
  uint32_t mw = 0, rkey = 0;
  ASSERT_EQ(w.p.b.hca.AllocMw(w.p.b.pd, abi::MwType::TYPE2A, &mw, &rkey), Status::SUCCESS);
  const uint32_t key = mw << 8 | 0x07;
  ASSERT_EQ(w.p.b.hca.PostSend(w.p.b.qpn, w.Type2Bind(key, AccessFlags::REMOTE_READ)),
            Status::SUCCESS);
  ASSERT_EQ(w.p.Poll(w.p.b).size(), 1u);
  ASSERT_EQ(w.p.b.hca.PostRecv(w.p.b.qpn, w.p.Recv(0, 64, 33)), Status::SUCCESS);
  abi::SendWorkRequest send = w.p.Wr(WrType::SEND_WITH_INVALIDATE, 0, 16);
  send.invalidate_rkey = key;
  ASSERT_EQ(w.p.a.hca.PostSend(w.p.a.qpn, send), Status::SUCCESS);
  ASSERT_TRUE(w.p.Run());
  const auto got = w.p.Poll(w.p.b);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, WcStatus::SUCCESS);
  EXPECT_EQ(got[0].flags, abi::WcFlags::INVALIDATE);
  EXPECT_EQ(got[0].immediate_data, key);
  EXPECT_EQ(got[0].length, 16u);
  EXPECT_FALSE(w.p.b.hca.mrs().Window(mw)->bound);
  ASSERT_EQ(w.p.Poll(w.p.a).size(), 1u);
  EXPECT_EQ(w.Rdma(WrType::RDMA_READ, key, kWindowAt, 8), WcStatus::REM_ACCESS_ERR);
}

// A second RC QP of b, in RTS (its peer is irrelevant: it only executes local operations).
uint32_t SecondQp(RcPair& p) {
  using M = abi::QpAttrMask;
  abi::QpCreateParams params{};
  params.qp_type = abi::QpType::RC;
  params.sq_signaled = 1;
  params.caps = {8, 8, 1, 1, 0, 0};
  uint32_t qpn = 0;
  EXPECT_EQ(p.b.hca.CreateQp(p.b.pd, params, p.b.cq, p.b.cq, &qpn), Status::SUCCESS);
  abi::QpModifyAttributes init =
      testing::RcToState(abi::QpState::INIT, M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS);
  init.port_num = 1;
  EXPECT_EQ(p.b.hca.ModifyQp(qpn, init), Status::SUCCESS);
  abi::QpModifyAttributes rtr =
      testing::RcToState(abi::QpState::RTR, M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN |
                                                M::MAX_DEST_RD_ATOMIC | M::MIN_RNR_TIMER);
  rtr.av.port_num = 1;
  rtr.av.dlid = 1;
  rtr.path_mtu = static_cast<uint8_t>(abi::PathMtu::MTU_1024);
  rtr.dest_qpn = 0x999;
  EXPECT_EQ(p.b.hca.ModifyQp(qpn, rtr), Status::SUCCESS);
  EXPECT_EQ(p.b.hca.ModifyQp(
                qpn, testing::RcToState(abi::QpState::RTS, M::SQ_PSN | M::TIMEOUT | M::RETRY_COUNT |
                                                               M::RNR_RETRY | M::MAX_RD_ATOMIC)),
            Status::SUCCESS);
  return qpn;
}

// Type 2A windows are invalidated only through the QP they were bound through; 2B windows
// through any QP of their PD.
TEST(Mw, Type2AInvalidatesOnlyThroughItsQpAnd2BThroughAnyQpOfThePd) {
  for (const abi::MwType type : {abi::MwType::TYPE2A, abi::MwType::TYPE2B}) {
    SCOPED_TRACE(abi::ToString(type));
    WindowPair w;
    const uint32_t other = SecondQp(w.p);
    uint32_t mw = 0, rkey = 0;
    ASSERT_EQ(w.p.b.hca.AllocMw(w.p.b.pd, type, &mw, &rkey), Status::SUCCESS);
    ASSERT_EQ(w.p.b.hca.PostSend(w.p.b.qpn, w.Type2Bind(rkey, AccessFlags::REMOTE_READ)),
              Status::SUCCESS);
    ASSERT_EQ(w.p.Poll(w.p.b).size(), 1u);
    ASSERT_EQ(w.p.b.hca.PostSend(other, w.LocalInv(rkey)), Status::SUCCESS);
    const auto done = w.p.Poll(w.p.b);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].status,
              type == abi::MwType::TYPE2A ? WcStatus::MW_BIND_ERR : WcStatus::SUCCESS);
    EXPECT_EQ(w.p.b.hca.mrs().Window(mw)->bound, type == abi::MwType::TYPE2A);
  }
}

TEST(Mw, DestroyingTheQpOfAType2WindowEndsTheWindowsKey) {
  WindowPair w;
  const uint32_t other = SecondQp(w.p);
  uint32_t mw = 0, rkey = 0;
  ASSERT_EQ(w.p.b.hca.AllocMw(w.p.b.pd, abi::MwType::TYPE2B, &mw, &rkey), Status::SUCCESS);
  ASSERT_EQ(w.p.b.hca.PostSend(other, w.Type2Bind(rkey, AccessFlags::REMOTE_READ)),
            Status::SUCCESS);
  ASSERT_EQ(w.p.Poll(w.p.b).size(), 1u);
  EXPECT_TRUE(w.p.b.hca.mrs().Window(mw)->bound);
  ASSERT_EQ(w.p.b.hca.DestroyQp(other), Status::SUCCESS);
  EXPECT_FALSE(w.p.b.hca.mrs().Window(mw)->bound);
  EXPECT_EQ(w.p.b.hca.DeregisterMr(w.region), Status::SUCCESS);
}

TEST(Mw, Type2WindowsServeOnlyTheQpTheyWereBoundThrough) {
  MrTable mrs;
  std::vector<uint8_t> memory(4096);
  const uint64_t base = reinterpret_cast<uint64_t>(memory.data());
  uint32_t region = 0, mw = 0, rkey = 0;
  ASSERT_EQ(
      mrs.Register(1, base, memory.size(), base, AccessFlags::LOCAL_WRITE | AccessFlags::MW_BIND,
                   std::make_shared<MemcpyDma>(), &region),
      Status::SUCCESS);
  ASSERT_EQ(mrs.AllocWindow(1, abi::MwType::TYPE2B, &mw, &rkey), Status::SUCCESS);
  MemoryWindow& window = *mrs.Window(mw);
  window.bound = true;
  window.mr_key = region;
  window.va = base + 100;
  window.length = 200;
  window.access = AccessFlags::REMOTE_WRITE;
  window.qp = 0x77;
  const MemoryRegion* mr = nullptr;
  EXPECT_EQ(mrs.CheckRemote(rkey, 1, base + 100, 8, AccessFlags::REMOTE_WRITE, &mr, 0x77),
            AccessError::kNone);
  EXPECT_EQ(mr, mrs.Find(region));
  EXPECT_EQ(mrs.CheckRemote(rkey, 1, base + 100, 8, AccessFlags::REMOTE_WRITE, &mr, 0x78),
            AccessError::kPdMismatch);
  EXPECT_EQ(mrs.CheckRemote(rkey, 2, base + 100, 8, AccessFlags::REMOTE_WRITE, &mr, 0x77),
            AccessError::kPdMismatch);
  EXPECT_EQ(mrs.CheckRemote(rkey ^ 1, 1, base + 100, 8, AccessFlags::REMOTE_WRITE, &mr, 0x77),
            AccessError::kInvalidKey);
  mrs.InvalidateWindowsOf(0x77);  // the QP was destroyed
  EXPECT_EQ(mrs.CheckRemote(rkey, 1, base + 100, 8, AccessFlags::REMOTE_WRITE, &mr, 0x77),
            AccessError::kInvalidKey);
}

// Binds and invalidations the rules refuse complete with MW_BIND_ERR and end the QP.
TEST(Mw, BadBindsAndInvalidationsCompleteWithMwBindErr) {
  struct Case {
    std::string name;
    std::function<abi::SendWorkRequest(WindowPair&)> make;
  };
  const auto type2 = [](WindowPair& w) {
    uint32_t mw = 0, rkey = 0;
    EXPECT_EQ(w.p.b.hca.AllocMw(w.p.b.pd, abi::MwType::TYPE2A, &mw, &rkey), Status::SUCCESS);
    return rkey;
  };
  const Case cases[] = {
      {"region without MW_BIND",
       [&](WindowPair& w) {
         abi::SendWorkRequest wr = w.Type2Bind(type2(w), AccessFlags::REMOTE_READ);
         wr.bind_lkey = w.p.b.key;  // the fixture's region: no MW_BIND right
         return wr;
       }},
      {"window beyond the region",
       [&](WindowPair& w) {
         return w.Type2Bind(type2(w), AccessFlags::REMOTE_READ, 65536 - 512, 1024);
       }},
      {"type 2 bound twice",
       [&](WindowPair& w) {
         const abi::SendWorkRequest first = w.Type2Bind(type2(w), AccessFlags::REMOTE_READ);
         EXPECT_EQ(w.p.b.hca.PostSend(w.p.b.qpn, first), Status::SUCCESS);
         EXPECT_EQ(w.p.Poll(w.p.b).size(), 1u);
         return first;
       }},
      {"BIND_MW naming a type 1 window",
       [&](WindowPair& w) {
         uint32_t mw = 0, rkey = 0;
         EXPECT_EQ(w.p.b.hca.AllocMw(w.p.b.pd, abi::MwType::TYPE1, &mw, &rkey), Status::SUCCESS);
         return w.Type2Bind(rkey, AccessFlags::REMOTE_READ);
       }},
      {"window of another PD",
       [&](WindowPair& w) {
         uint32_t mw = 0, rkey = 0;
         EXPECT_EQ(w.p.b.hca.AllocMw(w.p.b.hca.AllocPd(), abi::MwType::TYPE2B, &mw, &rkey),
                   Status::SUCCESS);
         return w.Type2Bind(rkey, AccessFlags::REMOTE_READ);
       }},
      {"remote write over a read-only region",
       [&](WindowPair& w) {
         uint32_t ro = 0;
         EXPECT_EQ(w.p.b.hca.RegisterMr(w.p.b.pd, w.p.b.addr(), 4096, w.p.b.addr(),
                                        AccessFlags::MW_BIND, std::make_shared<MemcpyDma>(), &ro),
                   Status::SUCCESS);
         abi::SendWorkRequest wr = w.Type2Bind(type2(w), AccessFlags::REMOTE_WRITE, 0, 64);
         wr.bind_lkey = ro;
         return wr;
       }},
      {"LOCAL_INV of an unknown key", [&](WindowPair& w) { return w.LocalInv(0xABCDEF01); }},
      {"LOCAL_INV of a free type 2 window", [&](WindowPair& w) { return w.LocalInv(type2(w)); }},
      {"LOCAL_INV of a type 1 window",
       [&](WindowPair& w) {
         uint32_t mw = 0, rkey = 0;
         EXPECT_EQ(w.p.b.hca.AllocMw(w.p.b.pd, abi::MwType::TYPE1, &mw, &rkey), Status::SUCCESS);
         return w.LocalInv(w.BindType1(mw, AccessFlags::REMOTE_READ));
       }},
      {"LOCAL_INV of a region key", [&](WindowPair& w) { return w.LocalInv(w.region); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    WindowPair w;
    abi::SendWorkRequest wr = c.make(w);
    (void)w.p.Poll(w.p.b);  // set-up completions
    ASSERT_EQ(w.p.b.hca.PostSend(w.p.b.qpn, wr), Status::SUCCESS);
    abi::SendWorkRequest after = w.LocalInv(0);
    after.wr_type = WrType::NOP;
    after.wr_id = 99;
    ASSERT_EQ(w.p.b.hca.PostSend(w.p.b.qpn, after), Status::SUCCESS);
    const auto done = w.p.Poll(w.p.b);
    ASSERT_EQ(done.size(), 2u);
    EXPECT_EQ(done[0].status, WcStatus::MW_BIND_ERR);
    EXPECT_EQ(done[1].status, WcStatus::WR_FLUSH_ERR);
    EXPECT_EQ(w.p.b.qp().state, abi::QpState::ERROR);
  }
}

TEST(Mw, BindMwVerbRefusesWhatItCanSeeAtOnce) {
  WindowPair w;
  Hca& hca = w.p.b.hca;
  uint32_t t1 = 0, t2 = 0, rkey = 0, ud = 0;
  ASSERT_EQ(hca.AllocMw(w.p.b.pd, abi::MwType::TYPE1, &t1, &rkey), Status::SUCCESS);
  ASSERT_EQ(hca.AllocMw(w.p.b.pd, abi::MwType::TYPE2A, &t2, &rkey), Status::SUCCESS);
  EXPECT_EQ(hca.AllocMw(w.p.b.pd + 9, abi::MwType::TYPE1, &t2, &rkey), Status::INVALID_PD_HANDLE);
  abi::QpCreateParams params{};
  params.qp_type = abi::QpType::UD;
  params.caps = {4, 4, 1, 1, 0, 0};
  ASSERT_EQ(hca.CreateQp(w.p.b.pd, params, w.p.b.cq, w.p.b.cq, &ud), Status::SUCCESS);
  abi::MwBindParams bind{};
  bind.vaddr = w.p.b.addr(kWindowAt);
  bind.length = 64;
  bind.access = AccessFlags::REMOTE_READ;
  abi::MwBindParams local = bind;
  local.access = AccessFlags::LOCAL_WRITE;
  struct Case {
    uint32_t mw, qp, mr;
    const abi::MwBindParams* params;
    Status expected;
  };
  const Case cases[] = {
      {999, w.p.b.qpn, w.region, &bind, Status::INVALID_MW_HANDLE},
      {t2, w.p.b.qpn, w.region, &bind, Status::INVALID_MW_HANDLE},  // type 2: post BIND_MW
      {t1, 0xABCDE, w.region, &bind, Status::INVALID_QP_HANDLE},
      {t1, ud, w.region, &bind, Status::INVALID_SERVICE_TYPE},
      {t1, w.p.b.qpn, 0x999999, &bind, Status::INVALID_MR_HANDLE},
      {t1, w.p.b.qpn, w.region, &local, Status::INVALID_PERMISSION},
  };
  for (const Case& c : cases) EXPECT_EQ(hca.BindMw(c.mw, c.qp, c.mr, *c.params, &rkey), c.expected);
  ASSERT_EQ(hca.ModifyQp(w.p.b.qpn, testing::RcToState(abi::QpState::RESET)), Status::SUCCESS);
  EXPECT_EQ(hca.BindMw(t1, w.p.b.qpn, w.region, bind, &rkey), Status::INVALID_QP_STATE);
  EXPECT_TRUE(w.p.Poll(w.p.b).empty());
}

}  // namespace
}  // namespace softib::hca
