// Send queue drain (IBA 10.3.1, 11.6.3.1): RTS→SQD stops the requester from starting new
// work, lets what is in flight complete, and, when EN_SQD_ASYNC_NOTIFY asked for it,
// reports SQ_DRAINED once (naming the QP) after the last outstanding completion. Work posted
// meanwhile waits for SQD→RTS.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "rc_fixture.h"

namespace softib::hca {
namespace {

using abi::AsyncEventType;
using abi::QpState;
using abi::WrType;
using testing::RcOptions;
using testing::RcPair;
using testing::RcToState;

using Event = std::pair<AsyncEventType, uint32_t>;

void Record(Hca& hca, std::vector<Event>* events) {
  hca.async_events = [events](const DeviceEvent& e) { events->emplace_back(e.type, e.object); };
}

void FillWithByte(std::vector<uint8_t>& buffer, uint64_t offset, uint32_t length, uint8_t value) {
  std::fill(buffer.begin() + offset, buffer.begin() + offset + length, value);
}

TEST(Sqd, DrainCompletesWhatIsInFlightThenReportsSqDrainedOnce) {
  RcPair p;
  std::vector<Event> events;
  Record(p.a.hca, &events);
  for (uint32_t i = 0; i < 3; ++i) {
    FillWithByte(p.a.buffer, i * 4096, 2000, static_cast<uint8_t>(0x10 + i));
    ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_WRITE, i * 4096, 2000, i * 4096, i)),
              abi::Status::SUCCESS);
  }
  abi::QpModifyAttributes sqd = RcToState(QpState::SQD, abi::QpAttrMask::EN_SQD_ASYNC_NOTIFY);
  sqd.en_sqd_async_notify = 1;
  ASSERT_EQ(p.a.hca.ModifyQp(p.a.qpn, sqd), abi::Status::SUCCESS);
  abi::QpAttributes attrs{};
  ASSERT_EQ(p.a.hca.QueryQp(p.a.qpn, &attrs), abi::Status::SUCCESS);
  EXPECT_EQ(attrs.state, QpState::SQD);
  EXPECT_EQ(attrs.sq_draining, 1);  // three writes on the wire, none acknowledged
  EXPECT_EQ(attrs.en_sqd_async_notify, 1);
  EXPECT_TRUE(events.empty());

  // Posted during the drain: accepted, not started.
  FillWithByte(p.a.buffer, 3 * 4096, 2000, 0x77);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_WRITE, 3 * 4096, 2000, 3 * 4096, 3)),
            abi::Status::SUCCESS);
  while (p.cable.Pump() != 0) {
  }
  const auto wcs = p.Poll(p.a);
  ASSERT_EQ(wcs.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(wcs[i].wr_id, i);
    EXPECT_EQ(wcs[i].status, abi::WcStatus::SUCCESS);
    EXPECT_EQ(p.b.buffer[i * 4096 + 1999], 0x10 + i);
  }
  EXPECT_EQ(p.b.buffer[3 * 4096], 0);  // the fourth waits
  EXPECT_EQ(events, (std::vector<Event>{{AsyncEventType::SQ_DRAINED, p.a.qpn}}));
  ASSERT_EQ(p.a.hca.QueryQp(p.a.qpn, &attrs), abi::Status::SUCCESS);
  EXPECT_EQ(attrs.state, QpState::SQD);
  EXPECT_EQ(attrs.sq_draining, 0);

  // A drained QP may be modified in SQD (re-path) without a second event; back in RTS the
  // waiting request goes out.
  ASSERT_EQ(p.a.hca.ModifyQp(p.a.qpn, RcToState(QpState::SQD)), abi::Status::SUCCESS);
  ASSERT_EQ(p.a.hca.ModifyQp(p.a.qpn, RcToState(QpState::RTS)), abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  const auto resumed = p.Poll(p.a);
  ASSERT_EQ(resumed.size(), 1u);
  EXPECT_EQ(resumed[0].wr_id, 3u);
  EXPECT_EQ(resumed[0].status, abi::WcStatus::SUCCESS);
  EXPECT_EQ(p.b.buffer[3 * 4096 + 1999], 0x77);
  EXPECT_EQ(events.size(), 1u);
}

TEST(Sqd, AnIdleQpIsDrainedAtOnceAndWithoutTheFlagNothingIsReported) {
  RcPair p;
  std::vector<Event> a_events, b_events;
  Record(p.a.hca, &a_events);
  Record(p.b.hca, &b_events);
  abi::QpModifyAttributes sqd = RcToState(QpState::SQD, abi::QpAttrMask::EN_SQD_ASYNC_NOTIFY);
  sqd.en_sqd_async_notify = 1;
  ASSERT_EQ(p.a.hca.ModifyQp(p.a.qpn, sqd), abi::Status::SUCCESS);
  EXPECT_EQ(a_events, (std::vector<Event>{{AsyncEventType::SQ_DRAINED, p.a.qpn}}));

  ASSERT_EQ(p.b.hca.PostSend(p.b.qpn,
                             [&] {
                               abi::SendWorkRequest wr{};
                               wr.wr_id = 9;
                               wr.wr_type = WrType::RDMA_WRITE;
                               wr.num_sge = 1;
                               wr.sge[0] = {p.b.addr(0), 100, p.b.key};
                               wr.rkey = p.a.key;
                               wr.remote_addr = p.a.addr(0);
                               return wr;
                             }()),
            abi::Status::SUCCESS);
  ASSERT_EQ(p.b.hca.ModifyQp(p.b.qpn, RcToState(QpState::SQD)), abi::Status::SUCCESS);
  while (p.cable.Pump() != 0) {
  }
  ASSERT_EQ(p.Poll(p.b).size(), 1u);
  EXPECT_TRUE(b_events.empty());
}

TEST(Sqd, AnErrorDuringTheDrainReportsNoDrain) {
  RcOptions options;
  RcPair p(options);
  std::vector<Event> events;
  Record(p.a.hca, &events);
  abi::SendWorkRequest bad = p.Wr(WrType::RDMA_WRITE, 0, 100, 0, 1);
  bad.rkey ^= 0xFF;  // the responder refuses it: remote access error, the QP goes to Error
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, bad), abi::Status::SUCCESS);
  abi::QpModifyAttributes sqd = RcToState(QpState::SQD, abi::QpAttrMask::EN_SQD_ASYNC_NOTIFY);
  sqd.en_sqd_async_notify = 1;
  ASSERT_EQ(p.a.hca.ModifyQp(p.a.qpn, sqd), abi::Status::SUCCESS);
  while (p.cable.Pump() != 0) {
  }
  const auto wcs = p.Poll(p.a);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, abi::WcStatus::REM_ACCESS_ERR);
  EXPECT_EQ(p.a.qp().state, QpState::ERROR);
  for (const Event& e : events) EXPECT_NE(e.first, AsyncEventType::SQ_DRAINED);
}

}  // namespace
}  // namespace softib::hca
