// GSI redirection and MAD QPs between the two CAs of one node (back to back, LIDs 1 and 2):
// a vendor-class agent on CA B's QP1 answers requests with "redirect required" and a
// ClassPortInfo naming a MAD QP of CA B, whose own agent serves them; the requester on CA A
// sees only the final response, and later requests go straight to the MAD QP.
#include "mad_client.h"

namespace softib::testing {
namespace {

constexpr uint8_t kClass = 0x31;  // vendor range 2: OUI header, RMPP allowed
// A MAD QP that answers QP1 needs QP1's Q_Key: a send's controlled Q_Key (high bit set)
// is replaced by the sending QP's own (IBA 10.2.5).
constexpr uint32_t kGsiQkey = 0x80010000;
constexpr uint32_t kOwnQkey = 0x4D414451;
constexpr uint16_t kAttr = 0x0020;
constexpr uint16_t kClassPortInfo = 0x0001;

std::vector<uint8_t> Request(uint64_t tid, uint8_t fill = 0xA5) {
  auto m = MakeMad(kClass, 0x01, tid, kAttr, fill);
  std::fill(m.begin() + 24, m.begin() + 36, 0);
  m[37] = 0x14;  // OUI 00:14:05
  m[38] = 0x05;
  m[39] = 0x00;
  return m;
}

struct Redirect {
  uint16_t lid = 2;
  uint32_t qp = 0;
  uint32_t qkey = kGsiQkey;
  uint16_t pkey = 0xFFFF;
  bool gid = false;
};

// The response `request` gets from the redirecting agent: GetResp, "redirect required",
// with ClassPortInfo (or the request's own attribute and no data when `info` is false).
std::vector<uint8_t> RedirectResponse(std::vector<uint8_t> m, const Redirect& r, bool info) {
  m[3] = 0x81;
  m[5] = 0x02;  // Status bit 1: redirect required
  std::fill(m.begin() + kVendorRmppHeader, m.end(), 0);
  if (!info) return m;
  m[16] = kClassPortInfo >> 8;
  m[17] = kClassPortInfo & 0xFF;
  uint8_t* cpi = m.data() + kVendorRmppHeader;
  cpi[0] = 1;  // BaseVersion
  cpi[1] = 1;  // ClassVersion
  if (r.gid) {
    cpi[8] = 0xFE;  // fe80::2
    cpi[9] = 0x80;
    cpi[23] = 2;
  }
  cpi[25] = 0x00;  // SL 0
  cpi[28] = static_cast<uint8_t>(r.lid >> 8);
  cpi[29] = static_cast<uint8_t>(r.lid);
  cpi[30] = static_cast<uint8_t>(r.pkey >> 8);
  cpi[31] = static_cast<uint8_t>(r.pkey);
  cpi[33] = static_cast<uint8_t>(r.qp >> 16);
  cpi[34] = static_cast<uint8_t>(r.qp >> 8);
  cpi[35] = static_cast<uint8_t>(r.qp);
  for (int i = 0; i < 4; ++i) cpi[36 + i] = static_cast<uint8_t>(r.qkey >> (24 - 8 * i));
  return m;
}

// Nothing queued for `svc` (the direct call answers CANCELED at once then).
uint16_t AttributeOf(const std::vector<uint8_t>& m) {
  return static_cast<uint16_t>(m[16] << 8 | m[17]);
}

bool Quiet(Client& client, uint64_t svc) {
  abi::GetMadEventOut out{};
  std::vector<uint8_t> mad(256);
  return kernel::IbGetMadEvent(client.al(), {{svc}}, out, mad) == Status::CANCELED;
}

struct Rig {
  explicit Rig(const char* name) : node(BootDefault(name)), client(node->node()) {}

