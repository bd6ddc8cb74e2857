// UD multicast: attach/detach checks, delivery to every attached QP of the receiving port,
// the sending port's local copy that skips the sender, and what is dropped.
#include <endian.h>
#include <gtest/gtest.h>

#include "hca/device/tests/ud_fixture.h"

namespace softib::hca {
namespace {

using abi::Status;
using testing::UdPair;

constexpr uint16_t kMlid = 0xC001;
const abi::Gid kMgid = {{0xFF, 0x12, 0x40, 0x1B, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}};

uint32_t MakeUdQp(testing::Side& s) {
  abi::QpCreateParams params{};
  params.qp_type = abi::QpType::UD;
  params.sq_signaled = 1;
  params.caps = {4, 4, 1, 1, 0, 0};
  uint32_t qpn = 0;
  EXPECT_EQ(s.hca.CreateQp(s.pd, params, s.cq, s.cq, &qpn), Status::SUCCESS);
  abi::QpModifyAttributes init =
      testing::ToState(abi::QpState::INIT,
                       abi::QpAttrMask::PKEY_INDEX | abi::QpAttrMask::PORT | abi::QpAttrMask::QKEY);
  init.port_num = 1;
  init.qkey = htobe32(testing::kQkey);
  EXPECT_EQ(s.hca.ModifyQp(qpn, init), Status::SUCCESS);
  EXPECT_EQ(s.hca.ModifyQp(qpn, testing::ToState(abi::QpState::RTR)), Status::SUCCESS);
  return qpn;
}

abi::RecvWorkRequest Recv(testing::Side& s, uint64_t id, uint64_t offset) {
  abi::RecvWorkRequest r{};
  r.wr_id = id;
  r.num_sge = 1;
  r.sge[0] = {s.addr() + offset, 40 + 64, s.key};
  return r;
}

class Mcast : public ::testing::Test {
 protected:
  void SetUp() override {
    abi::AddressVector av{};
    av.port_num = 1;
    av.dlid = kMlid;
    av.grh_present = 1;
    av.grh.dgid = kMgid;
    av.grh.hop_limit = 1;
    ASSERT_EQ(p_.a.hca.CreateAh(p_.a.pd, av, &mcast_ah_), Status::SUCCESS);
    av.grh_present = 0;
    ASSERT_EQ(p_.a.hca.CreateAh(p_.a.pd, av, &no_grh_ah_), Status::SUCCESS);
  }
  abi::SendWorkRequest Send(uint32_t ah) {
    abi::SendWorkRequest wr = p_.Send(0, 64);
    wr.av.value = ah;
    wr.remote_qpn = 0xFFFFFF;
    for (int i = 0; i < 64; ++i) p_.a.buffer[i] = static_cast<uint8_t>(0xA0 + i);
    return wr;
  }
  UdPair p_;
  uint32_t mcast_ah_ = 0, no_grh_ah_ = 0;
};

TEST_F(Mcast, AttachChecksAnswerTheRightStatus) {
  HcaConfig config;
  config.max_qps_per_mcast_grp = 1;
  config.max_mcast_grps = 1;
  Hca hca(config);
  const PdId pd = hca.AllocPd();
  uint32_t cq = 0, ud1 = 0, ud2 = 0, rc = 0;
  ASSERT_EQ(hca.CreateCq(8, &cq), Status::SUCCESS);
  abi::QpCreateParams params{};
  params.caps = {4, 4, 1, 1, 0, 0};
  params.qp_type = abi::QpType::UD;
  ASSERT_EQ(hca.CreateQp(pd, params, cq, cq, &ud1), Status::SUCCESS);
  ASSERT_EQ(hca.CreateQp(pd, params, cq, cq, &ud2), Status::SUCCESS);
  params.qp_type = abi::QpType::RC;
  ASSERT_EQ(hca.CreateQp(pd, params, cq, cq, &rc), Status::SUCCESS);
  abi::Gid unicast = kMgid;
  unicast.raw[0] = 0xFE;
  abi::Gid other = kMgid;
  other.raw[15] = 2;
  struct Case {
    uint32_t qp;
    abi::Gid gid;
    uint16_t lid;
    Status expected;
  };
  const Case cases[] = {
      {0x999, kMgid, kMlid, Status::INVALID_QP_HANDLE},
      {rc, kMgid, kMlid, Status::INVALID_SERVICE_TYPE},
      {ud1, kMgid, 0x1234, Status::INVALID_LID},
      {ud1, kMgid, 0xFFFF, Status::INVALID_LID},  // the permissive LID
      {ud1, unicast, kMlid, Status::INVALID_GID},
      {ud1, kMgid, kMlid, Status::SUCCESS},
      {ud1, kMgid, kMlid, Status::SUCCESS},  // again: no change
      {ud2, kMgid, kMlid, Status::MAX_MCAST_QPS_REACHED},
      {ud2, other, kMlid, Status::INSUFFICIENT_RESOURCES},  // one group at most
  };
  for (const Case& c : cases) EXPECT_EQ(hca.AttachMcast(c.qp, c.gid, c.lid), c.expected);
  EXPECT_EQ(hca.mcast().attachments(), 1u);
  EXPECT_EQ(hca.DestroyQp(ud1), Status::RESOURCE_BUSY);
  EXPECT_EQ(hca.DetachMcast(ud2, kMgid, kMlid), Status::NOT_FOUND);
  EXPECT_EQ(hca.DetachMcast(ud1, kMgid, kMlid), Status::SUCCESS);
  EXPECT_EQ(hca.DestroyQp(ud1), Status::SUCCESS);
}

TEST_F(Mcast, EveryAttachedQpOfThePortGetsACopyButNotTheSender) {
  const uint32_t b2 = MakeUdQp(p_.b);
  const uint32_t a2 = MakeUdQp(p_.a);
  for (uint32_t qp : {p_.b.qpn, b2})
    ASSERT_EQ(p_.b.hca.AttachMcast(qp, kMgid, kMlid), Status::SUCCESS);
  for (uint32_t qp : {p_.a.qpn, a2})
    ASSERT_EQ(p_.a.hca.AttachMcast(qp, kMgid, kMlid), Status::SUCCESS);
  ASSERT_EQ(p_.b.hca.PostRecv(p_.b.qpn, Recv(p_.b, 1, 0)), Status::SUCCESS);
  ASSERT_EQ(p_.b.hca.PostRecv(b2, Recv(p_.b, 2, 1024)), Status::SUCCESS);
  ASSERT_EQ(p_.a.hca.PostRecv(p_.a.qpn, Recv(p_.a, 3, 2048)), Status::SUCCESS);
  ASSERT_EQ(p_.a.hca.PostRecv(a2, Recv(p_.a, 4, 4096)), Status::SUCCESS);
  ASSERT_EQ(p_.a.hca.PostSend(p_.a.qpn, Send(mcast_ah_)), Status::SUCCESS);
  p_.cable.Pump();
  const auto b = p_.Poll(p_.b);
  ASSERT_EQ(b.size(), 2u);
  for (const abi::WorkCompletion& wc : b) {
    EXPECT_EQ(wc.status, abi::WcStatus::SUCCESS);
    EXPECT_EQ(wc.length, 40u + 64u);
    EXPECT_EQ(wc.flags, abi::WcFlags::GRH);
    EXPECT_EQ(wc.src_qp, p_.a.qpn);
  }
  EXPECT_EQ(b[0].wr_id + b[1].wr_id, 3u);
  for (uint64_t base : {0, 1024}) {
    EXPECT_EQ(p_.b.buffer[base + 24], 0xFF);  // GRH:DGID starts at byte 24
    EXPECT_EQ(p_.b.buffer[base + 39], 0x01);
    EXPECT_EQ(p_.b.buffer[base + 40], 0xA0);
    EXPECT_EQ(p_.b.buffer[base + 40 + 63], 0xA0 + 63);
  }
  // On the sending HCA: the send completion and a2's local copy; the sender heard nothing.
  const auto a = p_.Poll(p_.a);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].wr_id, 4u);  // delivered while the send executed
  EXPECT_EQ(a[0].qp_num, a2);
  EXPECT_EQ(a[1].opcode, abi::WcOpcode::SEND);
  EXPECT_EQ(p_.a.hca.counters(1).xmit_multicast_packets, 1u);
  EXPECT_EQ(p_.b.hca.counters(1).rcv_multicast_packets, 1u);
  EXPECT_EQ(p_.a.hca.Qp(p_.a.qpn)->rq.size(), 1u);  // the sender's receive is still there
}

