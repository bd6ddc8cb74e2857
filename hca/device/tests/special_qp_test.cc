// QP0 (SMI) and QP1 (GSI): one each per port, their receive rules (VL15, P_Key, Q_Key)
// and their sends.
#include <endian.h>
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "hca/device/hca.h"

namespace softib::hca {
namespace {

using abi::QpAttrMask;
using abi::QpState;
using abi::Status;

abi::QpModifyAttributes To(QpState state, QpAttrMask extra = {}) {
  abi::QpModifyAttributes a{};
  a.mask = QpAttrMask::STATE | extra;
  a.state = state;
  return a;
}

struct Node {
  Hca hca;
  PdId pd = 0;
  uint32_t cq = 0, smi = 0, gsi = 0, key = 0, ah = 0;
  std::array<uint8_t, 4096> buffer{};
  uint64_t addr(uint64_t offset = 0) const {
    return reinterpret_cast<uint64_t>(buffer.data()) + offset;
  }
  std::vector<abi::WorkCompletion> Poll() {
    std::vector<abi::WorkCompletion> out(16);
    out.resize(hca.Cq(cq)->Poll(out));
    return out;
  }
};

class SpecialQp : public ::testing::Test {
 protected:
  void SetUp() override {
    Init(a_, 1);
    Init(b_, 2);
    a_.hca.port(1).link = &cable_.end(0);
    b_.hca.port(1).link = &cable_.end(1);
    cable_.Attach(0, [this](std::span<const uint8_t> p) { a_.hca.Receive(1, p); });
    cable_.Attach(1, [this](std::span<const uint8_t> p) { b_.hca.Receive(1, p); });
  }
  void Init(Node& n, uint16_t lid) {
    n.hca.port(1).lid = lid;
    n.pd = n.hca.AllocPd();
    ASSERT_EQ(n.hca.CreateCq(64, &n.cq), Status::SUCCESS);
    abi::QpCreateParams params{};
    params.sq_signaled = 1;
    params.caps = {8, 8, 2, 2, 0, 0};
    params.qp_type = abi::QpType::SMI;
    ASSERT_EQ(n.hca.CreateSpecialQp(n.pd, 1, params, n.cq, n.cq, &n.smi), Status::SUCCESS);
    params.qp_type = abi::QpType::GSI;
    ASSERT_EQ(n.hca.CreateSpecialQp(n.pd, 1, params, n.cq, n.cq, &n.gsi), Status::SUCCESS);
    for (uint32_t qp : {n.smi, n.gsi}) {
      abi::QpModifyAttributes init = To(QpState::INIT, QpAttrMask::PKEY_INDEX | QpAttrMask::QKEY);
      ASSERT_EQ(n.hca.ModifyQp(qp, init), Status::SUCCESS);
      ASSERT_EQ(n.hca.ModifyQp(qp, To(QpState::RTR)), Status::SUCCESS);
      ASSERT_EQ(n.hca.ModifyQp(qp, To(QpState::RTS, QpAttrMask::SQ_PSN)), Status::SUCCESS);
    }
    ASSERT_EQ(
        n.hca.RegisterMr(n.pd, n.addr(), n.buffer.size(), n.addr(), abi::AccessFlags::LOCAL_WRITE,
                         std::make_shared<MemcpyDma>(), &n.key),
        Status::SUCCESS);
    abi::AddressVector av{};
    av.port_num = 1;
    av.dlid = lid == 1 ? 2 : 1;
    ASSERT_EQ(n.hca.CreateAh(n.pd, av, &n.ah), Status::SUCCESS);
  }
  abi::SendWorkRequest Mad(uint32_t remote_qpn, uint32_t qkey, uint16_t pkey_index = 0) {
    abi::SendWorkRequest wr{};
    wr.wr_id = 7;
    wr.wr_type = abi::WrType::SEND;
    wr.num_sge = 1;
    wr.sge[0] = {a_.addr(), 256, a_.key};  // a MAD is 256 bytes
    wr.av.value = a_.ah;
    wr.remote_qpn = remote_qpn;
    wr.remote_qkey = qkey;
    wr.pkey_index = pkey_index;
    return wr;
  }
  void PostRecv(uint32_t qp) {
    abi::RecvWorkRequest r{};
    r.wr_id = 9;
    r.num_sge = 1;
    r.sge[0] = {b_.addr(), 40 + 256, b_.key};
    ASSERT_EQ(b_.hca.PostRecv(qp, r), Status::SUCCESS);
  }

