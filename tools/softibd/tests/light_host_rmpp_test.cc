// RmppTransfers (the internal SM's RMPP sends) against the AL's receiver state machine over
// a simulated wire with a made-up clock: a whole GetTable answer arrives byte for byte, a
// lost ACK costs one timeout and a retransmission, silence ends in an ABORT, a STOP ends the
// transfer, and ACKs of no transfer (or SMPs whose M_Key looks like an RMPP header) are not
// taken for controls. Requests of several segments, from the AL's sender, are reassembled
// and ACKed; one-segment requests are left to the SM.
#include <gtest/gtest.h>

#include "light_host_rmpp.h"

namespace softib::softibd {
namespace {

using Clock = RmppTransfers::Clock;
using Segments = std::vector<RmppTransfers::Segment>;
constexpr std::chrono::milliseconds kAckTimeout{1000};

// A GetTableResp of `records` 112-byte records (SA header, RMPP header left to the sender).
std::vector<uint8_t> Table(std::size_t records, uint8_t tid_low = 0x42) {
  std::vector<uint8_t> t(56 + records * 112, 0);
  t[0] = 1;
  t[1] = 0x03;
  t[2] = 2;
  t[3] = 0x92;
  t[15] = tid_low;
  t[17] = 0x11;  // NodeRecord
  t[24] = 1;
  t[25] = 1;
  t[26] = 0x01;
  t[45] = 112 / 8;  // AttributeOffset
  for (std::size_t i = 56; i < t.size(); ++i) t[i] = static_cast<uint8_t>(i * 13 + i / 256);
  return t;
}

// The reassembled message against the transfer: all but the RMPP header (the first
// segment's, as received).
void ExpectSameTransfer(std::vector<uint8_t> message, std::vector<uint8_t> sent) {
  ASSERT_EQ(message.size(), sent.size());
  std::fill(message.begin() + 24, message.begin() + 36, 0);
  std::fill(sent.begin() + 24, sent.begin() + 36, 0);
  EXPECT_EQ(message, sent);
}

sm::MadAddress Requester() {
  sm::MadAddress a;
  a.lid = 7;
  a.qpn = 1;
  a.qkey = 0x80010000;
  a.length = 56;  // what the SA sets for umad2sim: never a segment's length here
  return a;
}

// The requester's side: the AL's receiver, ACKs back to the transfers unless dropped.
struct Wire {
  rmpp::RmppReceiver receiver;
  int drop_acks = 0;  // ACKs to lose, the next ones first
  int acks = 0;