  // CA A's GSI alias (the requester) and CA B's (the redirecting agent), and CA B's MAD QP.
  void Open(abi::MadSvcType type = abi::MadSvcType::DEFAULT) {
    ASSERT_NO_FATAL_FAILURE(
        OpenMadEnd(client, node->ca_guids()[0], 1, abi::QpType::GSI_ALIAS, &requester));
    ASSERT_NO_FATAL_FAILURE(
        OpenMadEnd(client, node->ca_guids()[1], 2, abi::QpType::GSI_ALIAS, &agent));
    ASSERT_EQ(RegSvc(client, &requester, SvcParams(kClass, {}, type)), Status::SUCCESS);
    ASSERT_EQ(RegSvc(client, &agent, SvcParams(kClass, {0x01, 0x02}, type)), Status::SUCCESS);
    ASSERT_NO_FATAL_FAILURE(OpenMadQp(agent, kGsiQkey, &mad_qp, &mad_qpn));
    ASSERT_EQ(RegSvc(client, &mad_qp, SvcParams(kClass, {0x01, 0x02}, type)), Status::SUCCESS);
  }

  // A MAD QP on the port 1 of `base`'s CA with Q_Key `qkey`, brought to RTS.
  void OpenMadQp(const MadEnd& base, uint32_t qkey, MadEnd* end, uint32_t* qpn) {
    *end = base;
    abi::AllocPdOut pd{};
    ASSERT_EQ(client.AllocPd({{base.ca}, abi::PdType::NORMAL, 0, 0}, &pd), Status::SUCCESS);
    end->pd = pd.pd.value;
    abi::CreateQpIn in{};
    in.pd.value = end->pd;
    in.send_cq.value = base.cq;
    in.recv_cq.value = base.cq;
    in.params.qp_type = abi::QpType::MAD;
    in.params.caps = {16, 16, 1, 1, 0, 0};
    abi::CreateQpOut out{};
    ASSERT_EQ(client.CreateQp(in, &out), Status::SUCCESS);
    end->qp = out.qp.value;
    *qpn = out.qp_num;
    EXPECT_GT(*qpn, 1u);
    ASSERT_NO_FATAL_FAILURE(BringUpUd(client, end->qp, qkey));
  }

  // The requester's request to LID 2's QP1; its send id.
  uint64_t Ask(uint64_t tid, uint32_t timeout_ms = 2000, uint32_t retries = 2) {
    uint64_t id = 0;
    EXPECT_EQ(SendMadTo(client, SendTo(requester.svc, 2, 256, timeout_ms, retries, true, tid),
                        Request(tid), &id),
              Status::SUCCESS);
    return id;
  }

  // `svc` takes the next request and answers it with `response` (to LID 1's QP1).
  void Answer(uint64_t svc, std::vector<uint8_t> response) {
    ASSERT_EQ(
        SendMadTo(client, SendTo(svc, 1, static_cast<uint32_t>(response.size()), 0, 0, false, 0),
                  response, nullptr),
        Status::SUCCESS);
    MadEvent sent;
    ASSERT_TRUE(NextMadEvent(client, svc, &sent));
    EXPECT_EQ(sent.out.event.kind, abi::MadEventKind::SEND_COMPLETED);
    EXPECT_EQ(sent.out.event.status, abi::WcStatus::SUCCESS);
  }

  // The agent on `svc` receives a request of `attribute`; returns it.
  std::vector<uint8_t> Receive(uint64_t svc, uint16_t attribute, uint32_t from_qpn = 1) {
    MadEvent got;
    EXPECT_TRUE(NextMadEvent(client, svc, &got, 64 * 1024));
    EXPECT_EQ(got.out.event.kind, abi::MadEventKind::RECEIVED);
    EXPECT_EQ(got.out.event.remote_lid, 1u);
    EXPECT_EQ(got.out.event.remote_qpn, from_qpn);
    if (got.mad.size() < 24) return std::vector<uint8_t>(256, 0);
    EXPECT_EQ(AttributeOf(got.mad), attribute);
    return got.mad;
  }

