// The ports' PMA through ProcessLocalMad: ClassPortInfo, PortCounters (32-bit, saturating)
// and PortCountersExtended (64-bit) after real RC traffic, counted as IBA 16.1.3.5 says
// (data in 4-byte words from the LRH through the ICRC), clearing by Set, and the statuses
// of bad requests. Offsets from the spec's tables.
#include <gtest/gtest.h>

#include "hca/device/tests/mad_test_util.h"
#include "hca/device/tests/rc_fixture.h"

namespace softib::hca {
namespace {

using testing::GetBe;
using testing::Mad;
using testing::MadBytes;
using testing::Process;

using testing::kClassPortInfo;
using testing::kGet;
using testing::kPerf;
using testing::kSet;
constexpr uint16_t kPortSamplesControl = 0x0010, kPortCounters = 0x0012, kPortCountersExt = 0x001D;

MadBytes Counters(uint16_t attribute, uint8_t method, uint8_t port_select,
                  uint32_t counter_select = 0, uint32_t counter_select2 = 0) {
  MadBytes m = Mad(kPerf, method, attribute);
  m[64 + 1] = port_select;
  testing::PutBe(m, 64 + 2, counter_select, 2);
  if (attribute == kPortCounters) m[64 + 18] = static_cast<uint8_t>(counter_select2);
  if (attribute == kPortCountersExt) testing::PutBe(m, 64 + 4, counter_select2, 4);
  return m;
}

TEST(Pma, ClassPortInfo) {
  Hca hca;
  const auto c = Process(hca, 1, Mad(kPerf, kGet, kClassPortInfo));
  ASSERT_EQ(c.result, LocalMadResult::kReply);
  EXPECT_EQ(c.response[1], 0x04);
  EXPECT_EQ(c.response[3], 0x81);
  EXPECT_EQ(c.status(), 0);
  // BaseVersion 1, ClassVersion 1, CapabilityMask: IsExtendedWidthSupported (bit 9) and
  // QP1Dropped (bit 15); CapabilityMask2 bit 1 (additional extended counters) then
  // RespTimeValue 8 in the low 5 bits.
  const uint8_t expected[8] = {0x01, 0x01, 0x82, 0x00, 0x00, 0x00, 0x00, 0x48};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(c.data()[i], expected[i]) << i;
  for (int i = 8; i < 72; ++i) EXPECT_EQ(c.data()[i], 0) << i;
  EXPECT_EQ(Process(hca, 1, Mad(kPerf, kSet, kClassPortInfo)).status(), 0x000C);
}

TEST(Pma, CountersOfRcTrafficInBothWidthsAndClearingBySet) {
  testing::RcPair p;
  constexpr int kMessages = 10;
  constexpr uint32_t kBytes = 100;
  for (int i = 0; i < kMessages; ++i) {
    ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 4096)), abi::Status::SUCCESS);
    ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(abi::WrType::SEND, 0, kBytes)), abi::Status::SUCCESS);
  }
  ASSERT_TRUE(p.Run());
  ASSERT_EQ(p.Poll(p.b).size(), static_cast<std::size_t>(kMessages));
  // A SEND Only packet: LRH 8 + BTH 12 + 100 payload + ICRC 4 = 124 octets = 31 words.
  // An ACK: LRH 8 + BTH 12 + AETH 4 + ICRC 4 = 28 octets = 7 words.
  constexpr uint32_t kSendWords = 31, kAckWords = 7;

  const auto ra = Process(p.a.hca, 1, Counters(kPortCounters, kGet, 1));
  const auto rb = Process(p.b.hca, 1, Counters(kPortCounters, kGet, 1));
  ASSERT_EQ(ra.status(), 0);
  ASSERT_EQ(rb.status(), 0);
  EXPECT_EQ(ra.data()[1], 1);                                                   // PortSelect echoed
  EXPECT_EQ(GetBe(ra.response, 64 + 32, 4), uint64_t{kMessages});               // a XmitPkts
  EXPECT_EQ(GetBe(ra.response, 64 + 24, 4), uint64_t{kMessages * kSendWords});  // a XmitData
  EXPECT_EQ(GetBe(rb.response, 64 + 36, 4), uint64_t{kMessages});               // b RcvPkts
  EXPECT_EQ(GetBe(rb.response, 64 + 28, 4), uint64_t{kMessages * kSendWords});  // b RcvData
  const uint64_t acks = GetBe(rb.response, 64 + 32, 4);
  EXPECT_GE(acks, 1u);
  EXPECT_LE(acks, uint64_t{kMessages});
  EXPECT_EQ(GetBe(rb.response, 64 + 24, 4), acks * kAckWords);
  EXPECT_EQ(GetBe(ra.response, 64 + 36, 4), acks);
  EXPECT_EQ(GetBe(ra.response, 64 + 28, 4), acks * kAckWords);
  EXPECT_EQ(GetBe(ra.response, 64 + 8, 2), 0u);   // PortRcvErrors
  EXPECT_EQ(GetBe(ra.response, 64 + 14, 2), 0u);  // PortXmitDiscards

  // The same counters at 64 bits, with unicast/multicast split.
  const auto xa = Process(p.a.hca, 1, Counters(kPortCountersExt, kGet, 1));
  ASSERT_EQ(xa.status(), 0);
  EXPECT_EQ(GetBe(xa.response, 64 + 8, 8), uint64_t{kMessages * kSendWords});
  EXPECT_EQ(GetBe(xa.response, 64 + 16, 8), acks * kAckWords);
  EXPECT_EQ(GetBe(xa.response, 64 + 24, 8), uint64_t{kMessages});
  EXPECT_EQ(GetBe(xa.response, 64 + 32, 8), acks);
  EXPECT_EQ(GetBe(xa.response, 64 + 40, 8), uint64_t{kMessages});  // unicast xmit
  EXPECT_EQ(GetBe(xa.response, 64 + 48, 8), acks);                 // unicast rcv
  EXPECT_EQ(GetBe(xa.response, 64 + 56, 8), 0u);                   // multicast xmit

  // Set PortCounters with PortXmitData (bit 12) and PortXmitPkts (bit 14): those two are 0
  // in the response and in the 64-bit attribute; the receive side is untouched.
  const auto cleared = Process(p.a.hca, 1, Counters(kPortCounters, kSet, 1, 0x5000));
  ASSERT_EQ(cleared.status(), 0);
  EXPECT_EQ(cleared.response[3], 0x81);
  EXPECT_EQ(GetBe(cleared.response, 64 + 24, 4), 0u);
  EXPECT_EQ(GetBe(cleared.response, 64 + 32, 4), 0u);
  EXPECT_EQ(GetBe(cleared.response, 64 + 36, 4), acks);
  const auto after = Process(p.a.hca, 1, Counters(kPortCountersExt, kGet, 1));
  EXPECT_EQ(GetBe(after.response, 64 + 8, 8), 0u);
  EXPECT_EQ(GetBe(after.response, 64 + 24, 8), 0u);
  EXPECT_EQ(GetBe(after.response, 64 + 32, 8), acks);
  // PortCountersExtended's Set clears by its own mask: PortRcvData (bit 1), unicast rcv
  // (bit 5).
  const auto ext = Process(p.a.hca, 1, Counters(kPortCountersExt, kSet, 1, 0x0022));
  EXPECT_EQ(GetBe(ext.response, 64 + 16, 8), 0u);
  EXPECT_EQ(GetBe(ext.response, 64 + 48, 8), 0u);
  EXPECT_EQ(GetBe(ext.response, 64 + 32, 8), acks);
}

