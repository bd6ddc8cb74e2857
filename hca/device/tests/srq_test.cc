// Shared receive queues: the verbs' checks, receiving through an SRQ on UD and RC, the
// one-shot limit event, and the last-WQE event of a QP that fails.
#include <endian.h>
#include <gtest/gtest.h>

#include <vector>

#include "hca/device/tests/rc_fixture.h"
#include "hca/device/tests/ud_fixture.h"

namespace softib::hca {
namespace {

using abi::SrqAttrMask;
using abi::Status;
using testing::RcOptions;
using testing::RcPair;

abi::RecvWorkRequest Recv(uint64_t id, uint64_t addr, uint32_t length, uint32_t key) {
  abi::RecvWorkRequest r{};
  r.wr_id = id;
  r.num_sge = 1;
  r.sge[0] = {addr, length, key};
  return r;
}

TEST(Srq, VerbChecksAnswerTheRightStatus) {
  Hca hca;
  const PdId pd = hca.AllocPd();
  uint32_t srq = 0, other = 0, cq = 0, qp = 0;
  abi::SrqAttributes granted{};
  struct Create {
    abi::SrqAttributes attrs;
    Status expected;
  };
  const Create creates[] = {
      {{0, 1, 0, 0}, Status::INVALID_MAX_WRS},
      {{16384, 1, 0, 0}, Status::INVALID_MAX_WRS},  // above max_srq_wrs (16383)
      {{8, 17, 0, 0}, Status::INVALID_MAX_SGE},
      {{8, 1, 9, 0}, Status::INVALID_SETTING},  // limit above max_wr
      {{8, 2, 3, 0}, Status::SUCCESS},
  };
  for (const Create& c : creates) EXPECT_EQ(hca.CreateSrq(pd, c.attrs, &srq, &granted), c.expected);
  EXPECT_EQ(granted.max_wr, 8u);
  EXPECT_EQ(granted.srq_limit, 3u);
  EXPECT_EQ(hca.CreateSrq(pd + 1, {8, 1, 0, 0}, &other, nullptr), Status::INVALID_PD_HANDLE);

  for (uint64_t i = 0; i < 8; ++i)
    ASSERT_EQ(hca.PostSrqRecv(srq, Recv(i, 0, 0, 0)), Status::SUCCESS);
  EXPECT_EQ(hca.PostSrqRecv(srq, Recv(9, 0, 0, 0)), Status::INSUFFICIENT_RESOURCES);
  abi::RecvWorkRequest three = Recv(9, 0, 0, 0);
  three.num_sge = 3;
  EXPECT_EQ(hca.PostSrqRecv(srq, three), Status::INVALID_MAX_SGE);
  EXPECT_EQ(hca.PostSrqRecv(srq + 7, Recv(9, 0, 0, 0)), Status::INVALID_SRQ_HANDLE);

  struct Modify {
    SrqAttrMask mask;
    abi::SrqAttributes attrs;
    Status expected;
  };
  const Modify modifies[] = {
      {SrqAttrMask::MAX_WR, {7, 0, 0, 0}, Status::INVALID_SRQ_SIZE},  // 8 queued
      {SrqAttrMask::MAX_WR, {16384, 0, 0, 0}, Status::INVALID_SRQ_SIZE},
      {SrqAttrMask::LIMIT, {0, 0, 9, 0}, Status::INVALID_SETTING},
      {static_cast<SrqAttrMask>(4), {}, Status::INVALID_SETTING},
      {SrqAttrMask::MAX_WR | SrqAttrMask::LIMIT, {32, 0, 20, 0}, Status::SUCCESS},
  };
  for (const Modify& m : modifies) EXPECT_EQ(hca.ModifySrq(srq, m.mask, m.attrs), m.expected);
  abi::SrqAttributes now{};
  ASSERT_EQ(hca.QuerySrq(srq, &now), Status::SUCCESS);
  EXPECT_EQ(now.max_wr, 32u);
  EXPECT_EQ(now.max_sge, 2u);
  EXPECT_EQ(now.srq_limit, 20u);
  EXPECT_EQ(hca.QuerySrq(99, &now), Status::INVALID_SRQ_HANDLE);

  ASSERT_EQ(hca.CreateCq(8, &cq), Status::SUCCESS);
  abi::QpCreateParams params{};
  params.qp_type = abi::QpType::RC;
  params.caps = {4, 4, 1, 1, 0, 0};
  EXPECT_EQ(hca.CreateQp(pd, params, cq, cq, srq, &qp), Status::INVALID_SETTING);  // rq_depth
  params.caps.rq_depth = 0;
  EXPECT_EQ(hca.CreateQp(pd, params, cq, cq, 99, &qp), Status::INVALID_SRQ_HANDLE);
  const PdId pd2 = hca.AllocPd();
  EXPECT_EQ(hca.CreateQp(pd2, params, cq, cq, srq, &qp), Status::INVALID_SETTING);  // PD
  ASSERT_EQ(hca.CreateQp(pd, params, cq, cq, srq, &qp), Status::SUCCESS);
  EXPECT_EQ(hca.PostRecv(qp, Recv(1, 0, 0, 0)), Status::INVALID_SETTING);
  EXPECT_EQ(hca.DestroySrq(srq), Status::RESOURCE_BUSY);
  EXPECT_EQ(hca.FreePd(pd), Status::RESOURCE_BUSY);
  ASSERT_EQ(hca.DestroyQp(qp), Status::SUCCESS);
  EXPECT_EQ(hca.DestroySrq(srq), Status::SUCCESS);
  EXPECT_EQ(hca.DestroySrq(srq), Status::INVALID_SRQ_HANDLE);
}

TEST(Srq, TwoUdQpsShareOneSrqInPostingOrderAndTheLimitFiresOnce) {
  testing::UdPair p;
  std::vector<DeviceEvent> events;
  p.b.hca.async_events = [&](const DeviceEvent& e) { events.push_back(e); };
  uint32_t srq = 0, qp2 = 0;
  ASSERT_EQ(p.b.hca.CreateSrq(p.b.pd, {8, 1, 0, 0}, &srq, nullptr), Status::SUCCESS);
  abi::QpCreateParams params{};
  params.qp_type = abi::QpType::UD;
  params.caps = {4, 0, 1, 1, 0, 0};
  uint32_t qp1 = 0;
  ASSERT_EQ(p.b.hca.CreateQp(p.b.pd, params, p.b.cq, p.b.cq, srq, &qp1), Status::SUCCESS);
  ASSERT_EQ(p.b.hca.CreateQp(p.b.pd, params, p.b.cq, p.b.cq, srq, &qp2), Status::SUCCESS);
  for (uint32_t qp : {qp1, qp2}) {
    abi::QpModifyAttributes init =
        testing::ToState(abi::QpState::INIT, abi::QpAttrMask::PKEY_INDEX | abi::QpAttrMask::PORT |
                                                 abi::QpAttrMask::QKEY);
    init.port_num = 1;
    init.qkey = htobe32(testing::kQkey);
    ASSERT_EQ(p.b.hca.ModifyQp(qp, init), Status::SUCCESS);
    ASSERT_EQ(p.b.hca.ModifyQp(qp, testing::ToState(abi::QpState::RTR)), Status::SUCCESS);
  }
  for (uint64_t i = 0; i < 4; ++i)
    ASSERT_EQ(p.b.hca.PostSrqRecv(srq, Recv(10 + i, p.b.addr() + i * 256, 256, p.b.key)),
              Status::SUCCESS);
  ASSERT_EQ(p.b.hca.ModifySrq(srq, SrqAttrMask::LIMIT, {0, 0, 3, 0}), Status::SUCCESS);
  // Four datagrams, alternating QPs: the WQEs are consumed in posting order by whoever
  // receives; the limit (3) is crossed by the second one only.
  for (int i = 0; i < 4; ++i) {
    abi::SendWorkRequest wr = p.Send(0, 8);
    wr.remote_qpn = i % 2 == 0 ? qp1 : qp2;
    ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, wr), Status::SUCCESS);
    p.cable.Pump();
    EXPECT_EQ(events.size(), i == 0 ? 0u : 1u) << i;  // 3 left after the first: not below
  }
  const auto got = p.Poll(p.b);
  ASSERT_EQ(got.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(got[i].status, abi::WcStatus::SUCCESS);
    EXPECT_EQ(got[i].wr_id, 10u + i);
    EXPECT_EQ(got[i].qp_num, i % 2 == 0 ? qp1 : qp2);
  }
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, abi::AsyncEventType::SRQ_LIMIT_REACHED);
  EXPECT_EQ(events[0].object, srq);
  abi::SrqAttributes now{};
  ASSERT_EQ(p.b.hca.QuerySrq(srq, &now), Status::SUCCESS);
  EXPECT_EQ(now.srq_limit, 0u);  // disarmed
  // A fifth datagram finds the SRQ empty and is dropped, as on any UD QP.
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 8)), Status::SUCCESS);
  abi::SendWorkRequest wr = p.Send(0, 8);
  wr.remote_qpn = qp1;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, wr), Status::SUCCESS);
  p.cable.Pump();
  EXPECT_EQ(p.b.hca.counters(1).recv_drop(RecvDrop::kNoReceiveWqe), 2u);
}

