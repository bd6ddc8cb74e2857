// The SA client verbs against a scripted SA: CA B's port 1 plays the SM (CA A's
// PortInfo:MasterSMLID points at it, through LocalMad) with a class-0x03 MAD service that
// answers what the test tells it to. Checks the request bytes (IBA 15.2.1.1), the records a
// GetSaResponse gives (one MAD and RMPP), the PathRecord cache (hits, misses, dropped on an
// SM change), timeouts and cancellation, service registration with lease renewal and
// Delete, multicast joins (attach, re-join after an SM change, Delete) and Reports.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "kernel/hca/ci_irp.h"
#include "kernel/verbs_ioc_direct.h"
#include "mad_client.h"
#include "runtime/al/src/al_internal.h"
#include "runtime/al/src/ioc/ioc_pnp.h"
#include "softib/bus/bus_driver.h"
#include "softib/kernel/pnp.h"
#include "softib/kernel/work_item.h"

namespace softib::testing {
namespace {

using Bytes = std::vector<uint8_t>;

constexpr uint8_t kGet = 0x01, kSet = 0x02, kGetResp = 0x81, kGetTable = 0x12, kGetTableResp = 0x92,
                  kDelete = 0x15, kDeleteResp = 0x95, kReport = 0x06;
constexpr uint16_t kPathRecord = 0x35, kNodeRecord = 0x11, kPortInfoRecord = 0x12,
                   kServiceRecord = 0x31, kMcMember = 0x38, kInformInfo = 0x03;
constexpr uint64_t kDgid = 1ull << 2, kSgid = 1ull << 3, kSl = 1ull << 15;

uint16_t Be16(const Bytes& b, std::size_t at) {
  return static_cast<uint16_t>(b[at] << 8 | b[at + 1]);
}
uint64_t Be64(const Bytes& b, std::size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | b[at + i];
  return v;
}
void Put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void Put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (56 - 8 * i));
}

class SaClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    stack::NodeConfig config;
    config.name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    config.iou_driver = iou_driver_;
    Status boot = Status::ERROR;
    node_ = stack::NodeStack::Boot(config, &boot);
    ASSERT_EQ(boot, Status::SUCCESS);
    ASSERT_TRUE(node_);
    client_ = std::make_unique<Client>(node_->node());
    const auto guids = client_->CaGuids();
    ASSERT_EQ(guids.size(), 2u);
    a_guid_ = guids[0];
    abi::OpenCaOut open{};
    ASSERT_EQ(client_->OpenCa({{client_->al_handle()}, htobe64(a_guid_), 0}, &open),
              Status::SUCCESS);
    a_ca_ = open.ca.value;
    abi::QueryCaOut query{};
    std::vector<abi::PortAttributes> ports;
    ASSERT_EQ(client_->QueryCa(a_ca_, &query, &ports), Status::SUCCESS);
    a_port_guid_ = ports[0].port_guid;  // network order
    a_lid_ = ports[0].lid;
    // The SA: CA B's port 1, a class-0x03 service taking the requests (with RMPP answers).
    abi::OpenCaOut open_b{};
    ASSERT_EQ(client_->OpenCa({{client_->al_handle()}, htobe64(guids[1]), 0}, &open_b),
              Status::SUCCESS);
    ASSERT_EQ(client_->QueryCa(open_b.ca.value, &query, &ports), Status::SUCCESS);
    b_lid_ = ports[0].lid;
    OpenMadEnd(*client_, guids[1], b_lid_, abi::QpType::GSI_ALIAS, &sa_);
    abi::MadSvcParams params =
        SvcParams(0x03, {kGet, kSet, kGetTable, kDelete}, abi::MadSvcType::RMPP);
    params.mgmt_version = 2;
    ASSERT_EQ(RegSvc(*client_, &sa_, params), Status::SUCCESS);
    // No SM known yet: the SA cannot be asked.
    abi::SendSaRequestOut out{};
    EXPECT_EQ(
        kernel::IbSendSaRequest(client_->al(), PathQuery(kGet, kDgid | kSgid), PathTemplate(), out),
        Status::INVALID_PORT_STATE);
    SetMasterSm(b_lid_);
  }

  // CA A's PortInfo:MasterSMLID (LocalMad SubnSet; the SMA reports SM_CHANGE).
  void SetMasterSm(uint16_t lid) {
    abi::LocalMadIn in{};
    in.ca.value = a_ca_;
    in.port_num = 1;
    in.request[0] = 1;
    in.request[1] = 0x01;
    in.request[2] = 1;
    in.request[3] = kGet;
    in.request[17] = 0x15;  // PortInfo
    abi::LocalMadOut got{};
    ASSERT_EQ(kernel::IbLocalMad(client_->al(), in, got), Status::SUCCESS);
    in.request[3] = kSet;
    std::memcpy(in.request + 64, got.response + 64, 64);
    Put16(in.request + 64 + 18, lid);
    in.request[64 + 32] &= 0xF0;  // PortState, PortPhysicalState: no change
    in.request[64 + 33] &= 0x0F;
    ASSERT_EQ(kernel::IbLocalMad(client_->al(), in, got), Status::SUCCESS);
    ASSERT_EQ(Be16(Bytes(got.response, got.response + 256), 64 + 18), lid);
    // The AL announces SM_CHANGE once its port cache holds the new SM LID (al_internal.h:
    // a consumer may read attributes one event old): the SA client asks the SM after that.
    for (int i = 0; i < 16; ++i) {
      if (NextAsync(*client_, client_->al_handle()).code == abi::AsyncEventType::SM_CHANGE) return;
    }
    ADD_FAILURE() << "no SM_CHANGE";
  }

  abi::SendSaRequestIn PathQuery(uint8_t method, uint64_t mask, uint32_t timeout_ms = 2000,
                                 uint32_t retries = 2) {
    abi::SendSaRequestIn in{};
    in.al.value = client_->al_handle();
    in.port_guid = a_port_guid_;
    in.component_mask = mask;
    in.timeout_ms = timeout_ms;
    in.retry_count = retries;
    in.attribute_id = kPathRecord;
    in.method = method;
    in.attribute_length = 64;
    return in;
  }
  Bytes PathTemplate(uint8_t sl = 0) {
    Bytes t(64, 0);
    t[8] = 0xFE;
    t[9] = 0x80;
    Put64(&t[16], 0x0002C90300B00021ull);  // DGID
    t[24] = 0xFE;
    t[25] = 0x80;
    std::memcpy(&t[32], &a_port_guid_, 8);  // SGID
    t[53] = sl;
    return t;
  }

  // The next request the scripted SA received (empty: none within 10 s).
  Bytes NextRequest() {
    MadEvent event;
    if (!NextMadEvent(*client_, sa_.svc, &event, 4096)) return {};
    if (event.out.event.kind != abi::MadEventKind::RECEIVED) return NextRequest();
    last_from_ = event.out.event;
    return event.mad;
  }
  // No request queued at the SA (its own send completions are skipped).
  bool NothingReceived() {
    for (;;) {
      MadEvent event;
      event.mad.assign(4096, 0);
      const Status s = kernel::IbGetMadEvent(client_->al(), {{sa_.svc}}, event.out, event.mad);
      if (s != Status::SUCCESS) return s == Status::CANCELED;
      if (event.out.event.kind == abi::MadEventKind::RECEIVED) return false;
    }
  }
  // Answers `request` with `records` (each `record_size` bytes apart): one MAD, or RMPP for
  // a table.
  void Answer(const Bytes& request, uint8_t method, uint16_t status, uint32_t record_size,
              const std::vector<Bytes>& records) {
    Bytes m(request.begin(), request.begin() + 56);
    m[3] = method;
    Put16(&m[4], status);
    std::fill(m.begin() + 24, m.begin() + 36, 0);
    Put16(&m[44], static_cast<uint16_t>(record_size / 8));
    for (const Bytes& r : records) {
      Bytes padded = r;
      padded.resize(record_size, 0);
      m.insert(m.end(), padded.begin(), padded.end());
    }
    const bool table = method == kGetTableResp;
    if (!table) m.resize(256, 0);
    abi::SendMadIn in = SendTo(sa_.svc, static_cast<uint16_t>(last_from_.remote_lid),
                               static_cast<uint32_t>(m.size()), 0, 0, false, 0);
    in.params.remote_qpn = last_from_.remote_qpn;
    in.params.rmpp_version = table ? 1 : 0;
    ASSERT_EQ(SendMadTo(*client_, in, m, nullptr), Status::SUCCESS);
  }

  Bytes PathRecord(uint16_t dlid) {
    Bytes r = PathTemplate();
    Put16(&r[40], dlid);
    Put16(&r[42], a_lid_);
    r[49] = 0x80 | 1;  // Reversible, NumbPath 1
    Put16(&r[50], 0xFFFF);
    r[54] = 0x84;  // MTU exactly 2048... selector 2, MTU 4
    return r;
  }

  abi::PathCacheControlOut Cache(bool flush = false) {
    abi::PathCacheControlOut out{};
    EXPECT_EQ(kernel::IbPathCacheControl(
                  client_->al(), {{client_->al_handle()}, a_port_guid_, flush ? 1u : 0u, 0}, out),
              Status::SUCCESS);
    return out;
  }

  // GetSaResponse, waiting for it.
  Status Response(uint64_t req, abi::GetSaResponseOut* out, Bytes* data) {
    data->assign(8192, 0);
    PendingCall call;
    const Status s = kernel::IbGetSaResponse(client_->al(), {{req}}, *out, *data, call.irp);
    if (s != Status::PENDING) return s;
    EXPECT_TRUE(call.WaitDone());
    return call.status.load();
  }

  // A Report(Notice) of generic trap `trap` from the SA to CA A's QP1.
  void SendReport(uint16_t trap) {
    Bytes mad = MakeMad(0x03, kReport, 0x5A00 + trap, 0x0002);
    mad[2] = 2;
    std::fill(mad.begin() + 24, mad.end(), 0);
    mad[56] = 0x80 | 4;  // generic, informational
    mad[56 + 3] = 4;     // producer: class manager
    Put16(&mad[56 + 4], trap);
    abi::SendMadIn send = SendTo(sa_.svc, a_lid_, 256, 2000, 1, true, 0x77);
    ASSERT_EQ(SendMadTo(*client_, send, mad, nullptr), Status::SUCCESS);
  }

  bool iou_driver_ = false;  // the node's bus with its IOU driver (IocPdoTest)
  std::unique_ptr<stack::NodeStack> node_;
  std::unique_ptr<Client> client_;
  uint64_t a_guid_ = 0, a_ca_ = 0, a_port_guid_ = 0;
  uint16_t a_lid_ = 0, b_lid_ = 0;
  MadEnd sa_;
  abi::MadEventRecord last_from_{};
};

