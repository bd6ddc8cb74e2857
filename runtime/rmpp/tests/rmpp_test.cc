// The RMPP state machines without QPs: segmentation bytes, whole transfers over a simulated
// wire that loses, duplicates and reorders segments and ACKs, and the ABORTs for bad
// segment numbers, bad windows and exhausted retries.
#include <gtest/gtest.h>

#include <deque>
#include <random>

#include "softib/rmpp/rmpp.h"

namespace softib::rmpp {
namespace {

using Mad = std::vector<uint8_t>;

// Headers of a transfer of class `mgmt_class` (RMPP header left for the sender) and
// `data_bytes` of patterned data.
Mad Transfer(uint8_t mgmt_class, uint32_t data_bytes, uint8_t method = 0x81) {
  Mad t(rmpp::HeaderLength(mgmt_class) + data_bytes, 0);
  t[0] = 1;
  t[1] = mgmt_class;
  t[2] = mgmt_class == 0x03 ? 2 : 1;
  t[3] = method;
  for (int i = 0; i < 8; ++i)
    t[8 + i] = static_cast<uint8_t>(0x1122334455667788ull >> (56 - 8 * i));
  t[16] = 0x00;
  t[17] = 0x31;
  for (uint32_t i = 36; i < rmpp::HeaderLength(mgmt_class); ++i)
    t[i] = static_cast<uint8_t>(0xC0 + i);
  for (uint32_t i = 0; i < data_bytes; ++i) {
    t[rmpp::HeaderLength(mgmt_class) + i] = static_cast<uint8_t>(i * 7 + i / 251);
  }
  return t;
}

Mad Segment(const RmppSender& sender, uint32_t n) {
  Mad m(256);
  sender.BuildSegment(n, m.data());
  return m;
}

TEST(RmppSegments, TenKibOfAVendorClassIs47SegmentsWithTheirFlagsAndLengths) {
  const Mad t = Transfer(0x09, 10240);
  RmppSender sender(t, 3);
  ASSERT_EQ(sender.segment_count(), 47u);  // 220 data bytes a segment
  const Mad first = Segment(sender, 1);
  EXPECT_EQ(first[24], 1);  // RMPPVersion
  EXPECT_EQ(first[25], rmpp::kTypeData);
  EXPECT_EQ(first[26] & 7, rmpp::kFlagActive | rmpp::kFlagFirst);
  EXPECT_EQ(rmpp::Segment(first.data()), 1u);
  EXPECT_EQ(rmpp::Data2(first.data()), 10240u);  // PayloadLength of the transfer
  EXPECT_TRUE(std::equal(t.begin(), t.begin() + 24, first.begin()));
  EXPECT_TRUE(std::equal(t.begin() + 36, t.begin() + 256, first.begin() + 36));
  const Mad middle = Segment(sender, 20);
  EXPECT_EQ(middle[26] & 7, rmpp::kFlagActive);
  EXPECT_EQ(rmpp::Data2(middle.data()), 0u);
  EXPECT_TRUE(
      std::equal(t.begin() + 36 + 19 * 220, t.begin() + 36 + 20 * 220, middle.begin() + 36));
  const Mad last = Segment(sender, 47);
  EXPECT_EQ(last[26] & 7, rmpp::kFlagActive | rmpp::kFlagLast);
  EXPECT_EQ(rmpp::Data2(last.data()), 10240u - 46 * 220);  // 120
  EXPECT_TRUE(std::equal(t.begin() + 36 + 46 * 220, t.end(), last.begin() + 36));
  EXPECT_TRUE(std::all_of(last.begin() + 36 + 120, last.end(), [](uint8_t b) { return b == 0; }));
}

TEST(RmppSegments, SaSegmentsRepeatTheSaHeaderAndCountItInPayloadLength) {
  const Mad t = Transfer(0x03, 400);  // 200 data bytes a segment behind a 56-byte header
  RmppSender sender(t, 0);
  ASSERT_EQ(sender.segment_count(), 2u);
  const Mad first = Segment(sender, 1);
  const Mad last = Segment(sender, 2);
  EXPECT_EQ(rmpp::Data2(first.data()), 2 * 220u);  // SA header counted in each segment
  EXPECT_EQ(rmpp::Data2(last.data()), 220u);
  EXPECT_TRUE(std::equal(t.begin() + 36, t.begin() + 56, last.begin() + 36));
  EXPECT_TRUE(std::equal(t.begin() + 256, t.end(), last.begin() + 56));
  RmppSender one(Transfer(0x03, 0), 0);  // only the SA header: one segment
  ASSERT_EQ(one.segment_count(), 1u);
  const Mad only = Segment(one, 1);
  EXPECT_EQ(only[26] & 7, rmpp::kFlagActive | rmpp::kFlagFirst | rmpp::kFlagLast);
  EXPECT_EQ(rmpp::Data2(only.data()), 20u);
}

// A wire between a sender and a receiver: each direction loses, duplicates and reorders
// packets by a seeded generator. When nothing is in flight and the sender waits, its
// timeout fires (the test's clock).
struct Wire {
  explicit Wire(uint32_t seed, int loss_pct, int dup_pct, int swap_pct)
      : rng(seed), loss(loss_pct), dup(dup_pct), swap(swap_pct) {}
  void Put(std::deque<Mad>& q, const Mad& m) {
    if (Roll() < loss) return;
    q.push_back(m);
    if (Roll() < dup) q.push_back(m);
    if (q.size() >= 2 && Roll() < swap) std::swap(q[q.size() - 1], q[q.size() - 2]);
  }
  int Roll() { return static_cast<int>(rng() % 100); }
  std::mt19937 rng;
  int loss, dup, swap;
  std::deque<Mad> to_receiver, to_sender;
};

struct Outcome {
  bool complete = false;
  bool failed = false;
  Mad message;
  int timeouts = 0;
  int acks = 0;
};

Outcome RunTransfer(const Mad& transfer, Wire& wire, uint32_t retries, uint32_t window = 16) {
  RmppSender sender(transfer, retries);
  RmppReceiver receiver(window);
  Outcome out;
  for (int step = 0; step < 100000; ++step) {
    for (uint32_t n : sender.Sendable()) wire.Put(wire.to_receiver, Segment(sender, n));
    if (!wire.to_receiver.empty()) {
      const Mad m = wire.to_receiver.front();
      wire.to_receiver.pop_front();
      const RmppReceiver::Result r = receiver.OnData(m.data());
      EXPECT_FALSE(r.abort) << "status " << int(r.abort_status);
      if (r.ack) {
        Mad ack(256);
        rmpp::BuildControl(m.data(), rmpp::kTypeAck, 0, r.ack_segment, r.window_last, ack.data());
        wire.Put(wire.to_sender, ack);
      }
      if (r.complete) out.message = receiver.TakeMessage();
      continue;
    }
    if (!wire.to_sender.empty()) {
      const Mad m = wire.to_sender.front();
      wire.to_sender.pop_front();
      ++out.acks;
      const auto e = sender.OnControl(m.data());
      EXPECT_NE(e, RmppSender::Event::kAbort);
      if (e == RmppSender::Event::kComplete) break;
      continue;
    }
    ++out.timeouts;  // nothing in flight: the sender's ACK timer runs out
    if (!sender.OnTimeout()) break;
  }
  out.complete = sender.complete() && receiver.complete();
  out.failed = sender.failed();
  return out;
}

void ExpectSameTransfer(const Mad& sent, const Mad& got) {
  ASSERT_EQ(got.size(), sent.size());
  EXPECT_TRUE(std::equal(sent.begin(), sent.begin() + 24, got.begin()));
  EXPECT_TRUE(std::equal(sent.begin() + 36, sent.end(), got.begin() + 36));
}

TEST(RmppTransfer, CleanWireNeedsOneAckPerWindowAndNoTimeout) {
  const Mad t = Transfer(0x09, 10240);
  Wire wire(1, 0, 0, 0);
  const Outcome o = RunTransfer(t, wire, 0);
  ASSERT_TRUE(o.complete);
  EXPECT_EQ(o.timeouts, 0);
  // Window 1, then ACK(1, 17), ACK(17, 33), ACK(33, 49) ... ACK(47) at the end: 4 ACKs.
  EXPECT_EQ(o.acks, 4);
  ExpectSameTransfer(t, o.message);
}

TEST(RmppTransfer, LossDuplicationAndReorderingStillDeliverTheExactBytes) {
  const Mad t = Transfer(0x09, 10240 + 77);
  int total_timeouts = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    Wire wire(seed, 10, 10, 20);
    const Outcome o = RunTransfer(t, wire, 1000);
    ASSERT_TRUE(o.complete) << "seed " << seed;
    ExpectSameTransfer(t, o.message);
    total_timeouts += o.timeouts;
  }
  EXPECT_GT(total_timeouts, 0);  // the loss really happened and was repaired
}

TEST(RmppTransfer, SaClassWithSmallWindow) {
  const Mad t = Transfer(0x03, 5000);
  Wire wire(7, 5, 5, 30);
  const Outcome o = RunTransfer(t, wire, 1000, 2);
  ASSERT_TRUE(o.complete);
  ExpectSameTransfer(t, o.message);
}

TEST(RmppTransfer, SenderGivesUpWithTooManyRetriesWhenEverythingIsLost) {
  Wire wire(3, 100, 0, 0);
  const Outcome o = RunTransfer(Transfer(0x09, 3000), wire, 2);
  EXPECT_FALSE(o.complete);
  EXPECT_TRUE(o.failed);
  EXPECT_EQ(o.timeouts, 3);  // the first wait and two retries
}

Mad Ack(const Mad& data, uint32_t segment, uint32_t window) {
  Mad ack(256);
  rmpp::BuildControl(data.data(), rmpp::kTypeAck, 0, segment, window, ack.data());
  return ack;
}

TEST(RmppSender, WindowGrowsOnlyByAcksAndAcksFlipTheResponseBit) {
  RmppSender sender(Transfer(0x09, 2000), 3);  // 10 segments
  EXPECT_EQ(sender.Sendable(), std::vector<uint32_t>{1});
  EXPECT_TRUE(sender.Sendable().empty());
  const Mad first = Segment(sender, 1);
  const Mad ack = Ack(first, 1, 4);
  EXPECT_EQ(ack[3], 0x01);  // ACK of GetResp data: the request method
  EXPECT_EQ(ack[25], rmpp::kTypeAck);
  EXPECT_EQ(sender.OnControl(ack.data()), RmppSender::Event::kProgress);
  EXPECT_EQ(sender.Sendable(), (std::vector<uint32_t>{2, 3, 4}));
  EXPECT_EQ(sender.OnControl(ack.data()), RmppSender::Event::kNone);  // duplicate
  EXPECT_EQ(sender.OnControl(Ack(first, 3, 12).data()), RmppSender::Event::kProgress);
  EXPECT_EQ(sender.Sendable(), (std::vector<uint32_t>{5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(sender.OnControl(Ack(first, 2, 12).data()), RmppSender::Event::kNone);  // stale
  EXPECT_TRUE(sender.OnTimeout());  // rewinds to the first unacknowledged segment
  EXPECT_EQ(sender.Sendable(), (std::vector<uint32_t>{4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(sender.OnControl(Ack(first, 10, 10).data()), RmppSender::Event::kComplete);
  EXPECT_TRUE(sender.complete());
}

TEST(RmppSender, BadAcksAbortWithTheirStatus) {
  RmppSender too_big(Transfer(0x09, 2000), 3);
  const Mad first = Segment(too_big, 1);
  EXPECT_EQ(too_big.OnControl(Ack(first, 11, 11).data()), RmppSender::Event::kAbort);
  EXPECT_EQ(too_big.abort_status(), rmpp::kStatusSegmentTooBig);
  EXPECT_TRUE(too_big.Sendable().empty());
  RmppSender small(Transfer(0x09, 2000), 3);
  EXPECT_EQ(small.OnControl(Ack(first, 5, 4).data()), RmppSender::Event::kAbort);
  EXPECT_EQ(small.abort_status(), rmpp::kStatusWindowTooSmall);
  RmppSender stopped(Transfer(0x09, 2000), 3);
  Mad stop(256);
  rmpp::BuildControl(first.data(), rmpp::kTypeStop, rmpp::kStatusResourcesExhausted, 0, 0,
                     stop.data());
  EXPECT_EQ(stopped.OnControl(stop.data()), RmppSender::Event::kStopped);
  EXPECT_EQ(stopped.abort_status(), rmpp::kStatusResourcesExhausted);
  EXPECT_TRUE(stopped.failed());
  RmppSender bad_type(Transfer(0x09, 2000), 3);
  Mad weird = Ack(first, 1, 2);
  weird[25] = 9;
  EXPECT_EQ(bad_type.OnControl(weird.data()), RmppSender::Event::kAbort);
  EXPECT_EQ(bad_type.abort_status(), rmpp::kStatusBadType);
}

TEST(RmppReceiver, DuplicatesAreReAckedOutOfWindowDroppedReorderedKept) {
  RmppSender sender(Transfer(0x09, 2000), 3);  // 10 segments
  RmppReceiver receiver(4);
  auto r = receiver.OnData(Segment(sender, 1).data());
  EXPECT_TRUE(r.ack);
  EXPECT_EQ(r.ack_segment, 1u);
  EXPECT_EQ(r.window_last, 5u);
  r = receiver.OnData(Segment(sender, 1).data());  // duplicate first
  EXPECT_TRUE(r.ack);
  EXPECT_EQ(r.ack_segment, 1u);
  r = receiver.OnData(Segment(sender, 6).data());  // past NewWindowLast
  EXPECT_TRUE(r.dropped);
  EXPECT_FALSE(r.ack);
  r = receiver.OnData(Segment(sender, 3).data());  // ahead of 2: kept, no ACK
  EXPECT_FALSE(r.ack);
  EXPECT_FALSE(r.dropped);
  r = receiver.OnData(Segment(sender, 3).data());  // kept already
  EXPECT_TRUE(r.dropped);
  receiver.OnData(Segment(sender, 5).data());
  r = receiver.OnData(Segment(sender, 4).data());
  EXPECT_FALSE(r.ack);
  r = receiver.OnData(Segment(sender, 2).data());  // fills the gap up to the window's end
  EXPECT_TRUE(r.ack);
  EXPECT_EQ(r.ack_segment, 5u);
  EXPECT_EQ(r.window_last, 9u);
  EXPECT_EQ(receiver.last_acked(), 5u);
}

TEST(RmppReceiver, BadSegmentNumbersAbort) {
  RmppSender sender(Transfer(0x09, 2000), 3);
  {
    RmppReceiver receiver;
    Mad m = Segment(sender, 1);
    m[31] = 2;  // First flag on segment 2
    const auto r = receiver.OnData(m.data());
    EXPECT_TRUE(r.abort);
    EXPECT_EQ(r.abort_status, rmpp::kStatusBadFirstOrSegment);
    EXPECT_TRUE(receiver.OnData(Segment(sender, 1).data()).dropped);  // over
  }
  {
    RmppReceiver receiver;
    receiver.OnData(Segment(sender, 1).data());
    Mad zero = Segment(sender, 2);
    zero[31] = 0;
    EXPECT_EQ(receiver.OnData(zero.data()).abort_status, rmpp::kStatusBadFirstOrSegment);
    EXPECT_TRUE(receiver.aborted());
  }
  {
    RmppReceiver receiver;
    receiver.OnData(Segment(sender, 1).data());
    Mad last = Segment(sender, 2);
    last[26] |= rmpp::kFlagLast;
    last[35] = 250;  // PayloadLength beyond a segment's 220 bytes
    last[34] = 0;
    const auto r = receiver.OnData(last.data());
    EXPECT_TRUE(r.abort);
    EXPECT_EQ(r.abort_status, rmpp::kStatusBadLastOrLength);
  }
  {
    RmppReceiver receiver;
    Mad v2 = Segment(sender, 1);
    v2[24] = 2;
    EXPECT_EQ(receiver.OnData(v2.data()).abort_status, rmpp::kStatusBadVersion);
  }
}

TEST(RmppReceiver, LostFinalAckIsRepairedByTheRetransmittedLastSegment) {
  RmppSender sender(Transfer(0x09, 300), 3);  // 2 segments
  RmppReceiver receiver;
  receiver.OnData(Segment(sender, 1).data());
  auto r = receiver.OnData(Segment(sender, 2).data());
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(receiver.TakeMessage().size(), 36u + 300u);
  r = receiver.OnData(Segment(sender, 2).data());
  EXPECT_TRUE(r.ack);
  EXPECT_FALSE(r.complete);  // delivered once
  EXPECT_EQ(r.ack_segment, 2u);
}

}  // namespace
}  // namespace softib::rmpp