TEST_F(Mcast, DetachedQpsUnknownGroupsAndMissingGrhsHearNothing) {
  const uint32_t b2 = MakeUdQp(p_.b);
  for (uint32_t qp : {p_.b.qpn, b2})
    ASSERT_EQ(p_.b.hca.AttachMcast(qp, kMgid, kMlid), Status::SUCCESS);
  ASSERT_EQ(p_.b.hca.PostRecv(p_.b.qpn, Recv(p_.b, 1, 0)), Status::SUCCESS);
  ASSERT_EQ(p_.b.hca.PostRecv(b2, Recv(p_.b, 2, 1024)), Status::SUCCESS);
  ASSERT_EQ(p_.b.hca.DetachMcast(b2, kMgid, kMlid), Status::SUCCESS);
  ASSERT_EQ(p_.a.hca.PostSend(p_.a.qpn, Send(mcast_ah_)), Status::SUCCESS);
  p_.cable.Pump();
  auto b = p_.Poll(p_.b);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].wr_id, 1u);
  ASSERT_EQ(p_.a.hca.PostSend(p_.a.qpn, Send(no_grh_ah_)), Status::SUCCESS);
  abi::AddressVector av{};
  av.port_num = 1;
  av.dlid = kMlid + 1;  // a group nobody on b joined
  av.grh_present = 1;
  av.grh.dgid = kMgid;
  uint32_t stranger = 0;
  ASSERT_EQ(p_.a.hca.CreateAh(p_.a.pd, av, &stranger), Status::SUCCESS);
  ASSERT_EQ(p_.a.hca.PostSend(p_.a.qpn, Send(stranger)), Status::SUCCESS);
  p_.cable.Pump();
  EXPECT_TRUE(p_.Poll(p_.b).empty());
  EXPECT_EQ(p_.b.hca.counters(1).recv_drop(RecvDrop::kNoGrh), 1u);
  EXPECT_EQ(p_.b.hca.counters(1).recv_drop(RecvDrop::kNoMcastGroup), 1u);
}

}  // namespace
}  // namespace softib::hca