TEST_F(SaClientTest, PathRecordGoesToTheSmThenComesFromTheCacheUntilTheSmChanges) {
  abi::SendSaRequestOut req{};
  ASSERT_EQ(
      kernel::IbSendSaRequest(client_->al(), PathQuery(kGet, kDgid | kSgid), PathTemplate(), req),
      Status::SUCCESS);
  const Bytes request = NextRequest();
  ASSERT_EQ(request.size(), 256u);
  EXPECT_EQ(request[0], 1);     // BaseVersion
  EXPECT_EQ(request[1], 0x03);  // SubnAdm
  EXPECT_EQ(request[2], 2);     // ClassVersion
  EXPECT_EQ(request[3], kGet);
  EXPECT_EQ(Be16(request, 16), kPathRecord);
  EXPECT_EQ(Be16(request, 44), 8);  // AttributeOffset: 64 bytes
  EXPECT_EQ(Be64(request, 48), kDgid | kSgid);
  EXPECT_TRUE(std::equal(request.begin() + 56, request.begin() + 120, PathTemplate().begin()));
  EXPECT_EQ(last_from_.remote_qpn, 1u);
  EXPECT_EQ(last_from_.remote_lid, a_lid_);
  Answer(request, kGetResp, 0, 64, {PathRecord(0x77)});
  abi::GetSaResponseOut out{};
  Bytes data;
  ASSERT_EQ(Response(req.req.value, &out, &data), Status::SUCCESS);
  EXPECT_EQ(out.mad_status, 0);
  EXPECT_EQ(out.num_records, 1u);
  EXPECT_EQ(out.record_size, 64u);
  ASSERT_EQ(out.data_length, 64u);
  EXPECT_EQ(Bytes(data.begin(), data.begin() + 64), PathRecord(0x77));
  EXPECT_EQ(kernel::IbCancelSaRequest(client_->al(), {{req.req.value}}), Status::SUCCESS);
  EXPECT_EQ(Response(req.req.value, &out, &data), Status::INVALID_SA_REQ_HANDLE);

  // Again, and with an unselected field (SL) set: answered by the cache, the SA asked nothing.
  for (uint8_t sl : {0, 5}) {
    ASSERT_EQ(kernel::IbSendSaRequest(client_->al(), PathQuery(kGet, kDgid | kSgid),
                                      PathTemplate(sl), req),
              Status::SUCCESS);
    ASSERT_EQ(Response(req.req.value, &out, &data), Status::SUCCESS);
    EXPECT_EQ(Bytes(data.begin(), data.begin() + 64), PathRecord(0x77));
    EXPECT_EQ(kernel::IbCancelSaRequest(client_->al(), {{req.req.value}}), Status::SUCCESS);
  }
  EXPECT_TRUE(NothingReceived());
  abi::PathCacheControlOut stats = Cache();
  EXPECT_EQ(stats.hits, 2u);
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.entries, 1u);
  // A selected SL is another question; BYPASS_CACHE asks the SA too.
  abi::SendSaRequestIn by_sl = PathQuery(kGet, kDgid | kSgid | kSl);
  ASSERT_EQ(kernel::IbSendSaRequest(client_->al(), by_sl, PathTemplate(5), req), Status::SUCCESS);
  Answer(NextRequest(), kGetResp, 0, 64, {PathRecord(0x78)});
  ASSERT_EQ(Response(req.req.value, &out, &data), Status::SUCCESS);
  abi::SendSaRequestIn bypass = PathQuery(kGet, kDgid | kSgid);
  bypass.flags = abi::SaRequestFlags::BYPASS_CACHE;
  ASSERT_EQ(kernel::IbSendSaRequest(client_->al(), bypass, PathTemplate(), req), Status::SUCCESS);
  Answer(NextRequest(), kGetResp, 0, 64, {PathRecord(0x79)});
  ASSERT_EQ(Response(req.req.value, &out, &data), Status::SUCCESS);
  EXPECT_EQ(Be16(data, 40), 0x79);
  stats = Cache();
  EXPECT_EQ(stats.misses, 3u);
  EXPECT_EQ(stats.entries, 2u);

  // The SM moves (SM_CHANGE from the SMA): the port's cache is dropped.
  const uint32_t before = stats.invalidations;
  SetMasterSm(a_lid_);
  SetMasterSm(b_lid_);
  for (int i = 0; i < 1000 && Cache().invalidations < before + 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  stats = Cache();
  EXPECT_EQ(stats.invalidations, before + 2);
  EXPECT_EQ(stats.entries, 0u);
  ASSERT_EQ(
      kernel::IbSendSaRequest(client_->al(), PathQuery(kGet, kDgid | kSgid), PathTemplate(), req),
      Status::SUCCESS);
  Answer(NextRequest(), kGetResp, 0, 64, {PathRecord(0x7A)});
  ASSERT_EQ(Response(req.req.value, &out, &data), Status::SUCCESS);
  EXPECT_EQ(Be16(data, 40), 0x7A);
  // A client's flush.
  EXPECT_EQ(Cache(true).entries, 1u);
  EXPECT_EQ(Cache().entries, 0u);
}