  BackToBackCable cable_;
  Node a_, b_;
};

TEST_F(SpecialQp, OnePerPortWithHandlesOutsideTheQpnSpace) {
  HcaConfig config;
  config.num_ports = 2;
  Hca hca(config);
  const PdId pd = hca.AllocPd();
  uint32_t cq, h1, h2, dup;
  ASSERT_EQ(hca.CreateCq(8, &cq), Status::SUCCESS);
  abi::QpCreateParams params{};
  params.caps = {4, 4, 1, 1, 0, 0};
  params.qp_type = abi::QpType::GSI;
  ASSERT_EQ(hca.CreateSpecialQp(pd, 1, params, cq, cq, &h1), Status::SUCCESS);
  ASSERT_EQ(hca.CreateSpecialQp(pd, 2, params, cq, cq, &h2), Status::SUCCESS);
  EXPECT_NE(h1, h2);
  EXPECT_EQ(hca.Qp(h1)->qpn, 1u);
  EXPECT_EQ(hca.Qp(h2)->qpn, 1u);
  EXPECT_EQ(hca.Qp(h2)->port, 2);
  EXPECT_GT(h1, 0xFFFFFFu);
  EXPECT_EQ(hca.CreateSpecialQp(pd, 1, params, cq, cq, &dup), Status::RESOURCE_BUSY);
  EXPECT_EQ(hca.CreateSpecialQp(pd, 3, params, cq, cq, &dup), Status::INVALID_PORT);
  params.qp_type = abi::QpType::UD;
  EXPECT_EQ(hca.CreateSpecialQp(pd, 1, params, cq, cq, &dup), Status::INVALID_SERVICE_TYPE);
  params.qp_type = abi::QpType::SMI;
  EXPECT_EQ(hca.CreateQp(pd, params, cq, cq, &dup), Status::INVALID_SERVICE_TYPE);
  abi::QpModifyAttributes move =
      To(QpState::INIT, QpAttrMask::PKEY_INDEX | QpAttrMask::QKEY | QpAttrMask::PORT);
  move.port_num = 1;
  EXPECT_EQ(hca.ModifyQp(h2, move), Status::INVALID_PORT);  // bound to port 2
  ASSERT_EQ(hca.DestroyQp(h1), Status::SUCCESS);
  params.qp_type = abi::QpType::GSI;
  EXPECT_EQ(hca.CreateSpecialQp(pd, 1, params, cq, cq, &h1), Status::SUCCESS);  // again
}

TEST_F(SpecialQp, GsiExchangesMadsWithTheWellKnownQkey) {
  PostRecv(b_.gsi);
  for (int i = 0; i < 256; ++i) a_.buffer[i] = static_cast<uint8_t>(i ^ 0x5A);
  ASSERT_EQ(a_.hca.PostSend(a_.gsi, Mad(1, 0x80010000)), Status::SUCCESS);
  cable_.Pump();
  const auto sent = a_.Poll();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, abi::WcStatus::SUCCESS);
  EXPECT_EQ(sent[0].qp_num, 1u);
  const auto got = b_.Poll();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, abi::WcStatus::SUCCESS);
  EXPECT_EQ(got[0].qp_num, 1u);
  EXPECT_EQ(got[0].src_qp, 1u);
  EXPECT_EQ(got[0].length, 40u + 256u);
  EXPECT_EQ(got[0].slid, 1);
  for (int i = 0; i < 256; ++i) ASSERT_EQ(b_.buffer[40 + i], static_cast<uint8_t>(i ^ 0x5A));
}

