// The CM's rejects, timeouts and duplicates between the two CAs of one node (LIDs 1 and 2):
// no listen, a consumer's reject with ARI and private data, REQ timeout after MaxCMRetries,
// MRA extending the wait, duplicate REQs answered with the MRA/REP again, a stale
// connection, and the end of a CEP's handle (pending: REJ; established: DREQ; a file's
// cleanup) — with nothing left afterwards.
#include "cm_client.h"
#include "mad_client.h"
#include "runtime/al/src/cm/cm.h"

namespace softib::testing {
namespace {

constexpr uint64_t kSvc = 0x0000000000ABC001;

const uint8_t* CmMsg(const abi::CepGetEventOut& e) { return e.mad + 24; }
uint16_t RejReason(const abi::CepGetEventOut& e) {
  return static_cast<uint16_t>(Be(CmMsg(e) + 10, 2));
}

// A booted node (named after the test), a client, and QPs in INIT on both CAs.
class CmReject : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string name =
        std::string("cm-") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    node = BootDefault(name.c_str());
    ASSERT_TRUE(node);
    main_client = std::make_unique<Client>(node->node());
    ASSERT_NO_FATAL_FAILURE(Open(*main_client));
  }
  void TearDown() override { main_client.reset(); }  // before the node

  al::cm::ConnectionManager& cm() { return *node->access_layer()->cm; }
  void Open(Client& client) {
    ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[0], 1, &a));
    ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[1], 2, &b));
    ASSERT_NO_FATAL_FAILURE(InitQp(client, a));
    ASSERT_NO_FATAL_FAILURE(InitQp(client, b));
  }
  // A listen on B, a REQ from A: the new passive CEP and the REQ as B received it.
  void Request(Client& client, const abi::CmReqParams& params) {
    listen = CreateCep(client, 0x11);
    ASSERT_EQ(Listen(client, listen, kSvc), Status::SUCCESS);
    active = CreateCep(client, 0xA);
    ASSERT_EQ(SendReq(client, active, a.qp, params), Status::SUCCESS);
    ASSERT_TRUE(NextCepEvent(client, listen, &req));
    ASSERT_EQ(req.event, abi::CepEventType::REQ_RECEIVED);
    passive = req.new_cep.value;
  }
  // ... then REP, RTU, both QPs in RTS.
  void Establish(Client& client) {
    ASSERT_NO_FATAL_FAILURE(Request(client, ReqParams(kSvc, 1, 2)));
    ASSERT_EQ(SendRep(client, passive, b.qp, RepParams()), Status::SUCCESS);
    ASSERT_EQ(NextEventType(client, active), abi::CepEventType::REP_RECEIVED);
    ASSERT_NO_FATAL_FAILURE(ApplyCepAttributes(client, active, a, nullptr, nullptr));
    ASSERT_EQ(kernel::IbCepSendRtu(client.al(), {{active}, 0, 0}, {}), Status::SUCCESS);
    ASSERT_EQ(NextEventType(client, passive), abi::CepEventType::RTU_RECEIVED);
    ASSERT_NO_FATAL_FAILURE(ApplyCepAttributes(client, passive, b, nullptr, nullptr));
  }
  // A copy of the REQ, sent to B's CM from a client's ComMgt requester on A.
  void ResendReq(Client& client) {
    if (raw.svc == 0) {
      ASSERT_NO_FATAL_FAILURE(
          OpenMadEnd(client, node->ca_guids()[0], 1, abi::QpType::GSI_ALIAS, &raw));
      abi::MadSvcParams p = SvcParams(0x07, {});
      p.mgmt_version = 2;
      ASSERT_EQ(RegSvc(client, &raw, p), Status::SUCCESS);
    }
    std::vector<uint8_t> copy(req.mad, req.mad + 256);
    ASSERT_EQ(SendMadTo(client, SendTo(raw.svc, 2, 256, 0, 0, false, 0), copy, nullptr),
              Status::SUCCESS);
  }
  void DestroyAll(Client& client) {
    for (uint64_t cep : {active, passive, listen}) {
      if (cep != 0) {
        EXPECT_EQ(kernel::IbDestroyCep(client.al(), {{cep}}), Status::SUCCESS);
      }
    }
    active = passive = listen = 0;
  }
  void ExpectNoCepLeft() { EXPECT_EQ(CepsLeft(node->access_layer()), 0u); }

  std::unique_ptr<stack::NodeStack> node;
  Side a, b;
  uint64_t listen = 0, active = 0, passive = 0;
  abi::CepGetEventOut req{};
  MadEnd raw;
  std::unique_ptr<Client> main_client;
};