TEST_F(SaClientTest, GetTableAnsweredByRmppGivesEveryRecord) {
  abi::SendSaRequestIn in = PathQuery(kGetTable, 0);
  in.attribute_id = kNodeRecord;
  in.attribute_length = 0;
  abi::SendSaRequestOut req{};
  ASSERT_EQ(kernel::IbSendSaRequest(client_->al(), in, {}, req), Status::SUCCESS);
  const Bytes request = NextRequest();
  ASSERT_EQ(request.size(), 256u);
  EXPECT_EQ(request[3], kGetTable);
  EXPECT_EQ(Be16(request, 16), kNodeRecord);
  // 40 NodeRecords of 108 bytes, 112 apart: 4480 bytes, 23 segments.
  std::vector<Bytes> records;
  for (int i = 0; i < 40; ++i) {
    Bytes r(108, 0);
    Put16(&r[0], static_cast<uint16_t>(i + 1));
    for (std::size_t j = 2; j < r.size(); ++j) r[j] = static_cast<uint8_t>(i * 7 + j);
    records.push_back(r);
  }
  Answer(request, kGetTableResp, 0, 112, records);
  abi::GetSaResponseOut out{};
  Bytes data;
  ASSERT_EQ(Response(req.req.value, &out, &data), Status::SUCCESS);
  EXPECT_EQ(out.num_records, 40u);
  EXPECT_EQ(out.record_size, 112u);
  ASSERT_EQ(out.data_length, 40u * 112u);
  for (int i = 0; i < 40; ++i) {
    EXPECT_TRUE(std::equal(records[i].begin(), records[i].end(), data.begin() + i * 112)) << i;
  }
  // Too small an area: INSUFFICIENT_MEMORY with the length, the answer kept.
  Bytes small(100);
  EXPECT_EQ(kernel::IbGetSaResponse(client_->al(), {{req.req.value}}, out, small),
            Status::INSUFFICIENT_MEMORY);
  EXPECT_EQ(out.data_length, 40u * 112u);
  ASSERT_EQ(Response(req.req.value, &out, &data), Status::SUCCESS);
  // An error status: no records.
  ASSERT_EQ(kernel::IbSendSaRequest(client_->al(), in, {}, req), Status::SUCCESS);
  Answer(NextRequest(), kGetTableResp, 0x0400, 112, {});  // ERR_NO_RECORDS
  ASSERT_EQ(Response(req.req.value, &out, &data), Status::SUCCESS);
  EXPECT_EQ(out.mad_status, 0x0400);
  EXPECT_EQ(out.num_records, 0u);
  EXPECT_EQ(out.data_length, 0u);
}

TEST_F(SaClientTest, TimeoutCancelAndMalformedRequests) {
  // Nobody answers: sent 1 + 2 times (same TID), then TIMEOUT.
  abi::SendSaRequestOut req{};
  ASSERT_EQ(kernel::IbSendSaRequest(client_->al(), PathQuery(kGet, kDgid | kSgid, 30, 2),
                                    PathTemplate(), req),
            Status::SUCCESS);
  std::set<uint64_t> tids;
  for (int i = 0; i < 3; ++i) tids.insert(TidOf(NextRequest()));
  EXPECT_EQ(tids.size(), 1u);
  abi::GetSaResponseOut out{};
  Bytes data;
  EXPECT_EQ(Response(req.req.value, &out, &data), Status::TIMEOUT);

  // A waiting GetSaResponse, then the request cancelled: CANCELED, and the handle is gone.
  ASSERT_EQ(kernel::IbSendSaRequest(client_->al(), PathQuery(kGet, kDgid | kSgid, 5000, 0),
                                    PathTemplate(3), req),
            Status::SUCCESS);
  PendingCall wait;
  data.assign(256, 0);
  ASSERT_EQ(kernel::IbGetSaResponse(client_->al(), {{req.req.value}}, out, data, wait.irp),
            Status::PENDING);
  const Bytes pending = NextRequest();
  EXPECT_EQ(kernel::IbCancelSaRequest(client_->al(), {{req.req.value}}), Status::SUCCESS);
  ASSERT_TRUE(wait.WaitDone());
  EXPECT_EQ(wait.status.load(), Status::CANCELED);
  EXPECT_EQ(kernel::IbCancelSaRequest(client_->al(), {{req.req.value}}),
            Status::INVALID_SA_REQ_HANDLE);
  Answer(pending, kGetResp, 0, 64, {PathRecord(1)});  // late: nobody takes it

  // Malformed: a response method, attribute 0, an unknown port, a template too long.
  abi::SendSaRequestIn bad = PathQuery(kGetResp, kDgid);
  EXPECT_EQ(kernel::IbSendSaRequest(client_->al(), bad, PathTemplate(), req),
            Status::INVALID_SETTING);
  bad = PathQuery(kGet, kDgid);
  bad.attribute_id = 0;
  EXPECT_EQ(kernel::IbSendSaRequest(client_->al(), bad, PathTemplate(), req),
            Status::INVALID_SETTING);
  bad = PathQuery(kGet, kDgid);
  bad.port_guid = htobe64(0x1234);
  EXPECT_EQ(kernel::IbSendSaRequest(client_->al(), bad, PathTemplate(), req), Status::INVALID_GUID);
  bad = PathQuery(kGet, kDgid);
  bad.attribute_length = 201;
  const Bytes big(201, 0);
  EXPECT_NE(kernel::IbSendSaRequest(client_->al(), bad, big, req), Status::SUCCESS);
  EXPECT_TRUE(NothingReceived());
}