TEST_F(SpecialQp, GsiDropsOtherQkeysAndAcceptsAnyTablePkey) {
  PostRecv(b_.gsi);
  ASSERT_EQ(a_.hca.PostSend(a_.gsi, Mad(1, 0x00010000)), Status::SUCCESS);  // not QP1's
  cable_.Pump();
  EXPECT_TRUE(b_.Poll().empty());
  EXPECT_EQ(b_.hca.counters(1).qkey_violations, 1u);
  EXPECT_EQ(b_.hca.counters(1).recv_drop(RecvDrop::kQkeyViolation), 1u);
  // A partition both ports know at different indexes: QP1 reports where it found it.
  a_.hca.port(1).pkeys[2] = 0x8123;
  b_.hca.port(1).pkeys[5] = 0x8123;
  ASSERT_EQ(a_.hca.PostSend(a_.gsi, Mad(1, 0x80010000, 2)), Status::SUCCESS);
  cable_.Pump();
  const auto got = b_.Poll();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].pkey_index, 5);
  EXPECT_EQ(a_.Poll().size(), 2u);
  // A P_Key that is in no table entry of b's port is a violation.
  a_.hca.port(1).pkeys[3] = 0x8444;
  PostRecv(b_.gsi);
  ASSERT_EQ(a_.hca.PostSend(a_.gsi, Mad(1, 0x80010000, 3)), Status::SUCCESS);
  cable_.Pump();
  EXPECT_TRUE(b_.Poll().empty());
  EXPECT_EQ(b_.hca.counters(1).pkey_violations, 1u);
  // A P_Key index outside the table is refused at post time.
  EXPECT_EQ(a_.hca.PostSend(a_.gsi, Mad(1, 0x80010000, 128)), Status::INVALID_SETTING);
}

TEST_F(SpecialQp, SmiTalksOnVl15AndSkipsPartitionAndQkeyChecks) {
  std::vector<uint8_t> vls;
  cable_.SetTap([&](int, std::span<const uint8_t> p) { vls.push_back(p[0] >> 4); });
  PostRecv(b_.smi);
  b_.hca.port(1).pkeys[0] = 0x7FFF;  // b's default partition limited: QP0 does not care
  ASSERT_EQ(a_.hca.PostSend(a_.smi, Mad(0, 0x12345678)), Status::SUCCESS);
  cable_.Pump();
  ASSERT_EQ(vls.size(), 1u);
  EXPECT_EQ(vls[0], 15);  // LRH:VL
  const auto got = b_.Poll();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, abi::WcStatus::SUCCESS);
  EXPECT_EQ(got[0].qp_num, 0u);
  EXPECT_EQ(got[0].src_qp, 0u);
  EXPECT_EQ(b_.hca.counters(1).pkey_violations, 0u);
}

TEST_F(SpecialQp, Vl15ReachesOnlyQp0) {
  // The GSI sending to QP0 goes on a data VL: QP0 must drop it. A packet on VL15 to QP1 is
  // dropped as well, and counted as VL15Dropped.
  PostRecv(b_.smi);
  PostRecv(b_.gsi);
  ASSERT_EQ(a_.hca.PostSend(a_.gsi, Mad(0, 0x80010000)), Status::SUCCESS);
  ASSERT_EQ(a_.hca.PostSend(a_.smi, Mad(1, 0x80010000)), Status::SUCCESS);
  cable_.Pump();
  EXPECT_TRUE(b_.Poll().empty());
  EXPECT_EQ(b_.hca.counters(1).recv_drop(RecvDrop::kWrongVl), 2u);
  EXPECT_EQ(b_.hca.counters(1).vl15_dropped, 1u);
}

TEST_F(SpecialQp, SpecialQpsSendOnlySendsAndNops) {
  abi::SendWorkRequest write = Mad(1, 0x80010000);
  write.wr_type = abi::WrType::RDMA_WRITE;
  EXPECT_EQ(a_.hca.PostSend(a_.gsi, write), Status::INVALID_WR_TYPE);
  abi::SendWorkRequest nop = Mad(1, 0x80010000);
  nop.wr_type = abi::WrType::NOP;
  ASSERT_EQ(a_.hca.PostSend(a_.gsi, nop), Status::SUCCESS);
  const auto done = a_.Poll();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, abi::WcOpcode::NOP);
  EXPECT_EQ(cable_.queued(), 0u);
}

}  // namespace
}  // namespace softib::hca