TEST_F(CmReject, NoListenAnswersInvalidServiceId) {
  Client& client = *main_client;
  // A listen for the service, but with a private-data compare the REQ does not match.
  const uint64_t listen = CreateCep(client, 1);
  ASSERT_EQ(Listen(client, listen, kSvc, "match", 0), Status::SUCCESS);
  const uint64_t active = CreateCep(client, 2);
  ASSERT_EQ(SendReq(client, active, a.qp, ReqParams(kSvc, 1, 2), "other"), Status::SUCCESS);
  abi::CepGetEventOut rej{};
  ASSERT_TRUE(NextCepEvent(client, active, &rej));
  ASSERT_EQ(rej.event, abi::CepEventType::REJ_RECEIVED);
  EXPECT_EQ(Be(rej.mad + 16, 2), 0x0012u);
  EXPECT_EQ(Be(CmMsg(rej) + 0, 4), 0u);  // no CEP on B
  EXPECT_EQ(CmMsg(rej)[8] >> 6, 0);      // MessageRejected: REQ
  EXPECT_EQ(RejReason(rej), 8);          // invalid service ID
  EXPECT_EQ(cm().rejected.load(), 1u);
  // The CEP is idle again: it may send another REQ, which this time matches.
  ASSERT_EQ(SendReq(client, active, a.qp, ReqParams(kSvc, 1, 2), "match"), Status::SUCCESS);
  abi::CepGetEventOut req{};
  ASSERT_TRUE(NextCepEvent(client, listen, &req));
  EXPECT_EQ(req.event, abi::CepEventType::REQ_RECEIVED);
  for (uint64_t cep : {listen, active, req.new_cep.value}) {
    EXPECT_EQ(kernel::IbDestroyCep(client.al(), {{cep}}), Status::SUCCESS);
  }
  ExpectNoCepLeft();
}

TEST_F(CmReject, ConsumerRejectCarriesAriAndPrivateData) {
  Client& client = *main_client;
  ASSERT_NO_FATAL_FAILURE(Request(client, ReqParams(kSvc, 1, 2)));
  abi::CepSendRejIn in{};
  in.cep.value = passive;
  in.reason = 28;  // consumer reject
  in.ari_length = 5;
  std::memcpy(in.ari, "ARI!!", 5);
  in.private_data_length = 7;
  ASSERT_EQ(kernel::IbCepSendRej(client.al(), in, Bytes("go away")), Status::SUCCESS);
  EXPECT_EQ(kernel::IbCepSendRej(client.al(), in, Bytes("go away")), Status::INVALID_STATE);
  abi::CepGetEventOut rej{};
  ASSERT_TRUE(NextCepEvent(client, active, &rej));
  ASSERT_EQ(rej.event, abi::CepEventType::REJ_RECEIVED);
  const uint8_t* m = CmMsg(rej);
  EXPECT_NE(Be(m + 0, 4), 0u);                   // B's ID
  EXPECT_EQ(Be(m + 4, 4), Be(req.mad + 24, 4));  // A's ID, from the REQ
  EXPECT_EQ(m[8], 0 << 6);                       // MessageRejected: REQ
  EXPECT_EQ(m[9], 5 << 1);                       // RejectedInfoLength
  EXPECT_EQ(RejReason(rej), 28);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m + 12), 5), "ARI!!");
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m + 84), 7), "go away");
  DestroyAll(client);
  ExpectNoCepLeft();
}

TEST_F(CmReject, ReqTimesOutAfterMaxCmRetries) {
  Client& client = *main_client;
  const uint64_t active = CreateCep(client, 3);
  // LID 9: nobody answers. 4.096 us * 2^8 = 1 ms per try, two retries.
  ASSERT_EQ(SendReq(client, active, a.qp, ReqParams(kSvc, 1, 9, 8, 2)), Status::SUCCESS);
  abi::CepGetEventOut timeout{};
  ASSERT_TRUE(NextCepEvent(client, active, &timeout));
  EXPECT_EQ(timeout.event, abi::CepEventType::REQ_TIMEOUT);
  EXPECT_EQ(timeout.context, 3u);
  EXPECT_EQ(cm().retries.load(), 2u);
  EXPECT_EQ(kernel::IbDestroyCep(client.al(), {{active}}), Status::SUCCESS);
  ExpectNoCepLeft();
}