Bytes ServiceRecord(uint64_t id, uint32_t lease) {
  Bytes r(176, 0);
  Put64(&r[0], id);
  r[28] = static_cast<uint8_t>(lease >> 24);
  r[29] = static_cast<uint8_t>(lease >> 16);
  r[30] = static_cast<uint8_t>(lease >> 8);
  r[31] = static_cast<uint8_t>(lease);
  std::memcpy(&r[48], "sa-client-test", 14);
  return r;
}

TEST_F(SaClientTest, ServiceRegistrationIsRenewedAndDeleted) {
  abi::RegisterServiceIn in{};
  in.al.value = client_->al_handle();
  in.port_guid = a_port_guid_;
  in.component_mask = 1 | (1ull << 4) | (1ull << 6);  // ServiceID, ServiceLease, ServiceName
  in.timeout_ms = 2000;
  in.retry_count = 1;
  const Bytes record = ServiceRecord(0x1000, 1);
  std::memcpy(in.record, record.data(), record.size());
  abi::RegisterServiceOut out{};
  PendingCall call;
  ASSERT_EQ(kernel::IbRegisterService(client_->al(), in, out, call.irp), Status::PENDING);
  Bytes request = NextRequest();
  EXPECT_EQ(request[3], kSet);
  EXPECT_EQ(Be16(request, 16), kServiceRecord);
  EXPECT_EQ(Be64(request, 48), in.component_mask);
  EXPECT_TRUE(std::equal(record.begin(), record.end(), request.begin() + 56));
  Bytes answered = record;
  answered[8] = 0xFE;  // the SA fills the GID in
  Answer(request, kGetResp, 0, 176, {answered});
  ASSERT_TRUE(call.WaitDone());
  ASSERT_EQ(call.status.load(), Status::SUCCESS);
  EXPECT_NE(out.reg.value, 0u);
  EXPECT_TRUE(std::equal(answered.begin(), answered.end(), out.registered));
  // A lease of 1 s: renewed (the same Set) every half second while registered.
  for (int renewal = 0; renewal < 2; ++renewal) {
    request = NextRequest();
    ASSERT_EQ(request.size(), 256u);
    EXPECT_EQ(request[3], kSet);
    EXPECT_TRUE(std::equal(record.begin(), record.end(), request.begin() + 56));
    Answer(request, kGetResp, 0, 176, {answered});
  }
  // Deregistered: the Delete goes out, the handle is gone.
  ASSERT_EQ(kernel::IbDeregisterService(client_->al(), {{out.reg.value}}), Status::SUCCESS);
  for (request = NextRequest(); request.size() == 256 && request[3] == kSet;) {
    request = NextRequest();  // a renewal already on its way
  }
  ASSERT_EQ(request.size(), 256u);
  EXPECT_EQ(request[3], kDelete);
  EXPECT_EQ(Be64(request, 56), 0x1000u);
  EXPECT_EQ(kernel::IbDeregisterService(client_->al(), {{out.reg.value}}),
            Status::INVALID_SA_REG_HANDLE);

  // Refused: REMOTE_ERROR and no handle.
  in.record[0] = 0x22;
  PendingCall refused;
  ASSERT_EQ(kernel::IbRegisterService(client_->al(), in, out, refused.irp), Status::PENDING);
  request = NextRequest();
  Answer(request, kGetResp, 0x0100, 176, {});  // ERR_NO_RESOURCES
  ASSERT_TRUE(refused.WaitDone());
  EXPECT_EQ(refused.status.load(), Status::REMOTE_ERROR);
  EXPECT_EQ(out.reg.value, 0u);
  // An infinite lease is not renewed; the client's end deletes it.
  in.record[28] = in.record[29] = in.record[30] = in.record[31] = 0xFF;
  PendingCall forever;
  ASSERT_EQ(kernel::IbRegisterService(client_->al(), in, out, forever.irp), Status::PENDING);
  request = NextRequest();
  Answer(request, kGetResp, 0, 176, {Bytes(request.begin() + 56, request.begin() + 232)});
  ASSERT_TRUE(forever.WaitDone());
  ASSERT_EQ(forever.status.load(), Status::SUCCESS);
  EXPECT_TRUE(NothingReceived());
  // The SA end lives in the same client: a second client registers and goes away. Its Set
  // leaves through the same MAD service after the first registration completed: it is the
  // next request, with no renewal of the infinite lease before it.
  Client other(node_->node());
  in.al.value = other.al_handle();
  in.record[0] = 0x33;
  PendingCall others;
  ASSERT_EQ(kernel::IbRegisterService(other.al(), in, out, others.irp), Status::PENDING);
  request = NextRequest();
  ASSERT_EQ(request.size(), 256u);
  EXPECT_EQ(request[3], kSet);
  EXPECT_EQ(request[56], 0x33) << "the infinite lease was renewed";
  Answer(request, kGetResp, 0, 176, {Bytes(request.begin() + 56, request.begin() + 232)});
  ASSERT_TRUE(others.WaitDone());
  ASSERT_EQ(others.status.load(), Status::SUCCESS);
  other.Release();
  request = NextRequest();
  ASSERT_EQ(request.size(), 256u);
  EXPECT_EQ(request[3], kDelete);
  EXPECT_EQ(request[56], 0x33);
}

