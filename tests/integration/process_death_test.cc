// A user process holding >= 100 each of PDs, MRs, CQs and QPs, and a pending request per
// CQ, is killed with SIGKILL: the node's object counts return to their baseline. With the speed
// path (*SpeedPath*), the process also has work posted, and the RC peer of its QP (in the test
// process) sees its QP go to error.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstring>
#include <sstream>
#include <thread>

#include "rc_endpoint.h"
#include "softibd_instance.h"
#include "status_printer.h"
#include "user/runtime_ioctls_proxy.h"
#include "user/verbs_ca_proxy.h"
#include "user/verbs_mr_mw_proxy.h"
#include "user/verbs_pd_av_proxy.h"

namespace softib::integration {
namespace {

constexpr int kObjectsPerType = 100;
constexpr auto kDeathTestLimit = std::chrono::seconds(15);

std::string Describe(const abi::ObjectCounts& c) {
  std::ostringstream text;
  text << "al=" << c.al << " ca=" << c.ca << " pd=" << c.pd << " cq=" << c.cq << " qp=" << c.qp
       << " mr=" << c.mr << " shm=" << c.shm_mappings << " pending=" << c.pending_requests
       << " files=" << c.open_files;
  return text.str();
}

class ProcessDeathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(daemon_.Start(SOFTIBD_BINARY));
    ASSERT_EQ(user::OpenAl(daemon_.run_dir().c_str(), &al_), user::Status::SUCCESS);
    abi::GetCaGuidsIn in{};
    in.al = al_.al;
    abi::GetCaGuidsOut out{};
    ASSERT_EQ(user::proxy::GetCaGuids(al_.device, in, out, guids_), user::Status::SUCCESS);
    ASSERT_GE(out.num_cas, 2u);
  }
  void TearDown() override {
    if (al_.device != nullptr) {
      EXPECT_EQ(user::CloseAl(&al_), user::Status::SUCCESS);
    }
    EXPECT_EQ(daemon_.Stop(), 0);
  }

  abi::ObjectCounts NodeCounts() {
    abi::QueryObjectCountsIn in{};
    in.al = al_.al;
    in.scope = abi::CountScope::NODE;
    abi::QueryObjectCountsOut out{};
    EXPECT_EQ(user::proxy::QueryObjectCounts(al_.device, in, out), user::Status::SUCCESS);
    return out.counts;
  }
  // Polls (bounded) until the node's counts equal `baseline`.
  void ExpectBackTo(const abi::ObjectCounts& baseline) {
    std::string now = Describe(NodeCounts());
    const auto deadline = std::chrono::steady_clock::now() + kDeathTestLimit;
    while (now != Describe(baseline) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      now = Describe(NodeCounts());
    }
    EXPECT_EQ(now, Describe(baseline));
  }
  // Polls (bounded: requests reach the kernel after the process said "holding") until the
  // node holds the victim's objects and requests.
  void ExpectLoaded(const abi::ObjectCounts& baseline) {
    auto loaded = [&](const abi::ObjectCounts& c) {
      return c.qp >= baseline.qp + kObjectsPerType && c.cq >= baseline.cq + kObjectsPerType &&
             c.mr >= baseline.mr + kObjectsPerType && c.pd >= baseline.pd + kObjectsPerType &&
             c.pending_requests >= baseline.pending_requests + kObjectsPerType;
    };
    abi::ObjectCounts now = NodeCounts();
    const auto deadline = std::chrono::steady_clock::now() + kDeathTestLimit;
    while (!loaded(now) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      now = NodeCounts();
    }
    EXPECT_TRUE(loaded(now)) << "baseline " << Describe(baseline) << "\nnow      " << Describe(now);
  }
  void Kill(Process& hog) {
    ASSERT_TRUE(hog.Signal(SIGKILL));
    EXPECT_EQ(hog.Wait(kDeathTestLimit), 128 + SIGKILL);
  }

  SoftibdInstance daemon_;
  user::AlFile al_;
  uint64_t guids_[64] = {};
};

TEST_F(ProcessDeathTest, ObjectCountsReturnToBaseline) {
  const abi::ObjectCounts baseline = NodeCounts();
  Process hog;
  ASSERT_TRUE(
      hog.Start({SOFTIB_VERBS_CLIENT, daemon_.run_dir(), "hog", std::to_string(kObjectsPerType)}));
  std::string line;
  ASSERT_TRUE(hog.ReadLine(&line, std::chrono::seconds(60))) << hog.ReadAllStderr(kDeathTestLimit);
  ASSERT_EQ(line, "holding");
  ExpectLoaded(baseline);
  Kill(hog);
  ExpectBackTo(baseline);
}

