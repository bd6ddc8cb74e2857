// GSI MAD services between the two CAs of one node (back to back, LIDs 1 and 2): a vendor
// class request and its response matched by TID, timeouts with retries, cancel, the
// registration rules and the objects' lifetimes.
#include "mad_client.h"
#include "runtime/al/src/al_internal.h"
#include "runtime/al/src/special_qp.h"

namespace softib::testing {
namespace {

constexpr uint8_t kVendorClass = 0x09;  // vendor class range 1, no RMPP

struct GsiPair {
  explicit GsiPair(const char* name, bool pend = false) {
    PendMode mode(pend);
    node = BootDefault(name);
  }
  void Open(Client& client) {
    ASSERT_NO_FATAL_FAILURE(
        OpenMadEnd(client, node->ca_guids()[0], 1, abi::QpType::GSI_ALIAS, &requester));
    ASSERT_NO_FATAL_FAILURE(
        OpenMadEnd(client, node->ca_guids()[1], 2, abi::QpType::GSI_ALIAS, &responder));
  }
  std::unique_ptr<stack::NodeStack> node;
  MadEnd requester, responder;
};

// A request and its response through the special QPs' send path: the CA completing CI IRPs
// inline, or (pend mode) later from its DPC.
void RequestAndResponse(GsiPair& pair) {
  ASSERT_TRUE(pair.node);
  Client client(pair.node->node());
  ASSERT_NO_FATAL_FAILURE(pair.Open(client));
  ASSERT_EQ(RegSvc(client, &pair.requester, SvcParams(kVendorClass, {})), Status::SUCCESS);
  ASSERT_EQ(RegSvc(client, &pair.responder, SvcParams(kVendorClass, {0x01, 0x02})),
            Status::SUCCESS);

  const auto request = MakeMad(kVendorClass, 0x01, 0x0000000012345678, 0x0010, 0xA5);
  uint64_t send_id = 0;
  ASSERT_EQ(SendMadTo(client, SendTo(pair.requester.svc, 2, 256, 2000, 3, true, 0xC0DE), request,
                      &send_id),
            Status::SUCCESS);
  EXPECT_NE(send_id, 0u);

  MadEvent got;
  ASSERT_TRUE(NextMadEvent(client, pair.responder.svc, &got));
  EXPECT_EQ(got.out.event.kind, abi::MadEventKind::RECEIVED);
  EXPECT_EQ(got.out.event.send_id, 0u);  // unsolicited
  EXPECT_EQ(got.out.event.remote_lid, 1u);
  EXPECT_EQ(got.out.event.remote_qpn, 1u);
  ASSERT_EQ(got.mad.size(), 256u);
  // The AL put its agent id in the high half of the TID; the low half is the client's.
  const uint64_t tid = TidOf(got.mad);
  EXPECT_EQ(tid & 0xFFFFFFFF, 0x12345678u);
  EXPECT_NE(tid >> 32, 0u);
  EXPECT_TRUE(std::equal(request.begin() + 16, request.end(), got.mad.begin() + 16));

  // The response: GetResp with the request's TID, back to where it came from.
  auto response = got.mad;
  response[3] = 0x81;
  response[100] = 0x5A;
  ASSERT_EQ(
      SendMadTo(client, SendTo(pair.responder.svc, 1, 256, 0, 0, false, 7), response, nullptr),
      Status::SUCCESS);
  MadEvent sent;
  ASSERT_TRUE(NextMadEvent(client, pair.responder.svc, &sent));
  EXPECT_EQ(sent.out.event.kind, abi::MadEventKind::SEND_COMPLETED);
  EXPECT_EQ(sent.out.event.status, abi::WcStatus::SUCCESS);
  EXPECT_EQ(sent.out.event.send_context, 7u);

  MadEvent answer;
  ASSERT_TRUE(NextMadEvent(client, pair.requester.svc, &answer));
  EXPECT_EQ(answer.out.event.kind, abi::MadEventKind::RECEIVED);
  EXPECT_EQ(answer.out.event.send_id, send_id);
  EXPECT_EQ(answer.out.event.send_context, 0xC0DEu);
  EXPECT_EQ(answer.out.event.remote_lid, 2u);
  ASSERT_EQ(answer.mad.size(), 256u);
  EXPECT_EQ(answer.mad[3], 0x81);
  EXPECT_EQ(answer.mad[100], 0x5A);
  MadEvent done;
  ASSERT_TRUE(NextMadEvent(client, pair.requester.svc, &done));
  EXPECT_EQ(done.out.event.kind, abi::MadEventKind::SEND_COMPLETED);
  EXPECT_EQ(done.out.event.status, abi::WcStatus::SUCCESS);
  EXPECT_EQ(done.out.event.send_id, send_id);
}

TEST(MadGsi, RequestReachesTheClassAgentAndTheResponseItsSenderByTid) {
  GsiPair pair("mad-gsi-rr");
  RequestAndResponse(pair);
}

TEST(MadGsi, RequestAndResponseWhileTheCaPendsEveryCiIrp) {
  GsiPair pair("mad-gsi-pend", true);
  RequestAndResponse(pair);
}

// The special QP's AHs (issue 17): the first MAD to an address has its AH made by a
// CiCreateAh IRP (the send waits in its slot for the IRP's completion), later ones to the
// same address reuse it, another address (here another SL) gets one of its own; an address
// the HCA would refuse (DLID 0) is refused by the send itself, with no IRP.
void SendsReuseTheirAddressesAh(GsiPair& pair) {
  ASSERT_TRUE(pair.node);
  Client client(pair.node->node());
  ASSERT_NO_FATAL_FAILURE(pair.Open(client));
  ASSERT_EQ(RegSvc(client, &pair.requester, SvcParams(kVendorClass, {})), Status::SUCCESS);
  ASSERT_EQ(RegSvc(client, &pair.responder, SvcParams(kVendorClass, {0x01})), Status::SUCCESS);
  std::shared_ptr<al::AlCa> ca = pair.node->access_layer()->FindCa(pair.node->ca_guids()[0]);
  ASSERT_TRUE(ca);
  ASSERT_EQ(ca->special_qps.size(), 2u);
  al::SpecialQp* qp1 = ca->special_qps[1].get();
  ASSERT_TRUE(qp1->gsi());
  const uint64_t before = qp1->ahs_made.load();
  for (uint64_t i = 1; i <= 5; ++i) {
    abi::SendMadIn in = SendTo(pair.requester.svc, 2, 256, 0, 0, false, i);
    in.params.remote_sl = i >= 4 ? 3 : 0;
    ASSERT_EQ(SendMadTo(client, in, MakeMad(kVendorClass, 0x01, 0x100 + i, 0x10), nullptr),
              Status::SUCCESS);
    MadEvent sent;
    ASSERT_TRUE(NextMadEvent(client, pair.requester.svc, &sent));
    EXPECT_EQ(sent.out.event.kind, abi::MadEventKind::SEND_COMPLETED);
    EXPECT_EQ(sent.out.event.status, abi::WcStatus::SUCCESS);
    EXPECT_EQ(sent.out.event.send_context, i);
    MadEvent got;
    ASSERT_TRUE(NextMadEvent(client, pair.responder.svc, &got));
    EXPECT_EQ(got.out.event.kind, abi::MadEventKind::RECEIVED);
    EXPECT_EQ(TidOf(got.mad) & 0xFFFFFFFF, 0x100 + i);
  }
  EXPECT_EQ(qp1->ahs_made.load() - before, 2u);  // LID 2 at SL 0, then at SL 3
  EXPECT_EQ(SendMadTo(client, SendTo(pair.requester.svc, 0, 256, 0, 0, false, 9),
                      MakeMad(kVendorClass, 0x01, 0x200, 0x10), nullptr),
            Status::INVALID_SETTING);
  EXPECT_EQ(qp1->ahs_made.load() - before, 2u);
}

TEST(MadGsi, SendsToOneAddressShareOneAh) {
  GsiPair pair("mad-gsi-ah");
  SendsReuseTheirAddressesAh(pair);
}

TEST(MadGsi, SendsToOneAddressShareOneAhWhileTheCaPendsEveryCiIrp) {
  GsiPair pair("mad-gsi-ah-pend", true);
  SendsReuseTheirAddressesAh(pair);
}

TEST(MadGsi, UnansweredRequestIsSentOncePlusItsRetriesThenTimesOut) {
  GsiPair pair("mad-gsi-timeout");
  ASSERT_TRUE(pair.node);
  Client client(pair.node->node());
  ASSERT_NO_FATAL_FAILURE(pair.Open(client));
  ASSERT_EQ(RegSvc(client, &pair.requester, SvcParams(kVendorClass, {})), Status::SUCCESS);
  ASSERT_EQ(RegSvc(client, &pair.responder, SvcParams(kVendorClass, {0x01})), Status::SUCCESS);
  uint64_t send_id = 0;
  ASSERT_EQ(SendMadTo(client, SendTo(pair.requester.svc, 2, 256, 20, 2, true, 1),
                      MakeMad(kVendorClass, 0x01, 0x77, 0x10), &send_id),
            Status::SUCCESS);
  MadEvent done;
  ASSERT_TRUE(NextMadEvent(client, pair.requester.svc, &done));
  EXPECT_EQ(done.out.event.kind, abi::MadEventKind::SEND_COMPLETED);
  EXPECT_EQ(done.out.event.status, abi::WcStatus::RESP_TIMEOUT_ERR);
  EXPECT_EQ(done.out.event.send_id, send_id);
  // The responder saw the request three times, with the same TID each time.
  uint64_t first_tid = 0;
  for (int i = 0; i < 3; ++i) {
    MadEvent copy;
    ASSERT_TRUE(NextMadEvent(client, pair.responder.svc, &copy)) << i;
    EXPECT_EQ(copy.out.event.kind, abi::MadEventKind::RECEIVED);
    if (i == 0) first_tid = TidOf(copy.mad);
    EXPECT_EQ(TidOf(copy.mad), first_tid);
  }
  MadEvent none;
  none.mad.assign(256, 0);
  EXPECT_EQ(kernel::IbGetMadEvent(client.al(), {{pair.responder.svc}}, none.out, none.mad),
            Status::CANCELED);  // nothing more queued
}

TEST(MadGsi, CancelCompletesTheSendCanceledOnce) {
  GsiPair pair("mad-gsi-cancel");
  ASSERT_TRUE(pair.node);
  Client client(pair.node->node());
  ASSERT_NO_FATAL_FAILURE(pair.Open(client));
  ASSERT_EQ(RegSvc(client, &pair.requester, SvcParams(kVendorClass, {})), Status::SUCCESS);
  uint64_t send_id = 0;
  ASSERT_EQ(SendMadTo(client, SendTo(pair.requester.svc, 2, 256, 60000, 0, true, 5),
                      MakeMad(kVendorClass, 0x01, 0x99, 0x10), &send_id),
            Status::SUCCESS);
  ASSERT_EQ(kernel::IbCancelMad(client.al(), {{pair.requester.svc}, send_id}), Status::SUCCESS);
  MadEvent done;
  ASSERT_TRUE(NextMadEvent(client, pair.requester.svc, &done));
  EXPECT_EQ(done.out.event.kind, abi::MadEventKind::SEND_COMPLETED);
  EXPECT_EQ(done.out.event.status, abi::WcStatus::CANCELED);
  EXPECT_EQ(done.out.event.send_context, 5u);
  EXPECT_EQ(kernel::IbCancelMad(client.al(), {{pair.requester.svc}, send_id}), Status::NOT_FOUND);
}

TEST(MadGsi, RegistrationRulesAndLifetimes) {
  GsiPair pair("mad-gsi-reg");
  ASSERT_TRUE(pair.node);
  Client client(pair.node->node());
  ASSERT_NO_FATAL_FAILURE(pair.Open(client));
  MadEnd& end = pair.responder;
  ASSERT_EQ(RegSvc(client, &end, SvcParams(kVendorClass, {0x01, 0x02})), Status::SUCCESS);
  uint64_t other = 0;
  EXPECT_EQ(RegSvc(client, &end, SvcParams(kVendorClass, {0x02}), &other), Status::RESOURCE_BUSY);
  EXPECT_EQ(RegSvc(client, &end, SvcParams(kVendorClass, {0x03}), &other), Status::SUCCESS);
  uint64_t third = 0;
  EXPECT_EQ(RegSvc(client, &end, SvcParams(kVendorClass, {}), &third), Status::SUCCESS);
  // SMP classes belong to QP0, not to a GSI alias; class 0 is no class.
  EXPECT_EQ(RegSvc(client, &end, SvcParams(0x81, {}), &third), Status::INVALID_SETTING);
  EXPECT_EQ(RegSvc(client, &end, SvcParams(0x00, {}), &third), Status::INVALID_SETTING);
  // Busy while services use them.
  EXPECT_EQ(kernel::IbDestroyMadPool(client.al(), {{end.pool}}), Status::RESOURCE_BUSY);
  EXPECT_EQ(kernel::IbDestroyQp(client.al(), {{end.qp}}), Status::RESOURCE_BUSY);
  // A wrong-sized MAD and a response expected without a timeout are refused.
  uint64_t id = 0;
  EXPECT_EQ(
      SendMadTo(client, SendTo(end.svc, 1, 100, 0, 0, false, 0), std::vector<uint8_t>(100, 1), &id),
      Status::INVALID_SETTING);
  EXPECT_EQ(SendMadTo(client, SendTo(end.svc, 1, 256, 0, 0, true, 0),
                      MakeMad(kVendorClass, 1, 1, 1), &id),
            Status::INVALID_SETTING);
  ASSERT_EQ(kernel::IbDeregMadSvc(client.al(), {{end.svc}}), Status::SUCCESS);
  ASSERT_EQ(kernel::IbDeregMadSvc(client.al(), {{other}}), Status::SUCCESS);
  ASSERT_EQ(kernel::IbDeregMadSvc(client.al(), {{third}}), Status::SUCCESS);
  EXPECT_EQ(kernel::IbDeregMadSvc(client.al(), {{third}}), Status::INVALID_MAD_SVC_HANDLE);
  // Free again: the method is registrable anew, the pool and the QP destroyable.
  ASSERT_EQ(RegSvc(client, &end, SvcParams(kVendorClass, {0x02})), Status::SUCCESS);
  ASSERT_EQ(kernel::IbDeregMadSvc(client.al(), {{end.svc}}), Status::SUCCESS);
  EXPECT_EQ(kernel::IbDestroyMadPool(client.al(), {{end.pool}}), Status::SUCCESS);
  EXPECT_EQ(kernel::IbDestroyQp(client.al(), {{end.qp}}), Status::SUCCESS);
  // The AL owns QP1: a client cannot take the real one.
  abi::GetSpecialQpIn in{};
  in.pd.value = end.pd;
  in.send_cq.value = end.cq;
  in.recv_cq.value = end.cq;
  std::vector<abi::PortAttributes> ports;
  abi::QueryCaOut query{};
  ASSERT_EQ(client.QueryCa(end.ca, &query, &ports), Status::SUCCESS);
  in.port_guid = ports[0].port_guid;
  in.params.qp_type = abi::QpType::GSI;
  in.params.caps = {4, 4, 1, 1, 0, 0};
  abi::GetSpecialQpOut qp{};
  EXPECT_EQ(kernel::IbGetSpecialQp(client.al(), in, qp), Status::RESOURCE_BUSY);
}

TEST(MadGsi, PendingGetMadEventCompletesWithTheNextMadOrWhenCancelled) {
  GsiPair pair("mad-gsi-pending");
  ASSERT_TRUE(pair.node);
  Client client(pair.node->node());
  ASSERT_NO_FATAL_FAILURE(pair.Open(client));
  ASSERT_EQ(RegSvc(client, &pair.requester, SvcParams(kVendorClass, {})), Status::SUCCESS);
  ASSERT_EQ(RegSvc(client, &pair.responder, SvcParams(kVendorClass, {0x02})), Status::SUCCESS);
  std::vector<uint8_t> output(sizeof(abi::GetMadEventOut) + 256);
  {
    IrpWatch watch(kernel::BuildGetMadEventIrp(
                       kernel::IbGetAlDevice(client.al()), kernel::IbGetAlFile(client.al()),
                       {{pair.responder.svc}}, nullptr, static_cast<uint32_t>(output.size())),
                   output.data(), output.size());
    EXPECT_EQ(kernel::IoCallDriver(kernel::IbGetAlDevice(client.al()), watch.irp), Status::PENDING);
    ASSERT_EQ(SendMadTo(client, SendTo(pair.requester.svc, 2, 256, 0, 0, false, 0),
                        MakeMad(kVendorClass, 0x02, 0x42, 0x20, 0x3C), nullptr),
              Status::SUCCESS);
    ASSERT_TRUE(watch.WaitDone());
    ASSERT_EQ(watch.status.load(), Status::SUCCESS);
    abi::GetMadEventOut out{};
    std::memcpy(&out, output.data(), sizeof(out));
    EXPECT_EQ(out.event.kind, abi::MadEventKind::RECEIVED);
    EXPECT_EQ(out.mad_length, 256u);
    EXPECT_EQ(output[sizeof(out) + 3], 0x02);
    EXPECT_EQ(output[sizeof(out) + 200], 0x3C);
  }
  {
    IrpWatch watch(kernel::BuildGetMadEventIrp(
                       kernel::IbGetAlDevice(client.al()), kernel::IbGetAlFile(client.al()),
                       {{pair.responder.svc}}, nullptr, static_cast<uint32_t>(output.size())),
                   output.data(), output.size());
    EXPECT_EQ(kernel::IoCallDriver(kernel::IbGetAlDevice(client.al()), watch.irp), Status::PENDING);
    kernel::IoCancelIrp(watch.irp);
    ASSERT_TRUE(watch.WaitDone());
    EXPECT_EQ(watch.status.load(), Status::CANCELED);
  }
  // Too small an output area: INSUFFICIENT_MEMORY and the event stays queued.
  ASSERT_EQ(SendMadTo(client, SendTo(pair.requester.svc, 2, 256, 0, 0, false, 0),
                      MakeMad(kVendorClass, 0x02, 0x43, 0x20), nullptr),
            Status::SUCCESS);
  MadEvent got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  Status s = Status::CANCELED;
  std::vector<uint8_t> small(16);
  while (s == Status::CANCELED && std::chrono::steady_clock::now() < deadline) {
    s = kernel::IbGetMadEvent(client.al(), {{pair.responder.svc}}, got.out, small);
    if (s == Status::CANCELED) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(s, Status::INSUFFICIENT_MEMORY);
  EXPECT_EQ(got.out.mad_length, 256u);
  ASSERT_TRUE(NextMadEvent(client, pair.responder.svc, &got));
  EXPECT_EQ(TidOf(got.mad) & 0xFFFFFFFF, 0x43u);
}

}  // namespace
}  // namespace softib::testing
