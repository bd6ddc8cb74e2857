// The AL's own QP1 agents (gsi_agent.h) between the two CAs of one node (LIDs 1 and 2):
// unsolicited requests with their origin, responses to a send's callback, timeouts,
// cancel, an RMPP response reassembled, clients' services beside them, the CA's removal.
#include <condition_variable>
#include <mutex>

#include "mad_client.h"
#include "runtime/al/src/gsi_agent.h"
#include "softib/stack/node_stack.h"

namespace softib::testing {
namespace {

using al::GsiAgent;
using al::GsiAgentSpec;
using al::GsiRegistration;
using al::GsiSendOptions;
using al::MadOrigin;

constexpr uint8_t kAgentClass = 0x0A;      // vendor range 1
constexpr uint8_t kAgentRmppClass = 0x31;  // vendor range 2, RMPP

// What callbacks saw, waited for from the test's thread.
struct AgentSeen {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::vector<uint8_t>> received;
  std::vector<MadOrigin> origins;
  std::vector<abi::WcStatus> done;
  std::vector<std::vector<uint8_t>> responses;

  template <typename Pred>
  bool WaitFor(Pred pred) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(10), [&] { return pred(*this); });
  }
  al::GsiSendDone Done() {
    return [this](abi::WcStatus status, std::span<const uint8_t> response, const MadOrigin&) {
      std::lock_guard lock(mutex);
      done.push_back(status);
      responses.emplace_back(response.begin(), response.end());
      changed.notify_all();
    };
  }
};

al::MadAddress AgentQp1Of(uint16_t lid) {
  al::MadAddress to;
  to.av.dlid = lid;
  to.remote_qpn = 1;
  to.remote_qkey = 0x80010000;
  return to;
}

// An agent of kAgentClass on every port that answers Get (0x01) with GetResp carrying the
// request's byte 40 plus one.
std::unique_ptr<GsiRegistration> AgentResponder(al::AccessLayer* al, AgentSeen* seen,
                                                uint8_t method = 0x01) {
  GsiAgentSpec spec;
  spec.mgmt_class = kAgentClass;
  spec.mgmt_version = 1;
  spec.methods = {method};
  spec.on_receive = [seen](GsiAgent& agent, std::span<const uint8_t> mad, const MadOrigin& from) {
    {
      std::lock_guard lock(seen->mutex);
      seen->received.emplace_back(mad.begin(), mad.end());
      seen->origins.push_back(from);
    }
    std::vector<uint8_t> response(mad.begin(), mad.end());
    response[3] = 0x81;
    response[40] = static_cast<uint8_t>(mad[40] + 1);
    al::MadAddress back = AgentQp1Of(from.wc.slid);
    back.remote_qpn = from.wc.src_qp;
    back.pkey_index = from.wc.pkey_index;
    EXPECT_EQ(agent.Send(back, response, {}, {}), Status::SUCCESS);
    seen->changed.notify_all();
  };
  return GsiRegistration::Register(al, std::move(spec));
}

std::unique_ptr<GsiRegistration> AgentRequester(al::AccessLayer* al,
                                                uint8_t mgmt_class = kAgentClass,
                                                bool rmpp = false) {
  GsiAgentSpec spec;
  spec.mgmt_class = mgmt_class;
  spec.mgmt_version = 1;
  spec.rmpp = rmpp;
  return GsiRegistration::Register(al, std::move(spec));
}

TEST(GsiAgent, RequestReachesTheOtherCaAndItsResponseTheSendsCallback) {
  auto node = BootDefault("gsi-agent-rr");
  ASSERT_TRUE(node);
  const auto guids = node->ca_guids();
  AgentSeen responder_seen, requester_seen;
  auto responder = AgentResponder(node->access_layer(), &responder_seen);
  auto requester = AgentRequester(node->access_layer());
  // The responder registration has an agent on both CAs; the requester's is A's.
  auto agent = requester->Find(guids[0], 1);
  ASSERT_TRUE(agent);
  EXPECT_TRUE(responder->Find(guids[1], 1));
  EXPECT_FALSE(responder->Find(guids[1], 9));
  EXPECT_EQ(agent->port(), 1);

  auto request = MakeMad(kAgentClass, 0x01, 0x00000000CAFE0001, 0x0010, 0x11);
  request[40] = 41;
  GsiSendOptions options{true, 2000, 3};
  ASSERT_EQ(agent->Send(AgentQp1Of(2), request, options, requester_seen.Done()), Status::SUCCESS);
  ASSERT_TRUE(requester_seen.WaitFor([](AgentSeen& s) { return !s.done.empty(); }));
  EXPECT_EQ(requester_seen.done[0], abi::WcStatus::SUCCESS);
  ASSERT_EQ(requester_seen.responses[0].size(), 256u);
  EXPECT_EQ(requester_seen.responses[0][3], 0x81);
  EXPECT_EQ(requester_seen.responses[0][40], 42);
  // The TID's high half is the agent's id; the low half is ours.
  const uint64_t tid = TidOf(requester_seen.responses[0]);
  EXPECT_EQ(tid >> 32, agent->agent_id());
  EXPECT_EQ(tid & 0xFFFFFFFF, 0xCAFE0001u);

  std::lock_guard lock(responder_seen.mutex);
  ASSERT_EQ(responder_seen.received.size(), 1u);
  EXPECT_EQ(responder_seen.origins[0].wc.slid, 1u);
  EXPECT_EQ(responder_seen.origins[0].wc.src_qp, 1u);
  EXPECT_EQ(responder_seen.origins[0].wc.pkey_index, 0u);
  EXPECT_FALSE(responder_seen.origins[0].grh);
  EXPECT_TRUE(
      std::equal(request.begin() + 16, request.end(), responder_seen.received[0].begin() + 16));
}

