// The transaction engine over a scripted MadPort: TID matching on the low 32 bits, window
// limit, retries after timeouts and after the transport hands a send back.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <utility>

#include "queued_port.h"
#include "softib/sm/smp.h"
#include "softib/sm/transactions.h"

namespace softib::sm {
namespace {

// Answers requests with GetResp after a scripted number of drops; rewrites the TID's high
// half as ibsim and umad2sim do.
class ScriptedPort : public QueuedPort {
 public:
  unsigned drop_first = 0;    // silently lose the first N sends
  unsigned bounce_first = 0;  // hand the first N sends back as failed
  unsigned max_outstanding = 0;
  unsigned sends = 0;

  PortStatus Send(const MadBytes& mad, const MadAddress&, int) override {
    ++sends;
    if (drop_first) {
      --drop_first;
      return PortStatus::kOk;
    }
    ReceivedMad r;
    r.mad = mad;
    r.mad[8] = 0x00;
    r.mad[9] = 0x07;  // ibsim's client index
    r.mad[10] = 0x00;
    r.mad[11] = 0x02;  // umad2sim's agent id
    if (bounce_first) {
      --bounce_first;
      r.send_failed = true;
    } else {
      r.mad[3] = kMethodGetResp;
    }
    pending.push_back(r);
    max_outstanding = std::max<unsigned>(max_outstanding, static_cast<unsigned>(pending.size()));
    return PortStatus::kOk;
  }
  std::string Describe() const override { return "scripted"; }
};

// The SM's thread is descheduled past every deadline (a loaded machine) while the answers
// arrive: the first wait returns after the deadlines passed, and the answers waiting in the
// queue complete their transactions instead of being counted as timeouts and retried.
class StallingPort : public ScriptedPort {
 public:
  int stall_ms = 0;  // the first Receive returns only after this long
  PortStatus Receive(ReceivedMad& out, int timeout_ms) override {
    if (stall_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::exchange(stall_ms, 0)));
    }
    return ScriptedPort::Receive(out, timeout_ms);
  }
};

TEST(Transactions, AnswersQueuedWhileTheThreadWasAwayAreNotTimeouts) {
  StallingPort port;
  port.stall_ms = 30;  // six times the timeout
  Transactions tx(port, {.window = 8, .timeout_ms = 5, .retries = 0});
  unsigned ok = 0, timed_out = 0;
  for (uint32_t i = 0; i < 8; ++i)
    tx.Submit(MakeDrSmp(kMethodGet, kAttrPortInfo, i, {}), {}, [&](const TxResult& r) {
      if (r.status == TxStatus::kOk) ++ok;
      if (r.status == TxStatus::kTimeout) ++timed_out;
    });
  ASSERT_TRUE(tx.Run());
  EXPECT_EQ(ok, 8u);
  EXPECT_EQ(timed_out, 0u);
  EXPECT_EQ(tx.stats().timeouts, 0u);
  EXPECT_EQ(tx.stats().sent, 8u);  // nothing sent twice
}

TEST(Transactions, MatchesOnLowTidAndKeepsTheWindow) {
  ScriptedPort port;
  Transactions tx(port, {.window = 4, .timeout_ms = 5, .retries = 0});
  unsigned ok = 0;
  std::vector<uint32_t> modifiers;
  for (uint32_t i = 0; i < 10; ++i)
    tx.Submit(MakeDrSmp(kMethodGet, kAttrPortInfo, i, {}), {}, [&, i](const TxResult& r) {
      EXPECT_EQ(r.status, TxStatus::kOk);
      EXPECT_EQ(SmpModifier(r.response), i);
      ++ok;
    });
  ASSERT_TRUE(tx.Run());
  EXPECT_EQ(ok, 10u);
  EXPECT_LE(port.max_outstanding, 4u);
  EXPECT_EQ(tx.stats().sent, 10u);
  EXPECT_EQ(tx.stats().retries, 0u);
}

