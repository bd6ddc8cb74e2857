// Every test of softib_perf run end to end between two kernel clients of an in-process node
// (two CAs cabled back to back), with --validate: the rows come out and every payload,
// RDMA target and atomic result is checked, on RC, UC and UD where they apply.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "kernel_backend.h"
#include "session.h"

namespace softib::perf {
namespace {

class KernelRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    node_ = InProcessNode::Boot("perf_test", &error).release();
    ASSERT_NE(node_, nullptr) << error;
  }
  static void TearDownTestSuite() {
    delete node_;
    node_ = nullptr;
  }

  struct Outcome {
    bool client_ok = false, server_ok = false;
    std::string client_error, server_error;
    RunReport client, server;
  };

  // Runs `client_options` against a server started with `server_options`.
  static Outcome Run(const Options& client_options, const Options& server_options) {
    Outcome out;
    static std::atomic<int> counter{0};
    const std::string id = std::to_string(counter++);
    std::string error;
    auto server_backend = node_->MakeClient("perf_server_" + id, false, &error);
    auto client_backend = node_->MakeClient("perf_client_" + id, false, &error);
    EXPECT_NE(client_backend, nullptr) << error;
    if (client_backend == nullptr || server_backend == nullptr) return out;
    OobChannel server_end, client_end;
    EXPECT_TRUE(OobChannel::Pair(&server_end, &client_end, &error));
    std::thread server([&] {
      out.server_ok = RunSession(server_options, false, *server_backend, server_end, &out.server,
                                 &out.server_error);
      if (!out.server_ok) server_end = OobChannel();
    });
    out.client_ok = RunSession(client_options, true, *client_backend, client_end, &out.client,
                               &out.client_error);
    if (!out.client_ok) client_end = OobChannel();
    server.join();
    return out;
  }

  static Options Make(TestKind test, std::vector<uint32_t> sizes, uint32_t iterations,
                      Transport transport = Transport::kRc) {
    Options o;
    o.test = test;
    o.sizes = std::move(sizes);
    o.iterations = iterations;
    o.transport = transport;
    o.kernel = true;
    o.validate = true;
    o.timeout_s = 20;
    o.tx_depth = IsLatency(test) ? 1 : 16;
    o.rx_depth = 64;
    o.inline_size = (test == TestKind::kSendLat || test == TestKind::kWriteLat) ? 64 : 0;
    return o;
  }

  static InProcessNode* node_;
};

InProcessNode* KernelRun::node_ = nullptr;

TEST_F(KernelRun, SendLatencyChecksEveryPayloadBothWays) {
  const Options o = Make(TestKind::kSendLat, {2, 64, 1000}, 40);  // inline, inline, gathered
  Outcome r = Run(o, o);
  ASSERT_TRUE(r.client_ok) << r.client_error;
  ASSERT_TRUE(r.server_ok) << r.server_error;
  ASSERT_EQ(r.client.latency.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r.client.latency[i].bytes, o.sizes[i]);
    EXPECT_EQ(r.client.latency[i].iterations, 40u);
    EXPECT_GT(r.client.latency[i].t_min, 0.0);
    EXPECT_LE(r.client.latency[i].t_min, r.client.latency[i].t_typical);
    EXPECT_LE(r.client.latency[i].t_typical, r.client.latency[i].t_max);
  }
  EXPECT_EQ(r.client.validated_messages, 120u);  // the server's answers
  EXPECT_EQ(r.server.validated_messages, 120u);  // the client's pings
  EXPECT_EQ(r.server.received_messages, 120u);
}

TEST_F(KernelRun, WriteLatencyDeliversTheWholeBuffer) {
  const Options o = Make(TestKind::kWriteLat, {1, 4096}, 30);
  Outcome r = Run(o, o);
  ASSERT_TRUE(r.client_ok) << r.client_error;
  ASSERT_TRUE(r.server_ok) << r.server_error;
  ASSERT_EQ(r.client.latency.size(), 2u);
  EXPECT_EQ(r.client.validated_messages, 2u);  // one full-buffer check per size and side
  EXPECT_EQ(r.server.validated_messages, 2u);
}

TEST_F(KernelRun, ReadLatencyReadsTheServersPattern) {
  const Options o = Make(TestKind::kReadLat, {8, 5000}, 25);
  Outcome r = Run(o, o);
  ASSERT_TRUE(r.client_ok) << r.client_error;
  ASSERT_TRUE(r.server_ok) << r.server_error;
  ASSERT_EQ(r.client.latency.size(), 2u);
  EXPECT_EQ(r.client.validated_messages, 50u);
}