  Segments Deliver(const Segments& segments) {
    Segments acks_back;
    for (const RmppTransfers::Segment& s : segments) {
      EXPECT_EQ(s.to.lid, 7);
      EXPECT_EQ(s.to.qpn, 1u);
      EXPECT_EQ(s.to.length, 0);
      const rmpp::RmppReceiver::Result r = receiver.OnData(s.mad.data());
      EXPECT_FALSE(r.abort);
      if (!r.ack) continue;
      ++acks;
      if (drop_acks > 0) {
        --drop_acks;
        continue;
      }
      RmppTransfers::Segment& ack = acks_back.emplace_back();
      rmpp::BuildControl(s.mad.data(), rmpp::kTypeAck, 0, r.ack_segment, r.window_last,
                         ack.mad.data());
    }
    return acks_back;
  }
};

// Runs one transfer to its end; `now` moves by the ACK timeout whenever nothing is in flight.
void RunToTheEnd(RmppTransfers& transfers, Wire& wire, Segments segments, Clock::time_point& now) {
  for (int rounds = 0; rounds < 1000 && transfers.in_flight() != 0; ++rounds) {
    if (segments.empty()) {
      ASSERT_TRUE(transfers.NextDeadline().has_value());
      now = *transfers.NextDeadline();
      transfers.OnTimer(now, segments);
      continue;
    }
    const Segments acks = wire.Deliver(segments);
    segments.clear();
    for (const RmppTransfers::Segment& ack : acks) {
      ASSERT_TRUE(RmppTransfers::IsControl(ack.mad));
      transfers.OnControl(ack.mad, Requester(), now, segments);
    }
  }
}

TEST(RmppTransfers, AGetTableArrivesWhole) {
  RmppTransfers transfers(kAckTimeout, 3);
  const std::vector<uint8_t> table = Table(612);  // ft36's NodeRecords: 68,544 bytes
  Clock::time_point now{};
  Segments first;
  ASSERT_TRUE(transfers.Start(table, Requester(), now, first));
  ASSERT_EQ(first.size(), 1u);  // the window starts at one segment
  EXPECT_EQ(first[0].mad[26] & 7, rmpp::kFlagActive | rmpp::kFlagFirst);
  Wire wire;
  RunToTheEnd(transfers, wire, first, now);
  ASSERT_TRUE(wire.receiver.complete());
  ExpectSameTransfer(wire.receiver.TakeMessage(), table);
  EXPECT_EQ(transfers.stats().segments, 343u);  // 68,544 / 200, rounded up
  EXPECT_EQ(transfers.stats().completed, 1u);
  EXPECT_EQ(transfers.stats().timeouts, 0u);
  EXPECT_EQ(now, Clock::time_point{});  // no timer ran
}

TEST(RmppTransfers, ALostAckCostsOneTimeout) {
  RmppTransfers transfers(kAckTimeout, 3);
  const std::vector<uint8_t> table = Table(40);  // 4,536 bytes, 23 segments
  Clock::time_point now{};
  Segments first;
  ASSERT_TRUE(transfers.Start(table, Requester(), now, first));
  Wire wire;
  wire.drop_acks = 1;  // the ACK of segment 1 (which opens the window) is lost
  RunToTheEnd(transfers, wire, first, now);
  ASSERT_TRUE(wire.receiver.complete());
  ExpectSameTransfer(wire.receiver.TakeMessage(), table);
  EXPECT_EQ(transfers.stats().timeouts, 1u);
  EXPECT_EQ(transfers.stats().segments, 24u);  // segment 1 twice
  EXPECT_EQ(transfers.stats().completed, 1u);
  EXPECT_EQ(now, Clock::time_point{} + kAckTimeout);
}

TEST(RmppTransfers, ALostFinalAckIsRepairedByTheDuplicate) {
  RmppTransfers transfers(kAckTimeout, 3);
  const std::vector<uint8_t> table = Table(2);  // 2 segments
  Clock::time_point now{};
  Segments segments;
  ASSERT_TRUE(transfers.Start(table, Requester(), now, segments));
  Wire wire;
  Segments acks = wire.Deliver(segments);  // ACK(1, 16)
  segments.clear();
  transfers.OnControl(acks.at(0).mad, Requester(), now, segments);
  ASSERT_EQ(segments.size(), 1u);
  wire.drop_acks = 1;  // the final ACK(2) is lost
  EXPECT_TRUE(wire.Deliver(segments).empty());
  ASSERT_TRUE(wire.receiver.complete());
  segments.clear();
  transfers.OnTimer(now + kAckTimeout, segments);  // segment 2 again
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(rmpp::Segment(segments[0].mad.data()), 2u);
  acks = wire.Deliver(segments);  // the receiver ACKs the duplicate
  ASSERT_EQ(acks.size(), 1u);
  segments.clear();
  transfers.OnControl(acks[0].mad, Requester(), now + kAckTimeout, segments);
  EXPECT_TRUE(segments.empty());
  EXPECT_EQ(transfers.in_flight(), 0u);
  EXPECT_EQ(transfers.stats().completed, 1u);
}

TEST(RmppTransfers, SilenceEndsInAnAbort) {
  RmppTransfers transfers(kAckTimeout, 3);
  Clock::time_point now{};
  Segments segments;
  ASSERT_TRUE(transfers.Start(Table(5), Requester(), now, segments));
  for (int i = 0; i < 3; ++i) {
    segments.clear();
    now += kAckTimeout;
    transfers.OnTimer(now, segments);
    ASSERT_EQ(segments.size(), 1u);
    EXPECT_EQ(rmpp::Type(segments[0].mad.data()), rmpp::kTypeData);
  }
  segments.clear();
  transfers.OnTimer(now + kAckTimeout - std::chrono::milliseconds(1), segments);
  EXPECT_TRUE(segments.empty());  // not due yet
  now += kAckTimeout;
  transfers.OnTimer(now, segments);
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(rmpp::Type(segments[0].mad.data()), rmpp::kTypeAbort);
  EXPECT_EQ(rmpp::RmppStatus(segments[0].mad.data()), rmpp::kStatusTooManyRetries);
  EXPECT_EQ(segments[0].mad[15], 0x42);  // the transfer's TID
  EXPECT_EQ(transfers.in_flight(), 0u);
  EXPECT_FALSE(transfers.NextDeadline().has_value());
  EXPECT_EQ(transfers.stats().failed, 1u);
}

TEST(RmppTransfers, StopEndsTheTransferAndStrayControlsAreDropped) {
  RmppTransfers transfers(kAckTimeout, 3);
  Segments segments;
  const std::vector<uint8_t> table = Table(5);
  ASSERT_TRUE(transfers.Start(table, Requester(), Clock::time_point{}, segments));
  RmppTransfers::Segment stop;
  rmpp::BuildControl(segments[0].mad.data(), rmpp::kTypeStop, rmpp::kStatusResourcesExhausted, 0, 0,
                     stop.mad.data());
  segments.clear();
  sm::MadAddress other = Requester();
  other.lid = 8;  // another requester's STOP with the same TID: not this transfer's
  transfers.OnControl(stop.mad, other, Clock::time_point{}, segments);
  EXPECT_EQ(transfers.in_flight(), 1u);
  EXPECT_EQ(transfers.stats().stray_controls, 1u);
  transfers.OnControl(stop.mad, Requester(), Clock::time_point{}, segments);
  EXPECT_TRUE(segments.empty());
  EXPECT_EQ(transfers.in_flight(), 0u);
  EXPECT_EQ(transfers.stats().failed, 1u);
  // The STOP again, late: dropped, nothing sent.
  transfers.OnControl(stop.mad, Requester(), Clock::time_point{}, segments);
  EXPECT_TRUE(segments.empty());
  EXPECT_EQ(transfers.stats().stray_controls, 2u);
}

TEST(RmppTransfers, TheSameRequestAgainReplacesTheTransfer) {
  RmppTransfers transfers(kAckTimeout, 3);
  Segments segments;
  ASSERT_TRUE(transfers.Start(Table(5), Requester(), Clock::time_point{}, segments));
  ASSERT_TRUE(transfers.Start(Table(5), Requester(), Clock::time_point{}, segments));
  EXPECT_EQ(transfers.in_flight(), 1u);
  ASSERT_TRUE(transfers.Start(Table(5, 0x43), Requester(), Clock::time_point{}, segments));
  EXPECT_EQ(transfers.in_flight(), 2u);
  EXPECT_FALSE(transfers.Start(std::vector<uint8_t>(40, 3), Requester(), Clock::time_point{},
                               segments));  // shorter than the SA headers
}

TEST(RmppTransfers, OnlyRmppClassesHaveControls) {
  sm::MadBytes smp{};
  smp[0] = 1;
  smp[1] = 0x01;  // LID-routed SMP: bytes 24..31 are the M_Key
  smp[24] = 1;
  smp[25] = rmpp::kTypeAck;
  smp[26] = rmpp::kFlagActive;
  EXPECT_FALSE(RmppTransfers::IsControl(smp));
  smp[1] = 0x03;
  EXPECT_TRUE(RmppTransfers::IsControl(smp));
  smp[25] = rmpp::kTypeData;
  EXPECT_FALSE(RmppTransfers::IsControl(smp));  // a request: the SA's
  smp[25] = rmpp::kTypeAck;
  smp[26] = 0;
  EXPECT_FALSE(RmppTransfers::IsControl(smp));  // RMPP inactive
}

// A GetMulti request of `gids` GIDs after a 24-byte MultiPathRecord, as the AL's sender
// cuts it.
std::vector<uint8_t> MultiPathRequest(std::size_t gids) {
  std::vector<uint8_t> t = Table(0);
  t[3] = 0x14;  // GetMulti
  t[17] = 0x3A;
  t.resize(56 + 24 + gids * 16);
  for (std::size_t i = 56; i < t.size(); ++i) t[i] = static_cast<uint8_t>(i * 5 + 1);
  return t;
}

// Feeds every segment the sender may send to `transfers`; the ACKs back to the sender.
// Returns the requests delivered.
std::vector<std::vector<uint8_t>> SendRequest(rmpp::RmppSender& sender, RmppTransfers& transfers,
                                              Clock::time_point now, int* acks = nullptr) {
  std::vector<std::vector<uint8_t>> delivered;
  for (int rounds = 0; rounds < 100 && !sender.complete() && !sender.failed(); ++rounds) {
    for (uint32_t n : sender.Sendable()) {
      sm::MadBytes segment{};
      sender.BuildSegment(n, segment.data());
      EXPECT_TRUE(RmppTransfers::IsRequestData(segment));
      Segments out;
      std::vector<uint8_t> request;
      if (transfers.OnRequestData(segment, Requester(), now, out, request))
        delivered.push_back(request);
      for (const RmppTransfers::Segment& ack : out) {
        EXPECT_EQ(rmpp::Type(ack.mad.data()), rmpp::kTypeAck);
        EXPECT_EQ(ack.mad[3], 0x94);  // the request's method, R bit set
        EXPECT_EQ(ack.to.qkey, 0x80010000u);
        if (acks) ++*acks;
        sender.OnControl(ack.mad.data());
      }
    }
  }
  EXPECT_TRUE(sender.complete());
  return delivered;
}

// Segment `n` of `sender`'s request alone: what `transfers` answered, and whether it
// completed a request.
Segments OneSegment(RmppTransfers& transfers, const rmpp::RmppSender& sender, uint32_t n,
                    bool* whole) {
  sm::MadBytes segment{};
  sender.BuildSegment(n, segment.data());
  Segments out;
  std::vector<uint8_t> request;
  *whole = transfers.OnRequestData(segment, Requester(), Clock::time_point{}, out, request);
  return out;
}

TEST(RmppTransfers, ARequestOfSeveralSegmentsReachesTheSmWhole) {
  RmppTransfers transfers(kAckTimeout, 3);
  const std::vector<uint8_t> request = MultiPathRequest(40);  // 664 bytes: 4 segments
  rmpp::RmppSender sender(request, 3);
  ASSERT_EQ(sender.segment_count(), 4u);
  int acks = 0;
  const auto delivered = SendRequest(sender, transfers, Clock::time_point{}, &acks);
  ASSERT_EQ(delivered.size(), 1u);
  ExpectSameTransfer(delivered[0], request);
  EXPECT_EQ(acks, 2);  // ACK(1) opening the window, then ACK(4) of the whole
  EXPECT_EQ(transfers.stats().requests, 1u);

  // The last segment again (our final ACK lost): ACKed again, not delivered again.
  bool whole = true;
  Segments out = OneSegment(transfers, sender, 4, &whole);
  EXPECT_FALSE(whole);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(rmpp::Segment(out[0].mad.data()), 4u);
  // The whole request asked again (same TID): delivered again.
  rmpp::RmppSender retry(request, 3);
  EXPECT_EQ(SendRequest(retry, transfers, Clock::time_point{}).size(), 1u);
  // Forgotten once idle.
  EXPECT_EQ(transfers.requests_kept(), 1u);
  out.clear();
  transfers.OnTimer(Clock::time_point{} + RmppTransfers::kInboundStall, out);
  EXPECT_EQ(transfers.requests_kept(), 0u);
  EXPECT_FALSE(transfers.NextDeadline().has_value());
}

TEST(RmppTransfers, ARequestStartingPastSegmentOneIsAborted) {
  RmppTransfers transfers(kAckTimeout, 3);
  rmpp::RmppSender sender(MultiPathRequest(40), 3);
  bool whole = true;
  const Segments out = OneSegment(transfers, sender, 2, &whole);
  EXPECT_FALSE(whole);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(rmpp::Type(out[0].mad.data()), rmpp::kTypeAbort);
  EXPECT_EQ(rmpp::RmppStatus(out[0].mad.data()), rmpp::kStatusBadFirstOrSegment);
  EXPECT_EQ(transfers.requests_kept(), 0u);  // segment 1 may start it afresh
  EXPECT_EQ(SendRequest(sender, transfers, Clock::time_point{}).size(), 1u);
}

TEST(RmppTransfers, AOneSegmentRequestIsTheSms) {
  rmpp::RmppSender one(MultiPathRequest(2), 3);  // 56 + 56 bytes: one segment
  sm::MadBytes segment{};
  one.BuildSegment(1, segment.data());
  EXPECT_FALSE(RmppTransfers::IsRequestData(segment));
  rmpp::RmppSender four(MultiPathRequest(40), 3);
  four.BuildSegment(1, segment.data());
  EXPECT_TRUE(RmppTransfers::IsRequestData(segment));
  segment[3] |= 0x80;  // a response's segment: not a request
  EXPECT_FALSE(RmppTransfers::IsRequestData(segment));
}

}  // namespace
}  // namespace softib::softibd