TEST(Pma, ThirtyTwoBitCountersStopAtTheirMaximum) {
  Hca hca;
  hca.port(1).counters.xmit_data_words = 0x100000005ull;
  hca.port(1).counters.rcv_errors = 0x12345;
  hca.port(1).counters.xmit_discards = 7;
  const auto c = Process(hca, 1, Counters(kPortCounters, kGet, 1));
  EXPECT_EQ(GetBe(c.response, 64 + 24, 4), 0xFFFFFFFFu);
  EXPECT_EQ(GetBe(c.response, 64 + 8, 2), 0xFFFFu);
  EXPECT_EQ(GetBe(c.response, 64 + 14, 2), 7u);
  const auto x = Process(hca, 1, Counters(kPortCountersExt, kGet, 1));
  EXPECT_EQ(GetBe(x.response, 64 + 8, 8), 0x100000005ull);
  EXPECT_EQ(GetBe(x.response, 64 + 96, 8), 0x12345u);  // PortRcvErrors, 64-bit
  EXPECT_EQ(GetBe(x.response, 64 + 120, 8), 7u);       // PortXmitDiscards, 64-bit
  // Clearing the errors by PortCountersExtended:CounterSelect2 (bit 3 PortRcvErrors).
  const auto cl = Process(hca, 1, Counters(kPortCountersExt, kSet, 1, 0, 0x8));
  EXPECT_EQ(GetBe(cl.response, 64 + 96, 8), 0u);
  EXPECT_EQ(GetBe(cl.response, 64 + 120, 8), 7u);
}

TEST(Pma, BadRequests) {
  Hca hca;
  EXPECT_EQ(Process(hca, 1, Counters(kPortCounters, kGet, 2)).status(), 0x001C);  // no port 2
  EXPECT_EQ(Process(hca, 1, Counters(kPortCounters, kGet, 0xFF)).status(), 0x001C);
  EXPECT_EQ(Process(hca, 1, Mad(kPerf, kGet, kPortCounters, 1)).status(), 0x001C);
  EXPECT_EQ(Process(hca, 1, Mad(kPerf, kGet, kPortSamplesControl)).status(), 0x000C);
  EXPECT_EQ(Process(hca, 1, Mad(kPerf, 0x03, kPortCounters)).status(), 0x0008);
  MadBytes v2 = Mad(kPerf, kGet, kPortCounters);
  v2[2] = 2;
  EXPECT_EQ(Process(hca, 1, v2).status(), 0x0004);
  EXPECT_EQ(Process(hca, 1, Mad(kPerf, 0x81, kPortCounters)).result, LocalMadResult::kNoReply);
}

}  // namespace
}  // namespace softib::hca