TEST(GsiAgent, UnansweredRequestTimesOutAfterItsRetriesAndCancelEndsAnother) {
  auto node = BootDefault("gsi-agent-timeout");
  ASSERT_TRUE(node);
  const auto guids = node->ca_guids();
  auto requester = AgentRequester(node->access_layer());
  auto agent = requester->Find(guids[0], 1);
  ASSERT_TRUE(agent);
  AgentSeen seen;
  const auto request = MakeMad(kAgentClass, 0x01, 7, 0x0010);
  ASSERT_EQ(agent->Send(AgentQp1Of(2), request, {true, 20, 2}, seen.Done()), Status::SUCCESS);
  ASSERT_TRUE(seen.WaitFor([](AgentSeen& s) { return s.done.size() == 1; }));
  EXPECT_EQ(seen.done[0], abi::WcStatus::RESP_TIMEOUT_ERR);
  EXPECT_TRUE(seen.responses[0].empty());

  uint64_t id = 0;
  ASSERT_EQ(agent->Send(AgentQp1Of(2), request, {true, 60000, 0}, seen.Done(), &id),
            Status::SUCCESS);
  EXPECT_EQ(agent->Cancel(id), Status::SUCCESS);
  ASSERT_TRUE(seen.WaitFor([](AgentSeen& s) { return s.done.size() == 2; }));
  EXPECT_EQ(seen.done[1], abi::WcStatus::CANCELED);
  EXPECT_EQ(agent->Cancel(id), Status::NOT_FOUND);
  // Bad sends.
  EXPECT_EQ(agent->Send(AgentQp1Of(2), std::span(request).first(100), {}, {}),
            Status::INVALID_SETTING);
  EXPECT_EQ(agent->Send(AgentQp1Of(2), request, {true, 0, 0}, {}), Status::INVALID_SETTING);

  // An outstanding send ends CANCELED with its registration.
  ASSERT_EQ(agent->Send(AgentQp1Of(2), request, {true, 60000, 0}, seen.Done()), Status::SUCCESS);
  agent.Reset();
  requester.reset();
  std::lock_guard lock(seen.mutex);
  ASSERT_EQ(seen.done.size(), 3u);
  EXPECT_EQ(seen.done[2], abi::WcStatus::CANCELED);
}

TEST(GsiAgent, ClientServicesOfTheClassWorkBesideIt) {
  auto node = BootDefault("gsi-agent-beside");
  ASSERT_TRUE(node);
  const auto guids = node->ca_guids();
  AgentSeen seen;
  auto responder = AgentResponder(node->access_layer(), &seen);  // takes Get on every port
  Client client(node->node());
  MadEnd a, b;
  ASSERT_NO_FATAL_FAILURE(OpenMadEnd(client, guids[0], 1, abi::QpType::GSI_ALIAS, &a));
  ASSERT_NO_FATAL_FAILURE(OpenMadEnd(client, guids[1], 2, abi::QpType::GSI_ALIAS, &b));
  EXPECT_EQ(RegSvc(client, &b, SvcParams(kAgentClass, {0x01})), Status::RESOURCE_BUSY);
  ASSERT_EQ(RegSvc(client, &b, SvcParams(kAgentClass, {0x02})), Status::SUCCESS);  // Set: free
  ASSERT_EQ(RegSvc(client, &a, SvcParams(kAgentClass, {})), Status::SUCCESS);

  // The client's Get goes to the AL's agent on B, which answers the client.
  auto get = MakeMad(kAgentClass, 0x01, 5, 0x0010);
  get[40] = 9;
  uint64_t send_id = 0;
  ASSERT_EQ(SendMadTo(client, SendTo(a.svc, 2, 256, 2000, 3, true, 1), get, &send_id),
            Status::SUCCESS);
  MadEvent answer;
  ASSERT_TRUE(NextMadEvent(client, a.svc, &answer));
  EXPECT_EQ(answer.out.event.send_id, send_id);
  EXPECT_EQ(answer.mad[40], 10);
  // The client's Set goes to the client's service on B.
  ASSERT_EQ(SendMadTo(client, SendTo(a.svc, 2, 256, 0, 0, false, 2),
                      MakeMad(kAgentClass, 0x02, 6, 1), nullptr),
            Status::SUCCESS);
  MadEvent set;
  do {
    ASSERT_TRUE(NextMadEvent(client, b.svc, &set));
  } while (set.out.event.kind != abi::MadEventKind::RECEIVED);
  EXPECT_EQ(set.mad[3], 0x02);
  std::lock_guard lock(seen.mutex);
  EXPECT_EQ(seen.received.size(), 1u);
}