  // The MAD QP's agent answers `request` with GetResp carrying `mark`.
  void Serve(const std::vector<uint8_t>& request, uint8_t mark) {
    auto response = request;
    response[3] = 0x81;
    response[100] = mark;
    Answer(mad_qp.svc, response);
  }

  // The requester's final response to `send_id` (from the MAD QP) then its completion.
  void ExpectAnswered(uint64_t send_id, uint8_t mark, uint32_t from_qpn) {
    MadEvent answer;
    ASSERT_TRUE(NextMadEvent(client, requester.svc, &answer, 64 * 1024));
    EXPECT_EQ(answer.out.event.kind, abi::MadEventKind::RECEIVED);
    EXPECT_EQ(answer.out.event.send_id, send_id);
    EXPECT_EQ(answer.out.event.remote_qpn, from_qpn);
    ASSERT_GE(answer.mad.size(), 256u);
    EXPECT_EQ(answer.mad[5], 0);  // no redirect status: the final answer
    EXPECT_EQ(answer.mad[100], mark);
    ExpectCompleted(send_id, abi::WcStatus::SUCCESS);
  }

  void ExpectCompleted(uint64_t send_id, abi::WcStatus status) {
    MadEvent done;
    ASSERT_TRUE(NextMadEvent(client, requester.svc, &done));
    EXPECT_EQ(done.out.event.kind, abi::MadEventKind::SEND_COMPLETED);
    EXPECT_EQ(done.out.event.status, status);
    EXPECT_EQ(done.out.event.send_id, send_id);
  }

  // A request redirected by QP1's agent (with ClassPortInfo) and answered from the MAD QP:
  // the same request, same TID, reaches it, and the requester sees only its answer.
  void RedirectedExchange(uint64_t tid, uint8_t mark) {
    const uint64_t id = Ask(tid);
    auto request = Receive(agent.svc, kAttr);
    ASSERT_NO_FATAL_FAILURE(Answer(agent.svc, RedirectResponse(request, ToMadQp(), true)));
    auto resent = Receive(mad_qp.svc, kAttr);
    EXPECT_EQ(TidOf(resent), TidOf(request));
    EXPECT_TRUE(std::equal(request.begin() + 24, request.end(), resent.begin() + 24));
    ASSERT_NO_FATAL_FAILURE(Serve(resent, mark));
    ASSERT_NO_FATAL_FAILURE(ExpectAnswered(id, mark, mad_qpn));
  }

  Redirect ToMadQp() const {
    Redirect r;
    r.qp = mad_qpn;
    return r;
  }