TEST_F(SaClientTest, JoinAttachesRejoinsAfterAnSmChangeAndLeaves) {
  Side ud;
  client_->Build(a_guid_, a_lid_, &ud, abi::QpType::UD);
  BringUpUd(*client_, ud.qp, 0x1234);
  abi::JoinMcastIn in{};
  in.qp.value = ud.qp;
  in.port_guid = a_port_guid_;
  in.component_mask = 1 | 2 | (1ull << 16);  // MGID, PortGID, JoinState
  in.timeout_ms = 2000;
  in.retry_count = 1;
  in.member_record[0] = 0xFF;
  in.member_record[1] = 0x12;
  in.member_record[15] = 0x42;
  std::memcpy(in.member_record + 24, &a_port_guid_, 8);
  in.member_record[48] = 0x01;  // FullMember
  abi::JoinMcastOut out{};
  PendingCall call;
  ASSERT_EQ(kernel::IbJoinMcast(client_->al(), in, out, call.irp), Status::PENDING);
  Bytes request = NextRequest();
  EXPECT_EQ(request[3], kSet);
  EXPECT_EQ(Be16(request, 16), kMcMember);
  Bytes joined(request.begin() + 56, request.begin() + 108);
  Put16(&joined[36], 0xC007);  // MLID
  Answer(request, kGetResp, 0, 56, {joined});
  ASSERT_TRUE(call.WaitDone());
  ASSERT_EQ(call.status.load(), Status::SUCCESS);
  EXPECT_EQ(out.joined_record[36] << 8 | out.joined_record[37], 0xC007);
  // (Traffic to the group: tests/integration SaUserTest.) A QP that is busy with the join cannot
  // go.
  EXPECT_EQ(client_->DestroyQp({{ud.qp}}), Status::RESOURCE_BUSY);
  // The SM changes: the join is sent again. The new SM cannot take it yet
  // (ERR_NO_RESOURCES): the AL asks again a little later.
  SetMasterSm(a_lid_);
  SetMasterSm(b_lid_);
  request = NextRequest();
  ASSERT_EQ(request.size(), 256u);
  EXPECT_EQ(request[3], kSet);
  EXPECT_EQ(Be16(request, 16), kMcMember);
  Answer(request, kGetResp, 0x0100, 56, {});
  request = NextRequest();
  ASSERT_EQ(request.size(), 256u);
  EXPECT_EQ(request[3], kSet);
  EXPECT_EQ(Be16(request, 16), kMcMember);
  EXPECT_TRUE(std::equal(joined.begin(), joined.begin() + 16, request.begin() + 56));
  Answer(request, kGetResp, 0, 56, {joined});
  // Leave: the Delete with the group's MGID, the QP detached (attachable again).
  ASSERT_EQ(kernel::IbLeaveMcast(client_->al(), {{out.join.value}}), Status::SUCCESS);
  do {
    request = NextRequest();
  } while (request.size() == 256 && request[3] == kSet);  // the second re-join
  ASSERT_EQ(request.size(), 256u);
  EXPECT_EQ(request[3], kDelete);
  EXPECT_TRUE(std::equal(joined.begin(), joined.begin() + 16, request.begin() + 56));
  EXPECT_EQ(client_->DestroyQp({{ud.qp}}), Status::SUCCESS);
  // Not a UD QP.
  Side rc;
  client_->Build(a_guid_, a_lid_, &rc, abi::QpType::RC);
  in.qp.value = rc.qp;
  PendingCall wrong;
  EXPECT_EQ(kernel::IbJoinMcast(client_->al(), in, out, wrong.irp), Status::INVALID_SERVICE_TYPE);
}

// The HCA's answer to detaching `qpn` from a group (a CI IRP to the CA device, below the
// AL): SUCCESS when the QP was attached (it is not any more), NOT_FOUND when it was not.
Status HcaDetach(stack::NodeStack* node, uint64_t guid, uint32_t qpn, const uint8_t* mgid,
                 uint16_t mlid) {
  kernel::DeviceObject* device =
      kernel::IoGetDeviceByName(node->node(), node->ca_device_name(guid).c_str());
  if (device == nullptr) return Status::NOT_FOUND;
  abi::CiDetachMcastIn in{};
  in.qpn = qpn;
  in.mlid = mlid;
  std::memcpy(&in.mgid, mgid, sizeof in.mgid);
  const Status s =
      kernel::CallCiDetachMcastIrp(device, nullptr, kernel::ProcessorMode::kKernelMode, in);
  kernel::ObDereferenceObject(device);
  return s;
}