TEST(GsiAgent, RmppResponseArrivesReassembled) {
  auto node = BootDefault("gsi-agent-rmpp");
  ASSERT_TRUE(node);
  const auto guids = node->ca_guids();
  auto requester = AgentRequester(node->access_layer(), kAgentRmppClass, true);
  auto agent = requester->Find(guids[0], 1);
  ASSERT_TRUE(agent);
  Client client(node->node());
  MadEnd b;
  ASSERT_NO_FATAL_FAILURE(OpenMadEnd(client, guids[1], 2, abi::QpType::GSI_ALIAS, &b));
  ASSERT_EQ(RegSvc(client, &b, SvcParams(kAgentRmppClass, {0x12}, abi::MadSvcType::RMPP)),
            Status::SUCCESS);

  AgentSeen seen;
  auto request = MakeMad(kAgentRmppClass, 0x12, 0x77, 0x0020);  // GetTable, a single MAD
  std::fill(request.begin() + 24, request.begin() + 36, 0);
  ASSERT_EQ(agent->Send(AgentQp1Of(2), request, {true, 2000, 3}, seen.Done()), Status::SUCCESS);
  MadEvent got;
  ASSERT_TRUE(NextMadEvent(client, b.svc, &got));
  ASSERT_EQ(got.mad.size(), 256u);

  // A 10 KiB GetTableResp by RMPP.
  constexpr uint32_t kData = 10240;
  std::vector<uint8_t> response(got.mad.begin(), got.mad.begin() + kVendorRmppHeader);
  response[3] = 0x92;
  response.resize(kVendorRmppHeader + kData);
  for (uint32_t i = 0; i < kData; ++i)
    response[kVendorRmppHeader + i] = static_cast<uint8_t>(i * 7);
  abi::SendMadIn in = SendTo(b.svc, 1, static_cast<uint32_t>(response.size()), 2000, 3, false, 3);
  in.params.rmpp_version = 1;
  ASSERT_EQ(SendMadTo(client, in, response, nullptr), Status::SUCCESS);

  ASSERT_TRUE(seen.WaitFor([](AgentSeen& s) { return !s.done.empty(); }));
  EXPECT_EQ(seen.done[0], abi::WcStatus::SUCCESS);
  ASSERT_EQ(seen.responses[0].size(), kVendorRmppHeader + kData);
  EXPECT_EQ(seen.responses[0][3], 0x92);
  EXPECT_TRUE(std::equal(response.begin() + kVendorRmppHeader, response.end(),
                         seen.responses[0].begin() + kVendorRmppHeader));
}

TEST(GsiAgent, TheCasRemovalEndsItsAgentsAndItsSends) {
  auto node = BootDefault("gsi-agent-removal");
  ASSERT_TRUE(node);
  const auto guids = node->ca_guids();
  auto requester = AgentRequester(node->access_layer());
  AgentSeen seen;
  {
    auto agent = requester->Find(guids[0], 1);
    ASSERT_TRUE(agent);
    ASSERT_EQ(
        agent->Send(AgentQp1Of(2), MakeMad(kAgentClass, 0x01, 1, 1), {true, 60000, 0}, seen.Done()),
        Status::SUCCESS);
  }
  ASSERT_EQ(node->RemoveCa(guids[0]), Status::SUCCESS);
  EXPECT_FALSE(requester->Find(guids[0], 1));
  EXPECT_TRUE(requester->Find(guids[1], 1));
  std::lock_guard lock(seen.mutex);
  ASSERT_EQ(seen.done.size(), 1u);
  EXPECT_EQ(seen.done[0], abi::WcStatus::CANCELED);
}

}  // namespace
}  // namespace softib::testing