// A feeder submits the next batch only when the window has room and nothing is queued; it
// is driven until it says it has no more, in order, and the window still holds.
TEST(Transactions, AFeederSubmitsBatchesAsTheWindowDrains) {
  ScriptedPort port;
  Transactions tx(port, {.window = 4, .timeout_ms = 5, .retries = 0});
  std::vector<uint32_t> answered;
  unsigned batches = 0, calls = 0;
  tx.set_feeder([&] {
    ++calls;
    EXPECT_EQ(tx.pending(), tx.in_flight()) << "called with nothing queued";
    if (batches == 3) return false;
    for (uint32_t i = 0; i < 5; ++i) {
      const uint32_t modifier = batches * 5 + i;
      tx.Submit(MakeDrSmp(kMethodGet, kAttrPortInfo, modifier, {}), {},
                [&answered](const TxResult& r) { answered.push_back(SmpModifier(r.response)); });
    }
    ++batches;
    return true;
  });
  ASSERT_TRUE(tx.Run());
  EXPECT_EQ(calls, 4u);
  ASSERT_EQ(answered.size(), 15u);
  for (uint32_t i = 0; i < 15; ++i) EXPECT_EQ(answered[i], i);
  EXPECT_LE(port.max_outstanding, 4u);
  ASSERT_TRUE(tx.Run()) << "the spent feeder is gone";
  EXPECT_EQ(calls, 4u);
}

TEST(Transactions, RetriesLostAndBouncedSendsThenGivesUp) {
  ScriptedPort port;
  port.drop_first = 1;
  port.bounce_first = 1;
  Transactions tx(port, {.window = 8, .timeout_ms = 2, .retries = 2});
  TxStatus status = TxStatus::kTimeout;
  tx.Submit(MakeDrSmp(kMethodGet, kAttrNodeInfo, 0, {}), {},
            [&](const TxResult& r) { status = r.status; });
  ASSERT_TRUE(tx.Run());
  EXPECT_EQ(status, TxStatus::kOk);
  EXPECT_EQ(tx.stats().sent, 3u);
  EXPECT_EQ(tx.stats().retries, 2u);

  port.drop_first = 10;
  unsigned calls = 0;
  tx.Submit(MakeDrSmp(kMethodGet, kAttrNodeInfo, 0, {}), {}, [&](const TxResult& r) {
    status = r.status;
    ++calls;
  });
  ASSERT_TRUE(tx.Run());
  EXPECT_EQ(calls, 1u);
  EXPECT_EQ(status, TxStatus::kTimeout);
  EXPECT_EQ(tx.stats().timeouts, 1u);
  EXPECT_EQ(tx.stats().sent, 6u);  // 1 + 2 retries
}

TEST(Transactions, CallbacksMaySubmitMore) {
  ScriptedPort port;
  Transactions tx(port, {.window = 2, .timeout_ms = 5, .retries = 0});
  unsigned depth = 0;
  std::function<void(const TxResult&)> next = [&](const TxResult&) {
    if (++depth < 5) tx.Submit(MakeDrSmp(kMethodGet, kAttrNodeInfo, depth, {}), {}, next);
  };
  tx.Submit(MakeDrSmp(kMethodGet, kAttrNodeInfo, 0, {}), {}, next);
  ASSERT_TRUE(tx.Run());
  EXPECT_EQ(depth, 5u);
}

TEST(Smp, DirectedRouteLayout) {
  const uint8_t path[] = {1, 3, 5};
  const uint8_t data[] = {0xAA, 0xBB};
  const MadBytes m = MakeDrSmp(kMethodSet, kAttrLft, 7, path, data);
  EXPECT_EQ(m[0], 1);     // BaseVersion
  EXPECT_EQ(m[1], 0x81);  // SubnMgtDR
  EXPECT_EQ(m[2], 1);
  EXPECT_EQ(m[3], kMethodSet);
  EXPECT_EQ(m[6], 0);  // HopPointer
  EXPECT_EQ(m[7], 3);  // HopCount
  EXPECT_EQ(SmpAttribute(m), kAttrLft);
  EXPECT_EQ(SmpModifier(m), 7u);
  EXPECT_EQ(m[32], 0xFF);  // DrSLID
  EXPECT_EQ(m[33], 0xFF);
  EXPECT_EQ(m[34], 0xFF);  // DrDLID
  EXPECT_EQ(m[35], 0xFF);
  EXPECT_EQ(m[64], 0xAA);
  EXPECT_EQ(m[65], 0xBB);
  EXPECT_EQ(m[128], 0);  // InitialPath[0] unused
  EXPECT_EQ(m[129], 1);
  EXPECT_EQ(m[130], 3);
  EXPECT_EQ(m[131], 5);
  MadBytes resp = m;
  resp[4] = 0x80;  // D bit only
  EXPECT_EQ(SmpStatus(resp), 0);
  resp[5] = 0x1C;
  EXPECT_EQ(SmpStatus(resp), 0x1C);
}

}  // namespace
}  // namespace softib::sm