  std::unique_ptr<stack::NodeStack> node;
  Client client;
  MadEnd requester, agent, mad_qp;
  uint32_t mad_qpn = 0;
};

TEST(MadRedirect, RequestFollowsTheRedirectToTheMadQpAndLaterRequestsGoThereDirectly) {
  Rig rig("mad-redir-cpi");
  ASSERT_NO_FATAL_FAILURE(rig.Open());
  ASSERT_NO_FATAL_FAILURE(rig.RedirectedExchange(0x1001, 0x5A));
  EXPECT_TRUE(Quiet(rig.client, rig.requester.svc));  // the redirect itself never showed

  // The second request goes straight to the MAD QP: QP1's agent sees nothing.
  const uint64_t second = rig.Ask(0x1002);
  auto direct = rig.Receive(rig.mad_qp.svc, kAttr);
  EXPECT_EQ(TidOf(direct) & 0xFFFFFFFF, 0x1002u);
  ASSERT_NO_FATAL_FAILURE(rig.Serve(direct, 0x6B));
  ASSERT_NO_FATAL_FAILURE(rig.ExpectAnswered(second, 0x6B, rig.mad_qpn));
  EXPECT_TRUE(Quiet(rig.client, rig.agent.svc));

  // The MAD QP is busy while its service is registered, and reports its type and state.
  abi::QueryQpOut query{};
  ASSERT_EQ(rig.client.QueryQp({{rig.mad_qp.qp}}, &query), Status::SUCCESS);
  EXPECT_EQ(query.attributes.qp_type, abi::QpType::MAD);
  EXPECT_EQ(query.attributes.state, abi::QpState::RTS);
  EXPECT_EQ(query.attributes.qp_num, rig.mad_qpn);
  EXPECT_EQ(kernel::IbDestroyQp(rig.client.al(), {{rig.mad_qp.qp}}), Status::RESOURCE_BUSY);
  uint64_t smp = 0;
  EXPECT_EQ(RegSvc(rig.client, &rig.mad_qp, SvcParams(0x81, {}), &smp), Status::INVALID_SETTING);
  ASSERT_EQ(kernel::IbDeregMadSvc(rig.client.al(), {{rig.mad_qp.svc}}), Status::SUCCESS);
  EXPECT_EQ(kernel::IbDestroyQp(rig.client.al(), {{rig.mad_qp.qp}}), Status::SUCCESS);
}

TEST(MadRedirect, RedirectWithoutClassPortInfoIsFollowedByTheAlsGetClassPortInfo) {
  Rig rig("mad-redir-get");
  ASSERT_NO_FATAL_FAILURE(rig.Open());
  const uint64_t id = rig.Ask(0x2001);
  auto request = rig.Receive(rig.agent.svc, kAttr);
  ASSERT_NO_FATAL_FAILURE(
      rig.Answer(rig.agent.svc, RedirectResponse(request, rig.ToMadQp(), false)));
  // The AL asks the same agent for its ClassPortInfo: Get, same class and OUI, the agent's
  // id in the TID's high half.
  auto query = rig.Receive(rig.agent.svc, kClassPortInfo);
  EXPECT_EQ(query[1], kClass);
  EXPECT_EQ(query[3], 0x01);
  EXPECT_EQ(query[38], 0x05);
  EXPECT_EQ(TidOf(query) >> 32, TidOf(request) >> 32);
  EXPECT_NE(TidOf(query), TidOf(request));
  auto info = RedirectResponse(query, rig.ToMadQp(), true);
  info[5] = 0;  // a plain GetResp(ClassPortInfo)
  ASSERT_NO_FATAL_FAILURE(rig.Answer(rig.agent.svc, info));
  auto resent = rig.Receive(rig.mad_qp.svc, kAttr);
  EXPECT_EQ(TidOf(resent), TidOf(request));
  ASSERT_NO_FATAL_FAILURE(rig.Serve(resent, 0x77));
  ASSERT_NO_FATAL_FAILURE(rig.ExpectAnswered(id, 0x77, rig.mad_qpn));
}

TEST(MadRedirect, MalformedRedirectsCompleteTheSendBadResponseAndAreNotRemembered) {
  Rig rig("mad-redir-bad");
  ASSERT_NO_FATAL_FAILURE(rig.Open());
  Redirect qp1_wrong_qkey = rig.ToMadQp();
  qp1_wrong_qkey.qp = 1;
  qp1_wrong_qkey.qkey = kOwnQkey;
  Redirect qp0 = rig.ToMadQp();
  qp0.qp = 0;
  Redirect nowhere = rig.ToMadQp();
  nowhere.lid = 0;
  Redirect gid_only = nowhere;
  gid_only.gid = true;
  Redirect unknown_pkey = rig.ToMadQp();
  unknown_pkey.pkey = 0x1234;
  uint64_t tid = 0x3000;
  for (const Redirect& bad : {qp1_wrong_qkey, qp0, nowhere, gid_only, unknown_pkey}) {
    const uint64_t id = rig.Ask(++tid);
    auto request = rig.Receive(rig.agent.svc, kAttr);
    ASSERT_NO_FATAL_FAILURE(rig.Answer(rig.agent.svc, RedirectResponse(request, bad, true)));
    ASSERT_NO_FATAL_FAILURE(rig.ExpectCompleted(id, abi::WcStatus::BAD_RESPONSE_ERR));
    EXPECT_EQ(kernel::IbCancelMad(rig.client.al(), {{rig.requester.svc}, id}), Status::NOT_FOUND);
  }
  EXPECT_TRUE(Quiet(rig.client, rig.mad_qp.svc));
  EXPECT_TRUE(Quiet(rig.client, rig.requester.svc));

  // A loop: QP1 redirects to itself (valid each time) until the AL gives up.
  Redirect self;
  self.qp = 1;
  self.qkey = 0x80010000;
  const uint64_t id = rig.Ask(++tid);
  int hops = 0;
  for (; hops < 5; ++hops) {
    auto request = rig.Receive(rig.agent.svc, kAttr);
    ASSERT_NO_FATAL_FAILURE(rig.Answer(rig.agent.svc, RedirectResponse(request, self, true)));
  }
  ASSERT_NO_FATAL_FAILURE(rig.ExpectCompleted(id, abi::WcStatus::BAD_RESPONSE_ERR));
  EXPECT_TRUE(Quiet(rig.client, rig.agent.svc));  // four re-sends, then no more

  // Nothing was remembered: the next request goes to QP1 again and is answered there.
  const uint64_t plain = rig.Ask(++tid);
  auto request = rig.Receive(rig.agent.svc, kAttr);
  auto response = request;
  response[3] = 0x81;
  response[100] = 0x42;
  ASSERT_NO_FATAL_FAILURE(rig.Answer(rig.agent.svc, response));
  ASSERT_NO_FATAL_FAILURE(rig.ExpectAnswered(plain, 0x42, 1));
}

TEST(MadRedirect, TimeoutAtTheRedirectedQpForgetsItAndRetriesQp1) {
  Rig rig("mad-redir-timeout");
  ASSERT_NO_FATAL_FAILURE(rig.Open());
  ASSERT_NO_FATAL_FAILURE(rig.RedirectedExchange(0x4001, 1));

  // The MAD QP's agent stops answering: the cached request times out there (50 ms), its
  // retry goes to QP1, whose agent answers it itself.
  const uint64_t second = rig.Ask(0x4002, 50, 1);
  auto unanswered = rig.Receive(rig.mad_qp.svc, kAttr);
  auto retried = rig.Receive(rig.agent.svc, kAttr);
  EXPECT_EQ(TidOf(retried), TidOf(unanswered));
  auto response = retried;
  response[3] = 0x81;
  response[100] = 2;
  ASSERT_NO_FATAL_FAILURE(rig.Answer(rig.agent.svc, response));
  ASSERT_NO_FATAL_FAILURE(rig.ExpectAnswered(second, 2, 1));

  // Sends from the MAD QP time out and retry like QP1's: one send and two retries reach an
  // agent on CA A that never answers, then RESP_TIMEOUT_ERR.
  constexpr uint8_t kSilentClass = 0x32;
  uint64_t silent = 0;
  ASSERT_EQ(RegSvc(rig.client, &rig.requester, SvcParams(kSilentClass, {0x01}), &silent),
            Status::SUCCESS);
  auto lost = Request(0x4003);
  lost[1] = kSilentClass;
  uint64_t id = 0;
  ASSERT_EQ(SendMadTo(rig.client, SendTo(rig.mad_qp.svc, 1, 256, 30, 2, true, 9), lost, &id),
            Status::SUCCESS);
  for (int copy = 0; copy < 3; ++copy) {
    MadEvent got;
    ASSERT_TRUE(NextMadEvent(rig.client, silent, &got));
    EXPECT_EQ(got.out.event.remote_qpn, rig.mad_qpn);
    EXPECT_EQ(TidOf(got.mad) & 0xFFFFFFFF, 0x4003u);
  }
  MadEvent done;
  ASSERT_TRUE(NextMadEvent(rig.client, rig.mad_qp.svc, &done));
  EXPECT_EQ(done.out.event.kind, abi::MadEventKind::SEND_COMPLETED);
  EXPECT_EQ(done.out.event.status, abi::WcStatus::RESP_TIMEOUT_ERR);
  EXPECT_EQ(done.out.event.send_id, id);
  EXPECT_TRUE(Quiet(rig.client, silent));
}

TEST(MadRedirect, RmppTransfersFollowTheRedirectAndRunOverTheMadQp) {
  Rig rig("mad-redir-rmpp");
  ASSERT_NO_FATAL_FAILURE(rig.Open(abi::MadSvcType::RMPP));
  // A 10 KiB request: reassembled by QP1's agent, which answers with a single-MAD redirect.
  constexpr uint32_t kData = 10 * 1024;
  auto transfer = Request(0x5001);
  transfer.resize(kVendorRmppHeader + kData);
  for (uint32_t i = 0; i < kData; ++i)
    transfer[kVendorRmppHeader + i] = static_cast<uint8_t>(i * 7 + 3);
  abi::SendMadIn in =
      SendTo(rig.requester.svc, 2, static_cast<uint32_t>(transfer.size()), 2000, 3, true, 0x5001);
  in.params.rmpp_version = 1;
  uint64_t id = 0;
  ASSERT_EQ(SendMadTo(rig.client, in, transfer, &id), Status::SUCCESS);
  auto request = rig.Receive(rig.agent.svc, kAttr);
  ASSERT_EQ(request.size(), transfer.size());
  auto redirect = RedirectResponse(std::vector<uint8_t>(request.begin(), request.begin() + 256),
                                   rig.ToMadQp(), true);
  std::fill(redirect.begin() + 24, redirect.begin() + 36, 0);  // not RMPP-active
  ASSERT_NO_FATAL_FAILURE(rig.Answer(rig.agent.svc, redirect));
  // The whole transfer again, to the MAD QP, and a 10 KiB response from it.
  auto resent = rig.Receive(rig.mad_qp.svc, kAttr);
  ASSERT_EQ(resent.size(), transfer.size());
  EXPECT_TRUE(std::equal(transfer.begin() + kVendorRmppHeader, transfer.end(),
                         resent.begin() + kVendorRmppHeader));
  auto response = resent;
  response[3] = 0x81;
  std::fill(response.begin() + 24, response.begin() + 36, 0);
  for (uint32_t i = 0; i < kData; ++i)
    response[kVendorRmppHeader + i] = static_cast<uint8_t>(i * 11 + 5);
  abi::SendMadIn back =
      SendTo(rig.mad_qp.svc, 1, static_cast<uint32_t>(response.size()), 2000, 3, false, 0);
  back.params.rmpp_version = 1;
  ASSERT_EQ(SendMadTo(rig.client, back, response, nullptr), Status::SUCCESS);
  MadEvent sent;
  ASSERT_TRUE(NextMadEvent(rig.client, rig.mad_qp.svc, &sent));
  EXPECT_EQ(sent.out.event.status, abi::WcStatus::SUCCESS);
  MadEvent answer;
  ASSERT_TRUE(NextMadEvent(rig.client, rig.requester.svc, &answer, 64 * 1024));
  EXPECT_EQ(answer.out.event.kind, abi::MadEventKind::RECEIVED);
  EXPECT_EQ(answer.out.event.send_id, id);
  EXPECT_EQ(answer.out.event.remote_qpn, rig.mad_qpn);
  ASSERT_EQ(answer.mad.size(), response.size());
  EXPECT_TRUE(std::equal(response.begin() + kVendorRmppHeader, response.end(),
                         answer.mad.begin() + kVendorRmppHeader));
  ASSERT_NO_FATAL_FAILURE(rig.ExpectCompleted(id, abi::WcStatus::SUCCESS));
}

TEST(MadRedirect, MadQpsWithTheirOwnQkeyExchangeRequestAndResponse) {
  Rig rig("mad-qp-qkey");
  ASSERT_NO_FATAL_FAILURE(rig.Open());
  MadEnd a, b;
  uint32_t a_qpn = 0, b_qpn = 0;
  ASSERT_NO_FATAL_FAILURE(rig.OpenMadQp(rig.requester, kOwnQkey, &a, &a_qpn));
  ASSERT_NO_FATAL_FAILURE(rig.OpenMadQp(rig.agent, kOwnQkey, &b, &b_qpn));
  ASSERT_EQ(RegSvc(rig.client, &a, SvcParams(kClass, {})), Status::SUCCESS);
  ASSERT_EQ(RegSvc(rig.client, &b, SvcParams(kClass, {0x01})), Status::SUCCESS);
  abi::SendMadIn in = SendTo(a.svc, 2, 256, 2000, 1, true, 1);
  in.params.remote_qpn = b_qpn;
  in.params.remote_qkey = htobe32(kOwnQkey);
  uint64_t id = 0;
  ASSERT_EQ(SendMadTo(rig.client, in, Request(0x6001), &id), Status::SUCCESS);
  MadEvent got;
  ASSERT_TRUE(NextMadEvent(rig.client, b.svc, &got));
  EXPECT_EQ(got.out.event.remote_qpn, a_qpn);
  auto response = got.mad;
  response[3] = 0x81;
  response[100] = 0x33;
  abi::SendMadIn back = SendTo(b.svc, 1, 256, 0, 0, false, 0);
  back.params.remote_qpn = a_qpn;
  back.params.remote_qkey = htobe32(kOwnQkey);
  ASSERT_EQ(SendMadTo(rig.client, back, response, nullptr), Status::SUCCESS);
  MadEvent sent;
  ASSERT_TRUE(NextMadEvent(rig.client, b.svc, &sent));
  EXPECT_EQ(sent.out.event.kind, abi::MadEventKind::SEND_COMPLETED);
  MadEvent answer;
  ASSERT_TRUE(NextMadEvent(rig.client, a.svc, &answer));
  EXPECT_EQ(answer.out.event.kind, abi::MadEventKind::RECEIVED);
  EXPECT_EQ(answer.out.event.send_id, id);
  EXPECT_EQ(answer.out.event.remote_qpn, b_qpn);
  EXPECT_EQ(answer.mad[100], 0x33);
  // A MAD with the wrong Q_Key never reaches the QP (the HCA checks it): no service sees it.
  in.params.remote_qkey = htobe32(kOwnQkey + 1);
  in.params.response_expected = 0;
  ASSERT_EQ(SendMadTo(rig.client, in, Request(0x6002), nullptr), Status::SUCCESS);
  // Then the right Q_Key on the same path: B's next MAD is this one, nothing before it.
  in.params.remote_qkey = htobe32(kOwnQkey);
  ASSERT_EQ(SendMadTo(rig.client, in, Request(0x6003), nullptr), Status::SUCCESS);
  MadEvent done;
  ASSERT_TRUE(NextMadEvent(rig.client, a.svc, &done));  // the first send's completion
  ASSERT_TRUE(NextMadEvent(rig.client, a.svc, &done));  // the second's, on the wire
  EXPECT_EQ(done.out.event.status, abi::WcStatus::SUCCESS);
  ASSERT_TRUE(NextMadEvent(rig.client, a.svc, &done));  // the sentinel's
  MadEvent sentinel;
  ASSERT_TRUE(NextMadEvent(rig.client, b.svc, &sentinel));
  EXPECT_EQ(sentinel.out.event.kind, abi::MadEventKind::RECEIVED);
  EXPECT_EQ(TidOf(sentinel.mad) & 0xFFFFFFFF, 0x6003u);
  EXPECT_TRUE(Quiet(rig.client, b.svc));
}

}  // namespace
}  // namespace softib::testing