TEST_F(KernelRun, AtomicsReturnEveryOriginalValueAndLeaveTheCount) {
  for (AtomicType type : {AtomicType::kFetchAdd, AtomicType::kCompareSwap}) {
    for (TestKind test : {TestKind::kAtomicLat, TestKind::kAtomicBw}) {
      Options o = Make(test, {8}, 50);
      o.atomic_type = type;
      Outcome r = Run(o, o);
      ASSERT_TRUE(r.client_ok) << Name(test) << ": " << r.client_error;
      ASSERT_TRUE(r.server_ok) << Name(test) << ": " << r.server_error;
      // 50 returned values checked by the client, the target's final value by the server.
      EXPECT_EQ(r.client.validated_messages, 51u) << Name(test);
      EXPECT_EQ(r.server.validated_messages, 1u) << Name(test);
    }
  }
}

TEST_F(KernelRun, BandwidthTestsPrintARowPerSize) {
  for (TestKind test : {TestKind::kWriteBw, TestKind::kReadBw, TestKind::kSendBw}) {
    const Options o = Make(test, {2, 4096, 65536}, 40);
    Outcome r = Run(o, o);
    ASSERT_TRUE(r.client_ok) << Name(test) << ": " << r.client_error;
    ASSERT_TRUE(r.server_ok) << Name(test) << ": " << r.server_error;
    ASSERT_EQ(r.client.bandwidth.size(), 3u) << Name(test);
    for (size_t i = 0; i < 3; ++i) {
      const BandwidthRow& row = r.client.bandwidth[i];
      EXPECT_EQ(row.bytes, o.sizes[i]);
      EXPECT_EQ(row.iterations, 40u);
      EXPECT_GT(row.bw_average, 0.0);
      EXPECT_GE(row.bw_peak, row.bw_average);
      EXPECT_NEAR(row.msg_rate * row.bytes * 1e6 / (1 << 20), row.bw_average,
                  row.bw_average * 1e-6);
    }
    if (test == TestKind::kSendBw) {
      EXPECT_EQ(r.server.received_messages, 120u);
      EXPECT_EQ(r.server.validated_messages, 120u);
    } else if (test == TestKind::kReadBw) {
      EXPECT_EQ(r.client.validated_messages, 120u);  // each read's data
    } else {
      EXPECT_EQ(r.server.validated_messages, 3u);  // the target, once per size
    }
  }
}

TEST_F(KernelRun, UnreliableTransportsRunTheirTests) {
  struct Case {
    TestKind test;
    Transport transport;
  };
  for (Case c :
       {Case{TestKind::kSendLat, Transport::kUd}, Case{TestKind::kSendLat, Transport::kUc},
        Case{TestKind::kWriteLat, Transport::kUc}, Case{TestKind::kWriteBw, Transport::kUc},
        Case{TestKind::kSendBw, Transport::kUc}, Case{TestKind::kSendBw, Transport::kUd}}) {
    const Options o = Make(c.test, {256}, 20, c.transport);
    Outcome r = Run(o, o);
    const std::string what = std::string(Name(c.test)) + " over " + Name(c.transport);
    ASSERT_TRUE(r.client_ok) << what << ": " << r.client_error;
    ASSERT_TRUE(r.server_ok) << what << ": " << r.server_error;
    EXPECT_EQ(r.client.latency.size() + r.client.bandwidth.size(), 1u) << what;
    if (c.test == TestKind::kSendBw) {
      // A message that finds no receive is lost on UC/UD; what arrived was checked.
      EXPECT_LE(r.server.received_messages, 20u) << what;
      EXPECT_EQ(r.server.validated_messages, r.server.received_messages) << what;
    }
  }
}

TEST_F(KernelRun, ServerRefusesAClientOfAnotherTest) {
  const Options client = Make(TestKind::kWriteBw, {64}, 10);
  const Options server = Make(TestKind::kReadBw, {64}, 10);
  Outcome r = Run(client, server);
  EXPECT_FALSE(r.client_ok);
  EXPECT_FALSE(r.server_ok);
  EXPECT_NE(r.server_error.find("the client asked for write_bw over RC"), std::string::npos)
      << r.server_error;
  EXPECT_NE(r.client_error.find("the server runs another test"), std::string::npos)
      << r.client_error;
}

TEST_F(KernelRun, AnUnknownCaFailsTheSetUpOnBothSides) {
  Options client = Make(TestKind::kWriteBw, {64}, 10);
  client.ca_guid = 0x0123456789abcdefull;
  const Options server = Make(TestKind::kWriteBw, {64}, 10);
  Outcome r = Run(client, server);
  EXPECT_FALSE(r.client_ok);
  EXPECT_FALSE(r.server_ok);
  EXPECT_NE(r.client_error.find("OpenCa"), std::string::npos) << r.client_error;
  EXPECT_EQ(r.server_error, "the peer failed");
}

}  // namespace
}  // namespace softib::perf