TEST_F(CmReject, MraExtendsTheWaitAndDuplicateReqsGetTheAnswerAgain) {
  Client& client = *main_client;
  // 4.096 us * 2^16 = 268 ms per try, three retries: ~1.1 s without an MRA.
  ASSERT_NO_FATAL_FAILURE(Request(client, ReqParams(kSvc, 1, 2, 16, 3)));

  // A duplicate REQ before the consumer answered: nothing to resend, no second CEP.
  ASSERT_NO_FATAL_FAILURE(ResendReq(client));
  abi::CepSendMraIn mra{};
  mra.cep.value = passive;
  mra.service_timeout = 23;  // 34 s
  mra.private_data_length = 4;
  ASSERT_EQ(kernel::IbCepSendMra(client.al(), mra, Bytes("wait")), Status::SUCCESS);
  abi::CepGetEventOut got{};
  ASSERT_TRUE(NextCepEvent(client, active, &got));
  ASSERT_EQ(got.event, abi::CepEventType::MRA_RECEIVED);
  EXPECT_EQ(Be(got.mad + 16, 2), 0x0011u);
  EXPECT_EQ(CmMsg(got)[8] >> 6, 0);   // MessageMRAed: REQ
  EXPECT_EQ(CmMsg(got)[9] >> 3, 23);  // ServiceTimeout
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(CmMsg(got) + 10), 4), "wait");
  const uint64_t resent_before = cm().resent.load();
  // A duplicate REQ while the MRA is out: the MRA again.
  ASSERT_NO_FATAL_FAILURE(ResendReq(client));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (cm().resent.load() == resent_before && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(cm().resent.load(), resent_before + 1);

  // The MRA keeps the REQ alive longer than its own retries would last. The yardstick: a
  // second REQ with the same timeout and retries, sent now to a LID nobody answers, times
  // out on the CM's same timer. Its deadlines all come after the first REQ's would have
  // (deadlines fire in order), so once it timed out, the first would have been sent again
  // three times and timed out too, had the MRA not replaced its timer.
  Side yardstick;
  ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[0], 1, &yardstick));
  ASSERT_NO_FATAL_FAILURE(InitQp(client, yardstick));
  const uint64_t retries_before = cm().retries.load();
  const uint64_t unanswered = CreateCep(client, 0xD);
  ASSERT_EQ(SendReq(client, unanswered, yardstick.qp, ReqParams(kSvc, 1, 9, 16, 3)),
            Status::SUCCESS);
  EXPECT_EQ(NextEventType(client, unanswered), abi::CepEventType::REQ_TIMEOUT);
  EXPECT_EQ(cm().retries.load(), retries_before + 3);  // the yardstick's alone
  abi::CepGetEventOut none{};
  EXPECT_EQ(kernel::IbCepGetEvent(client.al(), {{active}}, none), Status::CANCELED);
  EXPECT_EQ(kernel::IbDestroyCep(client.al(), {{unanswered}}), Status::SUCCESS);
  ASSERT_EQ(SendRep(client, passive, b.qp, RepParams()), Status::SUCCESS);
  ASSERT_EQ(NextEventType(client, active), abi::CepEventType::REP_RECEIVED);

  // A duplicate REQ while the REP is out: the REP again.
  ASSERT_NO_FATAL_FAILURE(ResendReq(client));
  while (cm().resent.load() == resent_before + 1 &&
         std::chrono::steady_clock::now() < deadline + std::chrono::seconds(2)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(cm().resent.load(), resent_before + 2);
  EXPECT_EQ(kernel::IbCepGetEvent(client.al(), {{listen}}, none), Status::CANCELED);

  // Destroying the active CEP past the REP: REJ (REP rejected) to the passive one.
  EXPECT_EQ(kernel::IbDestroyCep(client.al(), {{active}}), Status::SUCCESS);
  active = 0;
  abi::CepGetEventOut rej{};
  ASSERT_TRUE(NextCepEvent(client, passive, &rej));
  ASSERT_EQ(rej.event, abi::CepEventType::REJ_RECEIVED);
  EXPECT_EQ(CmMsg(rej)[8] >> 6, 1);  // MessageRejected: REP
  EXPECT_EQ(RejReason(rej), 28);
  DestroyAll(client);
  ExpectNoCepLeft();
}

TEST_F(CmReject, ReqOfAnEstablishedConnectionIsStale) {
  Client& client = *main_client;
  ASSERT_NO_FATAL_FAILURE(Establish(client));
  // The REQ again: B rejects it as stale and disconnects its side.
  ASSERT_NO_FATAL_FAILURE(ResendReq(client));
  abi::CepGetEventOut rej{};
  ASSERT_TRUE(NextCepEvent(client, active, &rej));
  ASSERT_EQ(rej.event, abi::CepEventType::REJ_RECEIVED);
  EXPECT_EQ(RejReason(rej), 10);  // stale connection
  EXPECT_EQ(NextEventType(client, passive), abi::CepEventType::DREP_RECEIVED);
  EXPECT_EQ(NextEventType(client, active), abi::CepEventType::TIMEWAIT_EXIT);
  EXPECT_EQ(NextEventType(client, passive), abi::CepEventType::TIMEWAIT_EXIT);
  DestroyAll(client);
  ExpectNoCepLeft();
}

