#include "hca/device/cq.h"

#include <gtest/gtest.h>

#include <vector>

namespace softib::hca {
namespace {

abi::WorkCompletion Wc(uint64_t id, abi::WcStatus status = abi::WcStatus::SUCCESS) {
  abi::WorkCompletion wc{};
  wc.wr_id = id;
  wc.status = status;
  return wc;
}

TEST(Cq, OverflowRaisesOneAsyncEventAndStopsTheCq) {
  std::vector<DeviceEvent> events;
  AsyncEventSink sink = [&](const DeviceEvent& e) { events.push_back(e); };
  CompletionQueue cq(7, 2, &sink, nullptr);
  EXPECT_TRUE(cq.Push(Wc(1)));
  EXPECT_TRUE(cq.Push(Wc(2)));
  EXPECT_FALSE(cq.Push(Wc(3)));
  EXPECT_FALSE(cq.Push(Wc(4)));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, abi::AsyncEventType::CQ_OVERFLOW);
  EXPECT_EQ(events[0].object, 7u);
  EXPECT_TRUE(cq.in_error());
  abi::WorkCompletion out[4];
  ASSERT_EQ(cq.Poll(out), 2u);
  EXPECT_EQ(out[0].wr_id, 1u);
  EXPECT_EQ(out[1].wr_id, 2u);
}

TEST(Cq, ResizeKeepsOrderAcrossTheWrapAndRefusesToLoseEntries) {
  CompletionQueue cq(1, 3, nullptr, nullptr);
  abi::WorkCompletion out[3];
  cq.Push(Wc(1));
  cq.Push(Wc(2));
  ASSERT_EQ(cq.Poll(std::span(out).first(1)), 1u);
  cq.Push(Wc(3));
  cq.Push(Wc(4));  // wraps
  EXPECT_EQ(cq.Resize(2), abi::Status::INVALID_CQ_SIZE);
  EXPECT_EQ(cq.Resize(0), abi::Status::INVALID_CQ_SIZE);
  ASSERT_EQ(cq.Resize(5), abi::Status::SUCCESS);
  EXPECT_EQ(cq.capacity(), 5u);
  cq.Push(Wc(5));
  abi::WorkCompletion all[5];
  ASSERT_EQ(cq.Poll(all), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(all[i].wr_id, uint64_t(i + 2));
}

TEST(Cq, NotifyFiresOncePerArmingAndSolicitedWaitsForSolicitedOrErrors) {
  int fired = 0;
  CompletionEventSink sink = [&](uint32_t) { ++fired; };
  CompletionQueue cq(1, 16, nullptr, &sink);
  cq.Push(Wc(1));
  EXPECT_EQ(fired, 0);  // not armed
  cq.RequestNotify(abi::CqNotify::NEXT);
  cq.Push(Wc(2));
  cq.Push(Wc(3));
  EXPECT_EQ(fired, 1);
  cq.RequestNotify(abi::CqNotify::SOLICITED);
  cq.Push(Wc(4));
  EXPECT_EQ(fired, 1);
  cq.Push(Wc(5), /*solicited=*/true);
  EXPECT_EQ(fired, 2);
  cq.RequestNotify(abi::CqNotify::SOLICITED);
  cq.Push(Wc(6, abi::WcStatus::LOCAL_PROT_ERR));
  EXPECT_EQ(fired, 3);
}

}  // namespace
}  // namespace softib::hca
