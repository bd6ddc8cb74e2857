// Modify-QP through the generated transition table, plus the value checks the device adds.
#include <gtest/gtest.h>

#include "ud_fixture.h"

namespace softib::hca {
namespace {

using abi::QpAttrMask;
using abi::QpState;
using abi::Status;
using testing::ToState;

class QpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pd_ = hca_.AllocPd();
    ASSERT_EQ(hca_.CreateCq(8, &cq_), Status::SUCCESS);
  }
  uint32_t Make(abi::QpType type) {
    abi::QpCreateParams params{};
    params.qp_type = type;
    params.caps = {4, 4, 1, 1, 0, 0};
    uint32_t qpn = 0;
    EXPECT_EQ(hca_.CreateQp(pd_, params, cq_, cq_, &qpn), Status::SUCCESS);
    return qpn;
  }
  QpState State(uint32_t qpn) { return hca_.Qp(qpn)->state; }
  Hca hca_;
  PdId pd_ = 0;
  uint32_t cq_ = 0;
};

TEST_F(QpTest, UdInitNeedsPkeyPortQkeyAndRefusesOthers) {
  const uint32_t qpn = Make(abi::QpType::UD);
  EXPECT_EQ(hca_.ModifyQp(qpn, ToState(QpState::RTR)), Status::INVALID_STATE);  // skips INIT
  EXPECT_EQ(hca_.ModifyQp(qpn, ToState(QpState::INIT, QpAttrMask::PORT)),
            Status::INVALID_SETTING);  // P_Key index and Q_Key missing
  abi::QpModifyAttributes a = ToState(QpState::INIT, QpAttrMask::PKEY_INDEX | QpAttrMask::PORT |
                                                         QpAttrMask::QKEY | QpAttrMask::RQ_PSN);
  a.port_num = 1;
  EXPECT_EQ(hca_.ModifyQp(qpn, a), Status::INVALID_SETTING);  // RQ_PSN forbidden here
  a.mask = a.mask & ~QpAttrMask::RQ_PSN;
  a.pkey_index = 128;
  EXPECT_EQ(hca_.ModifyQp(qpn, a), Status::INVALID_PKEY);  // 128-entry P_Key table
  a.pkey_index = 0;
  a.port_num = 2;
  EXPECT_EQ(hca_.ModifyQp(qpn, a), Status::INVALID_PORT);
  EXPECT_EQ(State(qpn), QpState::RESET);  // failures change nothing
  a.port_num = 1;
  a.qkey = htobe32(0x12345678);
  EXPECT_EQ(hca_.ModifyQp(qpn, a), Status::SUCCESS);
  abi::QpAttributes q;
  ASSERT_EQ(hca_.QueryQp(qpn, &q), Status::SUCCESS);
  EXPECT_EQ(q.state, QpState::INIT);
  EXPECT_EQ(be32toh(q.qkey), 0x12345678u);
  EXPECT_EQ(hca_.Qp(qpn)->qkey, 0x12345678u);
}

TEST_F(QpTest, RcWalksToRtsWithItsRequiredAttributes) {
  const uint32_t qpn = Make(abi::QpType::RC);
  abi::QpModifyAttributes init =
      ToState(QpState::INIT, QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::ACCESS_FLAGS);
  init.port_num = 1;
  ASSERT_EQ(hca_.ModifyQp(qpn, init), Status::SUCCESS);
  abi::QpModifyAttributes rtr =
      ToState(QpState::RTR, QpAttrMask::AV | QpAttrMask::PATH_MTU | QpAttrMask::DEST_QPN);
  rtr.av.port_num = 1;
  rtr.path_mtu = static_cast<uint8_t>(abi::PathMtu::MTU_1024);
  EXPECT_EQ(hca_.ModifyQp(qpn, rtr), Status::INVALID_SETTING);  // RQ_PSN, MAX_DEST_RD_ATOMIC
  rtr.mask |= QpAttrMask::RQ_PSN | QpAttrMask::MAX_DEST_RD_ATOMIC | QpAttrMask::MIN_RNR_TIMER;
  rtr.rq_psn = 0x1234567;  // 24 bits kept
  ASSERT_EQ(hca_.ModifyQp(qpn, rtr), Status::SUCCESS);
  EXPECT_EQ(hca_.Qp(qpn)->rq_psn, 0x234567u);
  abi::QpModifyAttributes rts =
      ToState(QpState::RTS, QpAttrMask::SQ_PSN | QpAttrMask::TIMEOUT | QpAttrMask::RETRY_COUNT |
                                QpAttrMask::RNR_RETRY | QpAttrMask::MAX_RD_ATOMIC);
  ASSERT_EQ(hca_.ModifyQp(qpn, rts), Status::SUCCESS);
  EXPECT_EQ(State(qpn), QpState::RTS);
  abi::QpModifyAttributes wrong_current = ToState(QpState::SQD, QpAttrMask::CUR_STATE);
  wrong_current.current_state = QpState::RTR;
  EXPECT_EQ(hca_.ModifyQp(qpn, wrong_current), Status::INVALID_STATE);
  EXPECT_EQ(hca_.ModifyQp(qpn, ToState(QpState::INIT)), Status::INVALID_STATE);
  ASSERT_EQ(hca_.ModifyQp(qpn, ToState(QpState::ERROR)), Status::SUCCESS);
  ASSERT_EQ(hca_.ModifyQp(qpn, ToState(QpState::RESET)), Status::SUCCESS);
}

TEST_F(QpTest, ErrorFlushesPostedReceivesAndObjectsInUseAreBusy) {
  const uint32_t qpn = Make(abi::QpType::UD);
  abi::QpModifyAttributes init =
      ToState(QpState::INIT, QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::QKEY);
  init.port_num = 1;
  ASSERT_EQ(hca_.ModifyQp(qpn, init), Status::SUCCESS);
  abi::RecvWorkRequest wr{};
  wr.wr_id = 5;
  ASSERT_EQ(hca_.PostRecv(qpn, wr), Status::SUCCESS);
  ASSERT_EQ(hca_.ModifyQp(qpn, ToState(QpState::ERROR)), Status::SUCCESS);
  abi::WorkCompletion wc[2];
  ASSERT_EQ(hca_.Cq(cq_)->Poll(wc), 1u);
  EXPECT_EQ(wc[0].status, abi::WcStatus::WR_FLUSH_ERR);
  EXPECT_EQ(wc[0].wr_id, 5u);
  EXPECT_EQ(hca_.DestroyCq(cq_), Status::RESOURCE_BUSY);
  EXPECT_EQ(hca_.FreePd(pd_), Status::RESOURCE_BUSY);
  ASSERT_EQ(hca_.DestroyQp(qpn), Status::SUCCESS);
  EXPECT_EQ(hca_.DestroyCq(cq_), Status::SUCCESS);
  EXPECT_EQ(hca_.FreePd(pd_), Status::SUCCESS);
}

}  // namespace
}  // namespace softib::hca
