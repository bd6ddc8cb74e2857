// RMPP through the AL's GSI between the two CAs of one node (back to back, LIDs 1 and 2):
// a 10 KiB request and a 10 KiB response, each reassembled into one GetMadEvent; the
// responder's agent found by class and method, the requester's by TID.
#include "mad_client.h"

namespace softib::testing {
namespace {

constexpr uint8_t kVendorRmppClass = 0x31;  // vendor range 2: OUI header, RMPP allowed
constexpr uint32_t kBig = 128 * 1024;

std::vector<uint8_t> Transfer(uint8_t method, uint64_t tid, uint32_t data_bytes, uint8_t seed) {
  std::vector<uint8_t> t = MakeMad(kVendorRmppClass, method, tid, 0x0020);
  t.resize(kVendorRmppHeader + data_bytes);
  std::fill(t.begin() + 24, t.begin() + 36, 0);
  t[37] = 0x14;  // OUI 00:14:05
  t[38] = 0x05;
  t[39] = 0x00;
  for (uint32_t i = 0; i < data_bytes; ++i)
    t[kVendorRmppHeader + i] = static_cast<uint8_t>(i * 13 + seed);
  return t;
}

abi::SendMadIn RmppSend(uint64_t svc, uint16_t lid, uint32_t length, bool response,
                        uint64_t context) {
  abi::SendMadIn in = SendTo(svc, lid, length, 2000, 3, response, context);
  in.params.rmpp_version = 1;
  return in;
}

// A requester (RMPP) on CA A (LID 1) and a responder of `responder_method` on CA B (LID 2).
void OpenPair(Client& client, const stack::NodeStack& node, uint8_t responder_method,
              abi::MadSvcType responder_type, MadEnd* requester, MadEnd* responder) {
  ASSERT_NO_FATAL_FAILURE(
      OpenMadEnd(client, node.ca_guids()[0], 1, abi::QpType::GSI_ALIAS, requester));
  ASSERT_NO_FATAL_FAILURE(
      OpenMadEnd(client, node.ca_guids()[1], 2, abi::QpType::GSI_ALIAS, responder));
  ASSERT_EQ(RegSvc(client, requester, SvcParams(kVendorRmppClass, {}, abi::MadSvcType::RMPP)),
            Status::SUCCESS);
  ASSERT_EQ(
      RegSvc(client, responder, SvcParams(kVendorRmppClass, {responder_method}, responder_type)),
      Status::SUCCESS);
}

TEST(MadRmpp, TenKibRequestAndTenKibResponseBetweenTwoCas) {
  auto node = BootDefault("mad-rmpp-10k");
  ASSERT_TRUE(node);
  Client client(node->node());
  MadEnd requester, responder;
  ASSERT_NO_FATAL_FAILURE(
      OpenPair(client, *node, 0x02, abi::MadSvcType::RMPP, &requester, &responder));

  const auto request = Transfer(0x02, 0xABCD, 10240, 1);
  uint64_t send_id = 0;
  ASSERT_EQ(
      SendMadTo(client, RmppSend(requester.svc, 2, static_cast<uint32_t>(request.size()), true, 11),
                request, &send_id),
      Status::SUCCESS);

  MadEvent got;
  ASSERT_TRUE(NextMadEvent(client, responder.svc, &got, kBig));
  EXPECT_EQ(got.out.event.kind, abi::MadEventKind::RECEIVED);
  EXPECT_EQ(got.out.event.send_id, 0u);
  EXPECT_EQ(got.out.event.remote_lid, 1u);
  ASSERT_EQ(got.out.mad_length, kVendorRmppHeader + 10240);
  ASSERT_EQ(got.mad.size(), kVendorRmppHeader + 10240);
  EXPECT_EQ(got.mad[1], kVendorRmppClass);
  EXPECT_EQ(got.mad[3], 0x02);
  EXPECT_EQ(TidOf(got.mad) & 0xFFFFFFFF, 0xABCDu);
  EXPECT_TRUE(std::equal(request.begin() + 36, request.end(), got.mad.begin() + 36));

  // The answer, 10 KiB the other way, with the request's TID.
  auto response = Transfer(0x81, TidOf(got.mad), 10240, 2);
  uint64_t response_id = 0;
  ASSERT_EQ(SendMadTo(client,
                      RmppSend(responder.svc, 1, static_cast<uint32_t>(response.size()), false, 22),
                      response, &response_id),
            Status::SUCCESS);
  MadEvent sent;
  ASSERT_TRUE(NextMadEvent(client, responder.svc, &sent, kBig));
  EXPECT_EQ(sent.out.event.kind, abi::MadEventKind::SEND_COMPLETED);
  EXPECT_EQ(sent.out.event.status, abi::WcStatus::SUCCESS);  // every segment ACKed
  EXPECT_EQ(sent.out.event.send_id, response_id);

  MadEvent answer;
  ASSERT_TRUE(NextMadEvent(client, requester.svc, &answer, kBig));
  EXPECT_EQ(answer.out.event.kind, abi::MadEventKind::RECEIVED);
  EXPECT_EQ(answer.out.event.send_id, send_id);
  EXPECT_EQ(answer.out.event.send_context, 11u);
  ASSERT_EQ(answer.mad.size(), kVendorRmppHeader + 10240);
  EXPECT_EQ(answer.mad[3], 0x81);
  EXPECT_TRUE(std::equal(response.begin() + 36, response.end(), answer.mad.begin() + 36));
  MadEvent done;
  ASSERT_TRUE(NextMadEvent(client, requester.svc, &done, kBig));
  EXPECT_EQ(done.out.event.kind, abi::MadEventKind::SEND_COMPLETED);
  EXPECT_EQ(done.out.event.status, abi::WcStatus::SUCCESS);
  EXPECT_EQ(done.out.event.send_id, send_id);
}

TEST(MadRmpp, TooSmallGetMadEventBufferKeepsTheReassembledMad) {
  auto node = BootDefault("mad-rmpp-small");
  ASSERT_TRUE(node);
  Client client(node->node());
  MadEnd a, b;
  ASSERT_NO_FATAL_FAILURE(OpenMadEnd(client, node->ca_guids()[0], 1, abi::QpType::GSI_ALIAS, &a));
  ASSERT_NO_FATAL_FAILURE(OpenMadEnd(client, node->ca_guids()[1], 2, abi::QpType::GSI_ALIAS, &b));
  ASSERT_EQ(RegSvc(client, &a, SvcParams(kVendorRmppClass, {}, abi::MadSvcType::RMPP)),
            Status::SUCCESS);
  ASSERT_EQ(RegSvc(client, &b, SvcParams(kVendorRmppClass, {0x02}, abi::MadSvcType::RMPP)),
            Status::SUCCESS);
  const auto request = Transfer(0x02, 0x1, 3000, 3);
  ASSERT_EQ(SendMadTo(client, RmppSend(a.svc, 2, static_cast<uint32_t>(request.size()), false, 1),
                      request, nullptr),
            Status::SUCCESS);
  MadEvent done;
  ASSERT_TRUE(NextMadEvent(client, a.svc, &done, kBig));
  EXPECT_EQ(done.out.event.status, abi::WcStatus::SUCCESS);
  // The reassembled MAD does not fit 256 bytes: the size is reported, the event kept (the
  // receiver posts it right after its last ACK: poll until it is there).
  MadEvent small;
  small.mad.assign(256, 0);
  Status s = Status::CANCELED;
  for (int i = 0; i < 10000 && s == Status::CANCELED; ++i) {
    s = kernel::IbGetMadEvent(client.al(), {{b.svc}}, small.out, small.mad);
    if (s == Status::CANCELED) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(s, Status::INSUFFICIENT_MEMORY);
  EXPECT_EQ(small.out.mad_length, kVendorRmppHeader + 3000);
  MadEvent got;
  ASSERT_TRUE(NextMadEvent(client, b.svc, &got, kBig));
  ASSERT_EQ(got.mad.size(), kVendorRmppHeader + 3000);
  EXPECT_TRUE(std::equal(request.begin() + 36, request.end(), got.mad.begin() + 36));
}

TEST(MadRmpp, RmppSendRulesAreChecked) {
  auto node = BootDefault("mad-rmpp-rules");
  ASSERT_TRUE(node);
  Client client(node->node());
  MadEnd a;
  ASSERT_NO_FATAL_FAILURE(OpenMadEnd(client, node->ca_guids()[0], 1, abi::QpType::GSI_ALIAS, &a));
  uint64_t plain = 0;
  ASSERT_EQ(RegSvc(client, &a, SvcParams(kVendorRmppClass, {})), Status::SUCCESS);
  plain = a.svc;
  const auto request = Transfer(0x02, 0x1, 1000, 3);
  // RMPP on a service registered without it, an unknown RMPP version, a transfer shorter
  // than its class's headers.
  EXPECT_EQ(SendMadTo(client, RmppSend(plain, 2, static_cast<uint32_t>(request.size()), false, 1),
                      request, nullptr),
            Status::INVALID_SETTING);
  uint64_t rmpp_svc = 0;
  ASSERT_EQ(RegSvc(client, &a, SvcParams(0x32, {}, abi::MadSvcType::RMPP), &rmpp_svc),
            Status::SUCCESS);
  auto v2 = RmppSend(rmpp_svc, 2, static_cast<uint32_t>(request.size()), false, 1);
  v2.params.rmpp_version = 2;
  auto other = request;
  other[1] = 0x32;
  EXPECT_EQ(SendMadTo(client, v2, other, nullptr), Status::INVALID_SETTING);
  const std::vector<uint8_t> short_one(other.begin(), other.begin() + 38);
  EXPECT_EQ(SendMadTo(client, RmppSend(rmpp_svc, 2, 38, false, 1), short_one, nullptr),
            Status::INVALID_SETTING);
}

// An RMPP ACK that belongs to no transfer of the AL's (here sent by a RAW responder with the
// request's TID and a response method) is not the request's answer: the request still
// waits, and the real response completes it.
TEST(MadRmpp, AStrayAckIsNotTakenForTheResponse) {
  auto node = BootDefault("mad-rmpp-stray-ack");
  ASSERT_TRUE(node);
  Client client(node->node());
  MadEnd requester, responder;
  ASSERT_NO_FATAL_FAILURE(
      OpenPair(client, *node, 0x01, abi::MadSvcType::RAW, &requester, &responder));
  const auto request = Transfer(0x01, 0x5151, 256 - kVendorRmppHeader, 4);  // one MAD, no RMPP
  uint64_t send_id = 0;
  ASSERT_EQ(SendMadTo(client, SendTo(requester.svc, 2, 256, 3000, 0, true, 5), request, &send_id),
            Status::SUCCESS);
  MadEvent got;
  ASSERT_TRUE(NextMadEvent(client, responder.svc, &got, kBig));
  ASSERT_EQ(got.out.event.kind, abi::MadEventKind::RECEIVED);
  const uint64_t tid = TidOf(got.mad);

  // RMPP header (IBA 13.6.2.1): version 1 at 24, type 2 (ACK) at 25, flags Active at 26.
  auto ack = Transfer(0x81, tid, 256 - kVendorRmppHeader, 5);
  ack[24] = 1;
  ack[25] = 2;
  ack[26] = 0x01;
  ack[31] = 1;   // SegmentNumber 1
  ack[35] = 64;  // NewWindowLast 64
  ASSERT_EQ(SendMadTo(client, SendTo(responder.svc, 1, 256, 0, 0, false, 6), ack, nullptr),
            Status::SUCCESS);
  auto response = Transfer(0x81, tid, 256 - kVendorRmppHeader, 6);
  ASSERT_EQ(SendMadTo(client, SendTo(responder.svc, 1, 256, 0, 0, false, 7), response, nullptr),
            Status::SUCCESS);

  MadEvent answer;
  ASSERT_TRUE(NextMadEvent(client, requester.svc, &answer, kBig));
  ASSERT_EQ(answer.out.event.kind, abi::MadEventKind::RECEIVED);
  EXPECT_EQ(answer.out.event.send_id, send_id);
  EXPECT_EQ(answer.mad[25], 0);  // not the ACK
  EXPECT_TRUE(std::equal(response.begin() + 24, response.end(), answer.mad.begin() + 24));
}

}  // namespace
}  // namespace softib::testing