// A re-join after an SM change that the new SA answers with another MLID: the QP follows
// the group (CiDetachMcast of the old MLID, then CiAttachMcast of the new, one after the
// other from the join's coroutine), and the leave detaches it from the new one.
TEST_F(SaClientTest, ARejoinToANewMlidMovesTheQpThere) {
  Side ud;
  client_->Build(a_guid_, a_lid_, &ud, abi::QpType::UD);
  BringUpUd(*client_, ud.qp, 0x1234);
  abi::JoinMcastIn in{};
  in.qp.value = ud.qp;
  in.port_guid = a_port_guid_;
  in.component_mask = 1 | 2 | (1ull << 16);  // MGID, PortGID, JoinState
  in.timeout_ms = 2000;
  in.retry_count = 1;
  in.member_record[0] = 0xFF;
  in.member_record[1] = 0x12;
  in.member_record[15] = 0x44;
  std::memcpy(in.member_record + 24, &a_port_guid_, 8);
  in.member_record[48] = 0x01;  // FullMember
  abi::JoinMcastOut out{};
  PendingCall call;
  ASSERT_EQ(kernel::IbJoinMcast(client_->al(), in, out, call.irp), Status::PENDING);
  Bytes request = NextRequest();
  Bytes joined(request.begin() + 56, request.begin() + 108);
  Put16(&joined[36], 0xC007);
  Answer(request, kGetResp, 0, 56, {joined});
  ASSERT_TRUE(call.WaitDone());
  ASSERT_EQ(call.status.load(), Status::SUCCESS);
  const uint8_t* mgid = joined.data();

  SetMasterSm(a_lid_);
  SetMasterSm(b_lid_);
  request = NextRequest();
  ASSERT_EQ(request.size(), 256u);
  ASSERT_EQ(request[3], kSet);
  Put16(&joined[36], 0xC009);  // the new SA's MLID for the group
  Answer(request, kGetResp, 0, 56, {joined});
  // Moved once the QP is attached at 0xC009 (probed by detaching it there, then put back).
  Status moved = Status::NOT_FOUND;
  for (int i = 0; i < 500 && moved == Status::NOT_FOUND; ++i) {
    moved = HcaDetach(node_.get(), a_guid_, ud.qpn, mgid, 0xC009);
    if (moved == Status::NOT_FOUND) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(moved, Status::SUCCESS);
  kernel::DeviceObject* device =
      kernel::IoGetDeviceByName(node_->node(), node_->ca_device_name(a_guid_).c_str());
  ASSERT_NE(device, nullptr);
  abi::CiAttachMcastIn again{};
  again.qpn = ud.qpn;
  again.mlid = 0xC009;
  std::memcpy(&again.mgid, mgid, sizeof again.mgid);
  EXPECT_EQ(
      kernel::CallCiAttachMcastIrp(device, nullptr, kernel::ProcessorMode::kKernelMode, again),
      Status::SUCCESS);
  kernel::ObDereferenceObject(device);
  EXPECT_EQ(HcaDetach(node_.get(), a_guid_, ud.qpn, mgid, 0xC007), Status::NOT_FOUND);

  ASSERT_EQ(kernel::IbLeaveMcast(client_->al(), {{out.join.value}}), Status::SUCCESS);
  do {
    request = NextRequest();
  } while (request.size() == 256 && request[3] == kSet);
  ASSERT_EQ(request.size(), 256u);
  EXPECT_EQ(request[3], kDelete);
  EXPECT_EQ(HcaDetach(node_.get(), a_guid_, ud.qpn, mgid, 0xC009), Status::NOT_FOUND);
  EXPECT_EQ(client_->DestroyQp({{ud.qp}}), Status::SUCCESS);  // the leave's detach is done
}

// A join left while its re-join after an SM change is still unanswered: the membership (and
// with it the file's objects) goes at once — the AL cancels the Set in flight — not when that
// Set runs out of tries (2 s × 2 here). IPoIB leaves its old joins after a port's return while
// the AL re-tells them, and a file's end must not wait for an SA that will never answer.
TEST_F(SaClientTest, LeavingAJoinWhoseRejoinIsUnansweredEndsItAtOnce) {
  Side ud;
  client_->Build(a_guid_, a_lid_, &ud, abi::QpType::UD);
  BringUpUd(*client_, ud.qp, 0x1234);
  abi::JoinMcastIn in{};
  in.qp.value = ud.qp;
  in.port_guid = a_port_guid_;
  in.component_mask = 1 | 2 | (1ull << 16);  // MGID, PortGID, JoinState
  in.timeout_ms = 2000;
  in.retry_count = 1;
  in.member_record[0] = 0xFF;
  in.member_record[1] = 0x12;
  in.member_record[15] = 0x43;
  std::memcpy(in.member_record + 24, &a_port_guid_, 8);
  in.member_record[48] = 0x01;  // FullMember
  abi::JoinMcastOut out{};
  PendingCall call;
  ASSERT_EQ(kernel::IbJoinMcast(client_->al(), in, out, call.irp), Status::PENDING);
  Bytes request = NextRequest();
  ASSERT_EQ(request.size(), 256u);
  Bytes joined(request.begin() + 56, request.begin() + 108);
  Put16(&joined[36], 0xC008);  // MLID
  Answer(request, kGetResp, 0, 56, {joined});
  ASSERT_TRUE(call.WaitDone());
  ASSERT_EQ(call.status.load(), Status::SUCCESS);
  EXPECT_EQ(al::QueryNodeObjectCounts(node_->access_layer()).mcast_join, 1u);
  // The SM changes: the join is told again; the SA does not answer.
  SetMasterSm(a_lid_);
  SetMasterSm(b_lid_);
  request = NextRequest();
  ASSERT_EQ(request.size(), 256u);
  EXPECT_EQ(request[3], kSet);
  EXPECT_EQ(Be16(request, 16), kMcMember);
  const auto left = std::chrono::steady_clock::now();
  ASSERT_EQ(kernel::IbLeaveMcast(client_->al(), {{out.join.value}}), Status::SUCCESS);
  while (al::QueryNodeObjectCounts(node_->access_layer()).mcast_join != 0 &&
         std::chrono::steady_clock::now() - left < std::chrono::seconds(6)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto gone = std::chrono::steady_clock::now() - left;
  EXPECT_EQ(al::QueryNodeObjectCounts(node_->access_layer()).mcast_join, 0u);
  EXPECT_LT(gone, std::chrono::milliseconds(1000))
      << std::chrono::duration_cast<std::chrono::milliseconds>(gone).count() << " ms";
  // The leave's Delete still reaches the SA.
  do {
    request = NextRequest();
  } while (request.size() == 256 && request[3] == kSet);
  ASSERT_EQ(request.size(), 256u);
  EXPECT_EQ(request[3], kDelete);
  EXPECT_EQ(client_->DestroyQp({{ud.qp}}), Status::SUCCESS);
}

TEST_F(SaClientTest, SubscriptionsGetTheirReportsAndTheSaItsReportResponse) {
  abi::SubscribeReportIn in{};
  in.al.value = client_->al_handle();
  in.port_guid = a_port_guid_;
  in.timeout_ms = 2000;
  in.trap_number = 64;
  abi::SubscribeReportOut out{};
  PendingCall call;
  ASSERT_EQ(kernel::IbSubscribeReport(client_->al(), in, out, call.irp), Status::PENDING);
  Bytes request = NextRequest();
  EXPECT_EQ(request[3], kSet);
  EXPECT_EQ(Be16(request, 16), kInformInfo);
  EXPECT_EQ(Be16(request, 56 + 16), 0xFFFF);  // every LID
  EXPECT_EQ(request[56 + 22], 1);             // IsGeneric
  EXPECT_EQ(request[56 + 23], 1);             // Subscribe
  EXPECT_EQ(Be16(request, 56 + 26), 64);      // the trap
  EXPECT_EQ(request[56 + 30], 1);             // QPN 1
  Answer(request, kGetResp, 0, 40, {Bytes(request.begin() + 56, request.begin() + 92)});
  ASSERT_TRUE(call.WaitDone());
  ASSERT_EQ(call.status.load(), Status::SUCCESS);
  const uint64_t inform = out.inform.value;
  EXPECT_NE(inform, 0u);

  // A pending GetReport, then the SA's Report (trap 64) to CA A's QP1.
  abi::GetReportOut report{};
  PendingCall wait;
  ASSERT_EQ(kernel::IbGetReport(client_->al(), {{inform}}, report, wait.irp), Status::PENDING);
  Bytes mad = MakeMad(0x03, kReport, 0x5A01, 0x0002);
  mad[2] = 2;
  std::fill(mad.begin() + 24, mad.end(), 0);
  mad[56] = 0x80 | 4;  // generic, informational
  mad[56 + 3] = 4;     // producer: class manager
  Put16(&mad[56 + 4], 64);
  for (int i = 0; i < 16; ++i) mad[56 + 16 + 6 + i] = static_cast<uint8_t>(0xA0 + i);
  abi::SendMadIn send = SendTo(sa_.svc, a_lid_, 256, 2000, 1, true, 0x77);
  ASSERT_EQ(SendMadTo(*client_, send, mad, nullptr), Status::SUCCESS);
  ASSERT_TRUE(wait.WaitDone());
  ASSERT_EQ(wait.status.load(), Status::SUCCESS);
  EXPECT_TRUE(std::equal(mad.begin() + 56, mad.begin() + 136, report.notice));
  // The SA got its ReportResponse (matched to its Report by TID).
  Bytes answer = NextRequest();
  ASSERT_EQ(answer.size(), 256u);
  EXPECT_EQ(answer[3], 0x86);
  EXPECT_EQ(last_from_.send_context, 0x77u);
  // Another trap number is not this subscription's.
  Put16(&mad[56 + 4], 65);
  ASSERT_EQ(SendMadTo(*client_, send, mad, nullptr), Status::SUCCESS);
  answer = NextRequest();  // answered all the same
  EXPECT_EQ(answer[3], 0x86);
  EXPECT_EQ(kernel::IbGetReport(client_->al(), {{inform}}, report), Status::CANCELED);
  // Unsubscribed: InformInfo with Subscribe 0.
  ASSERT_EQ(kernel::IbUnsubscribeReport(client_->al(), {{inform}}), Status::SUCCESS);
  do {
    request = NextRequest();
  } while (request.size() == 256 && request[3] != kSet);
  ASSERT_EQ(request.size(), 256u);
  EXPECT_EQ(Be16(request, 16), kInformInfo);
  EXPECT_EQ(request[56 + 23], 0);
}

// IOU/IOC discovery (ioc/ioc_traps.h): its sweep through CA A's port subscribes to traps 64,
// 65 and 144, and a Report of one of them starts the next sweep at once (polls are an hour
// apart here, so nothing else can).
TEST_F(SaClientTest, IouDiscoverySubscribesToTrapsAndSweepsOnTheirReports) {
  al::ioc::IocPnp& pnp = *node_->access_layer()->ioc_pnp;
  pnp.set_interval(std::chrono::hours(1));
  abi::RegisterPnpOut reg{};
  ASSERT_EQ(client_->RegisterPnp({{client_->al_handle()}, abi::PnpClass::IOU, {}, 1}, &reg),
            Status::SUCCESS);
  // The sweep's PortInfoRecord query goes unanswered (it ends by timeout); the
  // subscriptions are accepted.
  std::set<uint16_t> traps;
  int sweep_queries = 0;
  while (traps.size() < 3) {
    const Bytes request = NextRequest();
    ASSERT_EQ(request.size(), 256u);
    if (Be16(request, 16) == kPortInfoRecord) {
      EXPECT_EQ(request[3], kGetTable);
      ++sweep_queries;
      continue;
    }
    ASSERT_EQ(Be16(request, 16), kInformInfo);
    EXPECT_EQ(request[3], kSet);
    EXPECT_EQ(Be16(request, 56 + 16), 0xFFFF);  // every LID
    EXPECT_EQ(request[56 + 22], 1);             // IsGeneric
    EXPECT_EQ(request[56 + 23], 1);             // Subscribe
    EXPECT_EQ(request[56 + 30], 1);             // QPN 1
    traps.insert(Be16(request, 56 + 26));
    Answer(request, kGetResp, 0, 40, {Bytes(request.begin() + 56, request.begin() + 92)});
  }
  EXPECT_EQ(traps, (std::set<uint16_t>{64, 65, 144}));
  const auto wait_sweeps = [&](uint64_t n) {
    for (int i = 0; i < 1000 && pnp.sweeps.load() < n; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return pnp.sweeps.load() >= n;
  };
  ASSERT_TRUE(wait_sweeps(1));
  while (!NothingReceived()) {
  }
  const uint64_t sweeps = pnp.sweeps.load();

  // A GID out of service: answered, and a new sweep asks for the PortInfoRecords again.
  SendReport(65);
  bool answered = false, swept = false;
  for (int i = 0; i < 2; ++i) {
    const Bytes request = NextRequest();
    ASSERT_EQ(request.size(), 256u);
    answered = answered || request[3] == 0x86;
    swept = swept || (request[3] == kGetTable && Be16(request, 16) == kPortInfoRecord);
  }
  EXPECT_TRUE(answered);
  EXPECT_TRUE(swept);
  EXPECT_TRUE(wait_sweeps(sweeps + 1));
  EXPECT_GE(sweep_queries, 1);
}

// The bus's IOU driver on the real AL (NodeConfig::iou_driver): an I/O controller registered
// on CA B is found by the AL's sweep through CA A's port (the scripted SA names B's port as
// the one I/O unit; B's device management agent answers for the controller), and the IOU
// FDO over CA A's IOU PDO enumerates its IOC PDO: the identity from the profile, verb IRPs
// forwarded to the AL for a client's handles. The controller withdrawn (the next sweep sees
// the unit's ChangeID move), the PDO goes; a new one goes with CA A.
class IocPdoTest : public SaClientTest {
 protected:
  IocPdoTest() { iou_driver_ = true; }

  void SetUp() override {
    SaClientTest::SetUp();
    if (HasFatalFailure()) return;
    b_guid_ = client_->CaGuids()[1];
    ASSERT_EQ(kernel::IoRegisterPlugPlayNotification(node_->node(), bus::kIocInterfaceClass, true,
                                                     &OnIoc, this, &listener_),
              Status::SUCCESS);
    sa_thread_ = std::thread([this] { Serve(); });
  }
  void TearDown() override {
    stop_ = true;
    if (sa_thread_.joinable()) sa_thread_.join();
    if (listener_ != nullptr) kernel::IoUnregisterPlugPlayNotification(listener_);
  }

  // The scripted SA: B's port is the one port with IsDeviceManagementSupported, its
  // NodeRecord gives B's GUIDs, trap subscriptions are accepted.
  void Serve() {
    while (!stop_) {
      MadEvent event;
      event.mad.assign(4096, 0);
      const Status s = kernel::IbGetMadEvent(client_->al(), {{sa_.svc}}, event.out, event.mad);
      if (s != Status::SUCCESS) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a poll, not a handshake
        continue;
      }
      if (event.out.event.kind != abi::MadEventKind::RECEIVED) continue;
      event.mad.resize(event.out.mad_length);
      last_from_ = event.out.event;
      const Bytes& request = event.mad;
      const uint16_t attribute = Be16(request, 16);
      if (request[3] == kGetTable && attribute == kPortInfoRecord) {
        Bytes record(72, 0);
        Put16(&record[0], b_lid_);
        record[2] = 1;
        record[4 + 20 + 3] = 0x08;  // CapabilityMask bit 19 (bytes 20-23 of PortInfo)
        Answer(request, kGetTableResp, 0, 72, {record});
      } else if (request[3] == kGetTable && attribute == kNodeRecord) {
        Bytes record(112, 0);
        Put16(&record[0], b_lid_);
        Put64(&record[16], b_guid_);       // NodeGUID
        Put64(&record[24], b_port_guid_);  // PortGUID
        Answer(request, kGetTableResp, 0, 112, {record});
      } else if (request[3] == kSet && attribute == kInformInfo) {
        Answer(request, kGetResp, 0, 40, {Bytes(request.begin() + 56, request.begin() + 92)});
      }
    }
  }

  static void OnIoc(const kernel::PnpNotification& n, void* context) {
    auto* self = static_cast<IocPdoTest*>(context);
    std::lock_guard lock(self->mutex_);
    if (n.event == kernel::PnpEvent::kArrival) {
      bus::IocIdentity identity{};
      kernel::Irp* irp = kernel::IoBuildDeviceIoControlRequest(
          bus::kIoctlBusQueryIdentity, n.device, nullptr, 0, &identity, sizeof identity, true);
      EXPECT_EQ(kernel::IoCallDriverAndWait(n.device, irp), Status::SUCCESS);
      self->arrived_.push_back(identity);
    } else {
      ++self->removed_;
    }
    self->changed_.notify_all();
  }
  bool WaitIocs(size_t arrivals, size_t removals) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(20),
                             [&] { return arrived_.size() >= arrivals && removed_ >= removals; });
  }

  // Creates and registers a controller on CA B with one SRP-style service entry.
  void AddIoc(uint64_t guid, uint64_t* ioc, uint64_t* service) {
    abi::OpenCaOut b{};
    ASSERT_EQ(client_->OpenCa({{client_->al_handle()}, htobe64(b_guid_), 0}, &b), Status::SUCCESS);
    abi::CreateIocIn in{};
    in.ca = b.ca;
    Put64(in.profile, guid);
    in.profile[8] = 0x00;  // VendorID 0x001405
    in.profile[9] = 0x14;
    in.profile[10] = 0x05;
    Put16(&in.profile[28], 0x0100);  // IOClass
    Put16(&in.profile[30], 0x609E);  // IOSubclass
    Put16(&in.profile[32], 0x0108);  // Protocol
    Put16(&in.profile[34], 0x0001);  // ProtocolVersion
    abi::CreateIocOut created{};
    ASSERT_EQ(kernel::IbCreateIoc(client_->al(), in, created), Status::SUCCESS);
    *ioc = created.ioc.value;
    abi::AddIocServiceIn svc{};
    svc.ioc = created.ioc;
    svc.service_id = htobe64(0x0002C90300AB0077ull);
    std::memcpy(svc.name, "SRP.T10:0002c90300ab0077", 24);
    abi::AddIocServiceOut added{};
    ASSERT_EQ(kernel::IbAddIocService(client_->al(), svc, added), Status::SUCCESS);
    *service = added.service.value;
    abi::RegisterIocOut slot{};
    ASSERT_EQ(kernel::IbRegisterIoc(client_->al(), {created.ioc}, slot), Status::SUCCESS);
  }
  // A sweep now: a new IOC registration asks for one.
  void KickSweep() {
    abi::RegisterPnpOut reg{};
    ASSERT_EQ(client_->RegisterPnp({{client_->al_handle()}, abi::PnpClass::IOC, {}, 9}, &reg),
              Status::SUCCESS);
  }

  uint64_t b_guid_ = 0, b_port_guid_ = 0x0002c90300ab0b01ull;
  std::thread sa_thread_;
  std::atomic<bool> stop_{false};
  kernel::PnpRegistration* listener_ = nullptr;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<bus::IocIdentity> arrived_;
  size_t removed_ = 0;
};