TEST_F(CmReject, DestroyingCepsRejectsOrDisconnects) {
  Client& client = *main_client;
  // A REQ the passive consumer drops: REJ(consumer) to the active side.
  ASSERT_NO_FATAL_FAILURE(Request(client, ReqParams(kSvc, 1, 2)));
  EXPECT_EQ(kernel::IbDestroyCep(client.al(), {{passive}}), Status::SUCCESS);
  passive = 0;
  abi::CepGetEventOut rej{};
  ASSERT_TRUE(NextCepEvent(client, active, &rej));
  ASSERT_EQ(rej.event, abi::CepEventType::REJ_RECEIVED);
  EXPECT_EQ(RejReason(rej), 28);
  // A REQ whose listen goes before anyone took it: rejected as well.
  ASSERT_EQ(SendReq(client, active, a.qp, ReqParams(kSvc, 1, 2)), Status::SUCCESS);
  while (al::QueryNodeObjectCounts(node->access_layer()).cep < 3) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(kernel::IbDestroyCep(client.al(), {{listen}}), Status::SUCCESS);
  listen = 0;
  ASSERT_TRUE(NextCepEvent(client, active, &rej));
  ASSERT_EQ(rej.event, abi::CepEventType::REJ_RECEIVED);
  EXPECT_EQ(RejReason(rej), 28);
  EXPECT_EQ(kernel::IbDestroyCep(client.al(), {{active}}), Status::SUCCESS);
  active = 0;
  ExpectNoCepLeft();

  // An established connection whose active CEP goes: the peer gets the DREQ.
  ASSERT_NO_FATAL_FAILURE(Establish(client));
  EXPECT_EQ(kernel::IbDestroyCep(client.al(), {{active}}), Status::SUCCESS);
  active = 0;
  ASSERT_EQ(NextEventType(client, passive), abi::CepEventType::DREQ_RECEIVED);
  ASSERT_EQ(kernel::IbCepSendDrep(client.al(), {{passive}, 0, 0}, {}), Status::SUCCESS);
  EXPECT_EQ(NextEventType(client, passive), abi::CepEventType::TIMEWAIT_EXIT);
  DestroyAll(client);
  ExpectNoCepLeft();
}

TEST_F(CmReject, AClientsCleanupDisconnectsItsConnections) {
  Client& client = *main_client;
  // The passive side belongs to a second client that goes away with the connection up.
  Side b2;
  auto other = std::make_unique<Client>(node->node());
  ASSERT_NO_FATAL_FAILURE(other->Build(node->ca_guids()[1], 2, &b2));
  ASSERT_NO_FATAL_FAILURE(InitQp(*other, b2));
  const uint64_t listen = CreateCep(*other, 0x21);
  ASSERT_EQ(Listen(*other, listen, kSvc), Status::SUCCESS);
  const uint64_t active = CreateCep(client, 0x22);
  ASSERT_EQ(SendReq(client, active, a.qp, ReqParams(kSvc, 1, 2)), Status::SUCCESS);
  abi::CepGetEventOut req{};
  ASSERT_TRUE(NextCepEvent(*other, listen, &req));
  ASSERT_EQ(SendRep(*other, req.new_cep.value, b2.qp, RepParams()), Status::SUCCESS);
  ASSERT_EQ(NextEventType(client, active), abi::CepEventType::REP_RECEIVED);
  ASSERT_EQ(kernel::IbCepSendRtu(client.al(), {{active}, 0, 0}, {}), Status::SUCCESS);
  ASSERT_EQ(NextEventType(*other, req.new_cep.value), abi::CepEventType::RTU_RECEIVED);
  other.reset();  // IbReleaseAl: the file's cleanup destroys its CEPs
  ASSERT_EQ(NextEventType(client, active), abi::CepEventType::DREQ_RECEIVED);
  ASSERT_EQ(kernel::IbCepSendDrep(client.al(), {{active}, 0, 0}, {}), Status::SUCCESS);
  EXPECT_EQ(NextEventType(client, active), abi::CepEventType::TIMEWAIT_EXIT);
  EXPECT_EQ(kernel::IbDestroyCep(client.al(), {{active}}), Status::SUCCESS);
  ExpectNoCepLeft();
}

}  // namespace
}  // namespace softib::testing