TEST(Srq, RcReceivesFromTheSrqAndAFailedQpReportsItsLastWqe) {
  RcOptions options;
  options.b_srq_depth = 16;
  RcPair p(options);
  std::vector<DeviceEvent> events;
  p.b.hca.async_events = [&](const DeviceEvent& e) { events.push_back(e); };
  // Nothing posted yet: RNR NAKs until the SRQ gets a WQE.
  testing::Fill(p.a.buffer, 0, 3000, 4);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(abi::WrType::SEND, 0, 3000)), Status::SUCCESS);
  p.cable.Pump();
  EXPECT_TRUE(p.Poll(p.b).empty());
  ASSERT_EQ(p.b.hca.PostSrqRecv(p.b.srq, p.Recv(0, 4096, 21)), Status::SUCCESS);
  ASSERT_EQ(p.b.hca.PostSrqRecv(p.b.srq, p.Recv(8192, 4096, 22)), Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  auto got = p.Poll(p.b);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, abi::WcStatus::SUCCESS);
  EXPECT_EQ(got[0].wr_id, 21u);
  EXPECT_EQ(got[0].length, 3000u);
  EXPECT_TRUE(testing::Matches(p.b.buffer, 0, 3000, 4));
  // The QP fails: the SRQ's remaining WQE stays there (it belongs to no QP), and the QP
  // reports once that it will take no more.
  ASSERT_EQ(p.b.hca.ModifyQp(p.b.qpn, testing::RcToState(abi::QpState::ERROR)), Status::SUCCESS);
  EXPECT_TRUE(p.Poll(p.b).empty());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, abi::AsyncEventType::SRQ_QP_LAST_WQE_REACHED);
  EXPECT_EQ(events[0].object, p.b.qpn);
  EXPECT_EQ(p.b.hca.Srq(p.b.srq)->wqes.size(), 1u);
  ASSERT_EQ(p.b.hca.ModifyQp(p.b.qpn, testing::RcToState(abi::QpState::RESET)), Status::SUCCESS);
  ASSERT_EQ(p.b.hca.ModifyQp(p.b.qpn, testing::RcToState(abi::QpState::ERROR)), Status::SUCCESS);
  EXPECT_EQ(events.size(), 2u);  // once per trip to Error
}

}  // namespace
}  // namespace softib::hca