TEST_F(ProcessDeathTest, SpeedPathPeerQpGoesToError) {
  // The peer, on the CA cabled to the victim's (the victim uses the first CA).
  user::CaFile ca;
  ASSERT_EQ(user::OpenCaByGuid(al_, guids_[1], 0, &ca), user::Status::SUCCESS);
  abi::Handle<abi::ObjectType::Pd> pd{};
  ASSERT_EQ(AllocPd(ca, &pd), user::Status::SUCCESS);
  std::vector<uint8_t> buffer(4096);
  abi::Handle<abi::ObjectType::Mr> mr{};
  uint32_t lkey = 0, rkey = 0;
  ASSERT_EQ(RegisterBuffer(ca, pd, buffer.data(), buffer.size(), abi::AccessFlags::LOCAL_WRITE, &mr,
                           &lkey, &rkey),
            user::Status::SUCCESS);
  RcEndpoint peer;
  ASSERT_EQ(peer.Create(ca, pd, 16), user::Status::SUCCESS);
  ASSERT_EQ(peer.MapRings(), user::Status::SUCCESS);
  uint16_t lid = 0;
  uint8_t link_state = 0;
  ASSERT_EQ(PortLid(ca, &lid, &link_state), user::Status::SUCCESS);
  const abi::ObjectCounts baseline = NodeCounts();

  Process hog;
  ASSERT_TRUE(hog.Start(
      {SOFTIB_VERBS_CLIENT, daemon_.run_dir(), "hog-peer", std::to_string(kObjectsPerType)}));
  std::string line;
  ASSERT_TRUE(hog.ReadLine(&line, std::chrono::seconds(60))) << hog.ReadAllStderr(kDeathTestLimit);
  std::istringstream victim(line);
  std::string word;
  unsigned victim_lid = 0, victim_qpn = 0;
  ASSERT_TRUE(victim >> word >> victim_lid >> victim_qpn && word == "victim") << line;

  // Short ACK timeout and few retries: the peer learns of the loss quickly.
  RcTimers timers;
  timers.timeout = 10;  // ~4 ms
  timers.retry_count = 2;
  ASSERT_EQ(peer.Init(), user::Status::SUCCESS);
  ASSERT_EQ(peer.PostRecv(RecvWr(1, buffer.data(), 1024, lkey)), user::Status::SUCCESS);
  ASSERT_EQ(peer.Connect(static_cast<uint16_t>(victim_lid), victim_qpn, timers),
            user::Status::SUCCESS);
  ASSERT_TRUE(
      hog.WriteStdin("peer " + std::to_string(lid) + " " + std::to_string(peer.qpn()) + "\n"));
  ASSERT_TRUE(hog.ReadLine(&line, kDeathTestLimit));
  ASSERT_EQ(line, "holding");

  // The victim's SEND arrived: the connection worked while it lived.
  abi::WorkCompletion wc{};
  ASSERT_EQ(peer.PollOne(&wc, kDeathTestLimit), user::Status::SUCCESS);
  EXPECT_EQ(wc.status, abi::WcStatus::SUCCESS);
  EXPECT_EQ(wc.opcode, abi::WcOpcode::RECV);
  EXPECT_EQ(wc.length, 16u);
  EXPECT_STREQ(reinterpret_cast<const char*>(buffer.data()), "from the victim");
  ExpectLoaded(baseline);

  Kill(hog);
  ExpectBackTo(baseline);

  // The peer's next send finds nobody: retries run out and the QP goes to error.
  std::memcpy(buffer.data() + 2048, "anyone there?", 14);
  ASSERT_EQ(peer.PostSend(SendWr(9, abi::WrType::SEND, buffer.data() + 2048, 14, lkey)),
            user::Status::SUCCESS);
  ASSERT_EQ(peer.PollOne(&wc, kDeathTestLimit), user::Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 9u);
  EXPECT_EQ(wc.status, abi::WcStatus::RETRY_EXC_ERR) << abi::ToString(wc.status);
  abi::QpState state = abi::QpState::RESET;
  EXPECT_EQ(peer.QueryState(&state), user::Status::SUCCESS);
  EXPECT_EQ(state, abi::QpState::ERROR) << abi::ToString(state);

  EXPECT_EQ(peer.Destroy(), user::Status::SUCCESS);
  abi::DeregMrIn dereg{};
  dereg.mr = mr;
  EXPECT_EQ(user::proxy::DeregMr(ca.device, dereg), user::Status::SUCCESS);
  abi::DeallocPdIn dealloc{};
  dealloc.pd = pd;
  EXPECT_EQ(user::proxy::DeallocPd(ca.device, dealloc), user::Status::SUCCESS);
  EXPECT_EQ(user::CloseCaFile(&ca), user::Status::SUCCESS);
}

}  // namespace
}  // namespace softib::integration
