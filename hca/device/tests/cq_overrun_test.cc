// CQ resize through the HCA, and a CQ overrun seen from the QPs that write to it.
#include <gtest/gtest.h>

#include <vector>

#include "hca/device/tests/ud_fixture.h"

namespace softib::hca {
namespace {

using abi::Status;

TEST(CqOverrun, ResizeGrowsAndRefusesToDropQueuedCompletions) {
  testing::UdPair p;
  for (int i = 0; i < 3; ++i) ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 8)), Status::SUCCESS);
  uint32_t granted = 0;
  struct Case {
    uint32_t cq, size;
    Status expected;
    uint32_t granted;
  };
  const Case cases[] = {
      {p.a.cq + 5, 8, Status::INVALID_CQ_HANDLE, 0},
      {p.a.cq, 0, Status::INVALID_CQ_SIZE, 64},
      {p.a.cq, 2, Status::INVALID_CQ_SIZE, 64},  // 3 queued
      {p.a.cq, (1u << 16) + 1, Status::INVALID_CQ_SIZE, 0},
      {p.a.cq, 3, Status::SUCCESS, 3},
      {p.a.cq, 200, Status::SUCCESS, 200},
  };
  for (const Case& c : cases) {
    granted = 0;
    EXPECT_EQ(p.a.hca.ResizeCq(c.cq, c.size, &granted), c.expected) << c.size;
    EXPECT_EQ(granted, c.granted) << c.size;
  }
  EXPECT_EQ(p.Poll(p.a).size(), 3u);
}

TEST(CqOverrun, TheCqErrsAndItsQpsGoToError) {
  testing::UdPair p;
  std::vector<DeviceEvent> events;
  p.b.hca.async_events = [&](const DeviceEvent& e) { events.push_back(e); };
  uint32_t granted = 0;
  ASSERT_EQ(p.b.hca.ResizeCq(p.b.cq, 2, &granted), Status::SUCCESS);
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(i * 100, 100)), Status::SUCCESS);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 8)), Status::SUCCESS);
  p.cable.Pump();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].type, abi::AsyncEventType::CQ_OVERFLOW);
  EXPECT_EQ(events[0].object, p.b.cq);
  EXPECT_EQ(events[1].type, abi::AsyncEventType::QP_FATAL);
  EXPECT_EQ(events[1].object, p.b.qpn);
  EXPECT_EQ(p.b.hca.Qp(p.b.qpn)->state, abi::QpState::ERROR);
  EXPECT_TRUE(p.b.hca.Cq(p.b.cq)->in_error());
  EXPECT_EQ(p.Poll(p.b).size(), 2u);                                 // what fitted
  EXPECT_EQ(p.b.hca.counters(1).recv_drop(RecvDrop::kQpState), 1u);  // the fourth
}

}  // namespace
}  // namespace softib::hca
