// The CM private-data layouts (cm_private_data.h): exact bytes of a REQ plan and a REP
// answer, round trips, what a server refuses; the control messages' immediate data.
#include "cm_private_data.h"

#include <gtest/gtest.h>

#include <vector>

#include "control_qp.h"
#include "session.h"

namespace softib::perf {
namespace {

TestPlan WriteBwPlan() {
  Options o;
  o.test = TestKind::kWriteBw;
  o.sizes = {4096, 8192, 16384};
  o.iterations = 500;
  o.tx_depth = 16;
  o.rx_depth = 512;
  o.validate = true;
  return MakePlan(o);
}

PeerInfo Buffer() {
  PeerInfo p;
  p.rkey = 0x11223344;
  p.vaddr = 0x00007F0012345000ull;
  p.buffer_bytes = 0x30000;
  return p;
}

TEST(CmPrivateData, ReqCarriesThePlanAndTheBufferInNetworkOrder) {
  std::array<uint8_t, kReqPrivateDataBytes> data{};
  std::string error;
  ASSERT_TRUE(EncodeReqPrivateData(WriteBwPlan(), Buffer(), &data, &error)) << error;
  const std::vector<uint8_t> head(data.begin(), data.begin() + 48);
  const std::vector<uint8_t> expected = {
      'S',  'P',  1,    1,                           // magic, version 1, REQ
      5,    0,    0,    1,                           // write_bw, RC, fetch-add, validate
      0,    0,    0x01, 0xF4,                        // 500 iterations
      0,    16,   0x02, 0x00,                        // tx 16, rx 512
      0,    0,    3,    0,                           // inline 0, three sizes
      0,    0,    0x10, 0x00,                        // from 4096
      0x11, 0x22, 0x33, 0x44, 0,    0,    0,    0,   // rkey
      0,    0,    0x7F, 0,    0x12, 0x34, 0x50, 0,   // vaddr
      0,    0,    0,    0,    0,    0x03, 0,    0};  // buffer bytes
  EXPECT_EQ(head, expected);
  for (size_t i = 48; i < data.size(); ++i) EXPECT_EQ(data[i], 0) << i;

  TestPlan plan;
  PeerInfo peer;
  ASSERT_TRUE(DecodeReqPrivateData(data, &plan, &peer, &error)) << error;
  EXPECT_EQ(plan.test, static_cast<uint32_t>(TestKind::kWriteBw));
  EXPECT_EQ(plan.num_sizes, 3u);
  EXPECT_EQ(plan.sizes[2], 16384u);
  EXPECT_EQ(plan.iterations, 500u);
  EXPECT_EQ(plan.validate, 1u);
  EXPECT_TRUE(PlanIsSane(plan, &error)) << error;
  EXPECT_EQ(peer.rkey, 0x11223344u);
  EXPECT_EQ(peer.vaddr, 0x00007F0012345000ull);
  EXPECT_EQ(peer.buffer_bytes, 0x30000u);
}

TEST(CmPrivateData, OtherLayoutsAndBadPlansAreRefusedWithAReason) {
  std::array<uint8_t, kReqPrivateDataBytes> data{};
  std::string error;
  ASSERT_TRUE(EncodeReqPrivateData(WriteBwPlan(), Buffer(), &data, &error));
  TestPlan plan;
  PeerInfo peer;
  auto bad = data;
  bad[2] = 2;
  EXPECT_FALSE(DecodeReqPrivateData(bad, &plan, &peer, &error));
  EXPECT_EQ(error, "private data layout version 2, this side speaks 1");
  bad = data;
  bad[0] = 'X';
  EXPECT_FALSE(DecodeReqPrivateData(bad, &plan, &peer, &error));
  EXPECT_EQ(error, "the private data is not a softib_perf plan");
  bad = data;
  bad[18] = 30;  // 4096 << 29 is past 1 GiB
  EXPECT_FALSE(DecodeReqPrivateData(bad, &plan, &peer, &error));
  EXPECT_EQ(error, "the plan's sizes are out of range");
  EXPECT_FALSE(
      DecodeReqPrivateData(std::span<const uint8_t>(data.data(), 40), &plan, &peer, &error));

  TestPlan odd = WriteBwPlan();
  odd.sizes[1] = 5000;
  EXPECT_FALSE(EncodeReqPrivateData(odd, Buffer(), &data, &error));
}

TEST(CmPrivateData, RepAndRejRoundTrip) {
  const auto rep = EncodeRepPrivateData(Buffer());
  EXPECT_EQ(rep[0], 'S');
  EXPECT_EQ(rep[3], 2);
  EXPECT_EQ(rep[8], 0x11);
  PeerInfo peer;
  std::string error;
  ASSERT_TRUE(DecodeRepPrivateData(rep, &peer, &error)) << error;
  EXPECT_EQ(peer.vaddr, Buffer().vaddr);
  EXPECT_FALSE(DecodeReqPrivateData(rep, nullptr, nullptr, &error));  // a REP is no plan

  const auto rej = EncodeRejReason(std::string(200, 'x'));
  EXPECT_EQ(DecodeRejReason(rej), std::string(147, 'x'));
  const uint8_t odd[] = {'o', 'k', 0x01, 0};
  EXPECT_EQ(DecodeRejReason(odd), "ok?");
}

TEST(CmPrivateData, ControlMessagesPackCodeAndValueIn32Bits) {
  EXPECT_EQ(EncodeControl(Token{kDone, 0, 12345}), (4u << 28) | 12345u);
  const Token t = DecodeControl((3u << 28) | 0x0ABCDEF);
  EXPECT_EQ(t.code, kReady);
  EXPECT_EQ(t.value64, 0x0ABCDEFu);
}

}  // namespace
}  // namespace softib::perf