TEST_F(IocPdoTest, AControllerFoundByTheSweepBecomesAnIocPdoOfTheCaItWasReachedThrough) {
  constexpr uint64_t kIoc = 0x0002c90300ab0001ull;
  uint64_t ioc = 0, service = 0;
  ASSERT_NO_FATAL_FAILURE(AddIoc(kIoc, &ioc, &service));
  KickSweep();
  ASSERT_TRUE(WaitIocs(1, 0));
  {
    std::lock_guard lock(mutex_);
    ASSERT_EQ(arrived_.size(), 1u);
    const bus::IocIdentity& id = arrived_[0];
    EXPECT_EQ(id.pdo.kind, bus::PdoKind::kIoc);
    EXPECT_EQ(id.pdo.ca_guid, a_guid_);  // reached through CA A's port 1
    EXPECT_EQ(id.pdo.port, 1);
    EXPECT_EQ(id.ioc_guid, kIoc);
    EXPECT_EQ(id.id_ext, 0x0002c90300ab0077ull);
    EXPECT_EQ(id.iou_port_guid, b_port_guid_);
    EXPECT_EQ(id.iou_lid, b_lid_);
    EXPECT_EQ(id.vendor_id, 0x001405u);
    EXPECT_EQ(id.io_class, 0x0100);
    EXPECT_EQ(id.io_subclass, 0x609E);
    EXPECT_EQ(id.protocol, 0x0108);
    EXPECT_EQ(id.protocol_version, 1);
    EXPECT_EQ(id.ioc_slot, 1);
    EXPECT_EQ(id.num_service_entries, 1);
  }
  const std::string name = bus::IocPdoName(kIoc, a_guid_);
  kernel::DeviceObject* pdo = kernel::IoGetDeviceByName(node_->node(), name.c_str());
  ASSERT_NE(pdo, nullptr);
  // A client's QueryCa through the IOC PDO, by its own handle to CA A.
  std::vector<uint8_t> out(sizeof(abi::QueryCaOut) + 4 * sizeof(abi::PortAttributes), 0);
  kernel::Irp* irp = kernel::BuildQueryCaIrp(pdo, kernel::IbGetAlFile(client_->al()), {{a_ca_}},
                                             out.data(), static_cast<uint32_t>(out.size()));
  EXPECT_EQ(kernel::IoCallDriverAndWait(pdo, irp), Status::SUCCESS);
  abi::QueryCaOut ca{};
  std::memcpy(&ca, out.data(), sizeof ca);
  EXPECT_EQ(be64toh(ca.attributes.ca_guid), a_guid_);
  kernel::ObDereferenceObject(pdo);

  // Withdrawn: the next sweep reports IOC_REMOVE and the PDO goes.
  ASSERT_EQ(kernel::IbRemoveIocService(client_->al(), {{service}}), Status::SUCCESS);
  ASSERT_EQ(kernel::IbDestroyIoc(client_->al(), {{ioc}}), Status::SUCCESS);
  KickSweep();
  ASSERT_TRUE(WaitIocs(1, 1));
  // Announced before the PDO is deleted: the IOU FDO's work item is done once the workers
  // are idle.
  kernel::IoFlushQueuedWorkItems(node_->node());
  EXPECT_EQ(kernel::IoGetDeviceByName(node_->node(), name.c_str()), nullptr);
  EXPECT_EQ(bus::BusIocPdoCount(node_->bus()), 0u);

  // Another controller, then CA A goes: its IOC PDO goes with it.
  constexpr uint64_t kIoc2 = 0x0002c90300ab0002ull;
  ASSERT_NO_FATAL_FAILURE(AddIoc(kIoc2, &ioc, &service));
  KickSweep();
  ASSERT_TRUE(WaitIocs(2, 1));
  EXPECT_EQ(bus::BusIocPdoCount(node_->bus()), 1u);
  stop_ = true;  // the SA's CA stays; the sweeps need it no more
  sa_thread_.join();
  ASSERT_EQ(node_->RemoveCa(a_guid_), Status::SUCCESS);
  EXPECT_EQ(kernel::IoGetDeviceByName(node_->node(), bus::IocPdoName(kIoc2, a_guid_).c_str()),
            nullptr);
  EXPECT_EQ(bus::BusIocPdoCount(node_->bus()), 0u);
  ASSERT_TRUE(WaitIocs(2, 2));
}

}  // namespace
}  // namespace softib::testing
