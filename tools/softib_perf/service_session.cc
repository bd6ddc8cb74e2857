#include "service_session.h"

#include <endian.h>

#include <array>
#include <chrono>
#include <cstdarg>
#include <cstring>
#include <thread>
#include <vector>

#include "cm_private_data.h"
#include "endpoint.h"
#include "runner.h"
#include "session.h"
#include "user/verbs_al_proxy.h"
#include "user/verbs_cm_proxy.h"
#include "user_backend.h"

namespace softib::perf {

namespace {

using Cep = abi::Handle<abi::ObjectType::Cep>;
using Clock = std::chrono::steady_clock;
using Bytes = std::vector<uint8_t>;

constexpr uint8_t kSaGet = 0x01, kSaGetTable = 0x12;
constexpr uint16_t kServiceRecord = 0x31, kPathRecord = 0x35;
constexpr uint32_t kLeaseSeconds = 60;                   // the AL renews it every 30 s
constexpr size_t kCmMessage = 24;                        // the CM message in an event's MAD
constexpr size_t kReqPrivateData = 140;                  // IBA 12.6.5
constexpr size_t kRepPrivateData = 36;                   // IBA 12.6.8
constexpr size_t kRejReason = 10, kRejPrivateData = 84;  // IBA 12.6.7
constexpr uint16_t kConsumerReject = 28, kNoResources = 3;

void PutBe64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (56 - 8 * i));
}
uint16_t GetBe16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

std::string FormatGid(const uint8_t* gid) {
  char text[48];
  char* p = text;
  for (int i = 0; i < 16; i += 2) {
    p += std::snprintf(p, text + sizeof text - p, "%s%02x%02x", i ? ":" : "", gid[i], gid[i + 1]);
  }
  return text;
}

std::string Hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

const char* RejReasonName(uint16_t reason) {
  switch (reason) {
    case 1:
      return "NO_QP";
    case 3:
      return "NO_RESOURCES";
    case 4:
      return "TIMEOUT";
    case 5:
      return "UNSUPPORTED_REQUEST";
    case 8:
      return "INVALID_SERVICE_ID";
    case 9:
      return "INVALID_TRANSPORT_TYPE";
    case 10:
      return "STALE_CONNECTION";
    case 28:
      return "CONSUMER_REJECT";
    default:
      return "another reason";
  }
}

// One side's CA, port, endpoint and CM/SA verbs.
class ServiceSide {
 public:
  ServiceSide(const Options& o, bool client)
      : o_(o), client_(client), backend_(o.run_dir, o.busy_poll), endpoint_(&backend_) {}
  ~ServiceSide() {
    if (!cep_.IsNull()) proxy::DestroyCep(ca().device, {cep_});
    if (!listen_.IsNull()) proxy::DestroyCep(ca().device, {listen_});
    if (!reg_.IsNull()) proxy::DeregisterService(al().device, {reg_});
    endpoint_.Destroy();
    backend_.Close();
  }

  bool Server(RunReport* report, std::string* error);
  bool Client(RunReport* report, std::string* error);

 private:
  const user::AlFile& al() const { return backend_.al_file(); }
  const user::CaFile& ca() const { return backend_.ca_file(); }
  std::chrono::milliseconds limit() const { return std::chrono::seconds(o_.timeout_s); }

  void Note(const char* format, ...) __attribute__((format(printf, 2, 3))) {
    std::fprintf(stderr, "softib_perf: %s: ", client_ ? "client" : "server");
    va_list args;
    va_start(args, format);
    std::vfprintf(stderr, format, args);
    va_end(args);
    std::fputc('\n', stderr);
    std::fflush(stderr);
  }
  bool Check(Status status, const std::string& what, std::string* error) {
    if (status == Status::SUCCESS) return true;
    *error = what + ": " + abi::ToString(status);
    return false;
  }

  bool OpenPort(std::string* error);
  // An SA query through the AL; false with `error` when no answer came.
  bool AskSa(uint8_t method, uint16_t attribute, uint64_t mask, const Bytes& tmpl,
             abi::GetSaResponseOut* out, Bytes* data, std::string* error);
  bool FindService(std::array<uint8_t, 16>* gid, std::string* error);
  bool FindPath(const std::array<uint8_t, 16>& dgid, Bytes* path, std::string* error);
  bool Register(std::string* error);
  // The next event of `cep` within `wait` (CepGetEvent pending, cancelled at the limit).
  bool NextEvent(Cep cep, std::chrono::milliseconds wait, abi::CepGetEventOut* out,
                 std::string* error);
  bool Expect(Cep cep, abi::CepEventType expected, const char* what, abi::CepGetEventOut* out,
              std::string* error);
  // RTR or RTS from the CM's attributes.
  bool ToRtr(std::string* error);
  bool ToRts(std::string* error);
  bool Reject(uint16_t reason, const std::string& text);
  bool Run(const TestPlan& plan, RunReport* report, std::string* error);

  const Options& o_;
  bool client_;
  UserBackend backend_;
  Endpoint endpoint_;
  abi::PortAttributes port_{};
  std::array<uint8_t, 16> gid_{};
  Cep listen_{}, cep_{};
  abi::Handle<abi::ObjectType::SaReg> reg_{};
};

bool ServiceSide::OpenPort(std::string* error) {
  if (backend_.OpenCa(o_.ca_guid, client_ ? 1 : 0, error) != Status::SUCCESS) return false;
  abi::QueryCaOut out{};
  abi::PortAttributes ports[8] = {};
  if (!Check(backend_.QueryCa(&out, ports), "QueryCa", error)) return false;
  if (o_.port > out.num_ports) {
    *error = "the CA has no port " + std::to_string(o_.port);
    return false;
  }
  port_ = ports[o_.port - 1];
  if (port_.link_state != 4 || port_.sm_lid == 0) {
    *error = "port " + std::to_string(o_.port) +
             " is not ACTIVE with an SM (the SA answers through the SM: softibd --sm internal, "
             "or --sm external and softib-sm)";
    return false;
  }
  std::memcpy(gid_.data(), &port_.subnet_prefix, 8);  // both network order
  std::memcpy(gid_.data() + 8, &port_.port_guid, 8);
  return true;
}

bool ServiceSide::AskSa(uint8_t method, uint16_t attribute, uint64_t mask, const Bytes& tmpl,
                        abi::GetSaResponseOut* out, Bytes* data, std::string* error) {
  abi::SendSaRequestIn in{};
  in.al = al().al;
  in.port_guid = port_.port_guid;
  in.component_mask = mask;
  in.timeout_ms = 1000;
  in.retry_count = 3;
  in.attribute_id = attribute;
  in.method = method;
  in.attribute_length = static_cast<uint32_t>(tmpl.size());
  abi::SendSaRequestOut req{};
  if (!Check(proxy::SendSaRequest(al().device, in, tmpl, req), "SendSaRequest", error)) {
    return false;
  }
  data->assign(abi::kMaxRmppData, 0);
  const Status status = proxy::GetSaResponse(al().device, {req.req}, *out, *data);
  proxy::CancelSaRequest(al().device, {req.req});
  data->resize(status == Status::SUCCESS ? out->data_length : 0);
  return Check(status, "GetSaResponse", error);
}

// ServiceRecords by ServiceID (GetTable); retried until the server registered or the
// timeout passed.
bool ServiceSide::FindService(std::array<uint8_t, 16>* gid, std::string* error) {
  Bytes tmpl(abi::kServiceRecordBytes, 0);
  PutBe64(tmpl.data(), *o_.service_id);
  const auto until = Clock::now() + limit();
  for (;;) {
    abi::GetSaResponseOut out{};
    Bytes data;
    if (!AskSa(kSaGetTable, kServiceRecord, 1, tmpl, &out, &data, error)) {
      *error = "SA ServiceRecord GetTable by ServiceID: " + *error;
      return false;
    }
    if (out.mad_status == 0 && out.num_records > 0) {
      std::memcpy(gid->data(), data.data() + 8, 16);  // ServiceGID
      std::string name(reinterpret_cast<const char*>(data.data() + 48), 64);
      name.resize(std::strlen(name.c_str()));
      Note("ServiceRecord of service %s: ServiceGID %s, name \"%s\" (%u record(s))",
           Hex(*o_.service_id).c_str(), FormatGid(gid->data()).c_str(), name.c_str(),
           out.num_records);
      return true;
    }
    if (Clock::now() > until) {
      *error = "no ServiceRecord for service ID " + Hex(*o_.service_id) + " after " +
               std::to_string(o_.timeout_s) + " s (SA MAD status " +
               std::to_string(out.mad_status) + "): is the server running?";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

bool ServiceSide::FindPath(const std::array<uint8_t, 16>& dgid, Bytes* path, std::string* error) {
  Bytes tmpl(abi::kPathRecordBytes, 0);
  std::memcpy(&tmpl[8], dgid.data(), 16);
  std::memcpy(&tmpl[24], gid_.data(), 16);
  abi::GetSaResponseOut out{};
  if (!AskSa(kSaGet, kPathRecord, (1ull << 2) | (1ull << 3), tmpl, &out, path, error)) {
    *error = "SA PathRecord Get by GIDs: " + *error;
    return false;
  }
  if (out.mad_status != 0 || out.num_records < 1 || path->size() < abi::kPathRecordBytes) {
    *error = "no PathRecord to " + FormatGid(dgid.data()) + " (SA MAD status " +
             std::to_string(out.mad_status) + ")";
    return false;
  }
  path->resize(abi::kPathRecordBytes);
  Note("PathRecord %s -> %s: SLID %u, DLID %u, MTU code %u", FormatGid(gid_.data()).c_str(),
       FormatGid(dgid.data()).c_str(), GetBe16(&(*path)[42]), GetBe16(&(*path)[40]),
       (*path)[54] & 0x3F);
  return true;
}

bool ServiceSide::Register(std::string* error) {
  abi::RegisterServiceIn in{};
  in.al = al().al;
  in.port_guid = port_.port_guid;
  // ServiceID, ServiceGID, ServiceP_Key, ServiceLease, ServiceName.
  in.component_mask = (1u << 0) | (1u << 1) | (1u << 2) | (1u << 4) | (1u << 6);
  in.timeout_ms = 1000;
  in.retry_count = 3;
  uint8_t* r = in.record;
  PutBe64(r, *o_.service_id);
  std::memcpy(r + 8, gid_.data(), 16);
  r[24] = r[25] = 0xFF;
  r[28] = static_cast<uint8_t>(kLeaseSeconds >> 24);
  r[29] = static_cast<uint8_t>(kLeaseSeconds >> 16);
  r[30] = static_cast<uint8_t>(kLeaseSeconds >> 8);
  r[31] = static_cast<uint8_t>(kLeaseSeconds);
  const std::string name = std::string("softib_perf ") + Name(o_.test);
  std::memcpy(r + 48, name.data(), name.size());
  abi::RegisterServiceOut out{};
  if (!Check(proxy::RegisterService(al().device, in, out), "RegisterService", error)) return false;
  reg_ = out.reg;
  Note("registered service %s: ServiceGID %s, LID %u, lease %u s (renewed by the AL)",
       Hex(*o_.service_id).c_str(), FormatGid(gid_.data()).c_str(), port_.lid, kLeaseSeconds);
  return true;
}

bool ServiceSide::NextEvent(Cep cep, std::chrono::milliseconds wait, abi::CepGetEventOut* out,
                            std::string* error) {
  user::Overlapped pending{};
  Status status = proxy::CepGetEventAsync(ca().device, {cep}, *out, &pending);
  const auto until = Clock::now() + wait;
  uint32_t bytes = 0;
  while (status == Status::PENDING) {
    status = user::GetOverlappedResult(ca().device, &pending, &bytes, false);
    if (status != Status::PENDING) break;
    if (Clock::now() > until) {
      user::CancelIoEx(ca().device, &pending);
      user::GetOverlappedResult(ca().device, &pending, &bytes, true);
      *error = "no CM event within " + std::to_string(wait.count() / 1000) + " s";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return Check(status, "CepGetEvent", error);
}

bool ServiceSide::Expect(Cep cep, abi::CepEventType expected, const char* what,
                         abi::CepGetEventOut* out, std::string* error) {
  do {  // an MRA only says the peer needs longer: the CM extends its wait
    if (!NextEvent(cep, limit(), out, error)) {
      *error = std::string("waiting for ") + what + ": " + *error;
      return false;
    }
  } while (out->event == abi::CepEventType::MRA_RECEIVED && expected != out->event);
  if (out->event == expected) return true;
  if (out->event == abi::CepEventType::REJ_RECEIVED) {
    const uint8_t* rej = out->mad + kCmMessage;
    const uint16_t reason = GetBe16(rej + kRejReason);
    *error = std::string("the peer rejected the connection: ") + RejReasonName(reason) + " (" +
             std::to_string(reason) + ")";
    const std::string text =
        DecodeRejReason(std::span<const uint8_t>(rej + kRejPrivateData, kRejPrivateDataBytes));
    if (!text.empty()) *error += ": " + text;
    return false;
  }
  *error = std::string("waiting for ") + what + ": " + abi::ToString(out->event);
  return false;
}

// The CM's attributes, with two of this tool's choices (as its --oob set-up makes them):
// a 0.01 ms RNR timer (the CM's default 0 means 655 ms, and a control message may reach a
// peer that has not posted its receives yet) and a 1.07 s ACK timeout (a software HCA on a
// loaded machine may take longer than the path's packet lifetime to move a deep queue).
bool ServiceSide::ToRtr(std::string* error) {
  abi::CepGetRtrAttributesOut rtr{};
  if (!Check(proxy::CepGetRtrAttributes(ca().device, {cep_}, rtr), "CepGetRtrAttributes", error)) {
    return false;
  }
  if (abi::HasAny(rtr.attributes.mask, abi::QpAttrMask::MIN_RNR_TIMER)) {
    rtr.attributes.min_rnr_timer = 1;
  }
  return endpoint_.Modify(rtr.attributes, "ModifyQp INIT->RTR (CM attributes)", error);
}

bool ServiceSide::ToRts(std::string* error) {
  abi::CepGetRtsAttributesOut rts{};
  if (!Check(proxy::CepGetRtsAttributes(ca().device, {cep_}, rts), "CepGetRtsAttributes", error)) {
    return false;
  }
  if (abi::HasAny(rts.attributes.mask, abi::QpAttrMask::TIMEOUT)) rts.attributes.timeout = 18;
  return endpoint_.Modify(rts.attributes, "ModifyQp RTR->RTS (CM attributes)", error);
}

bool ServiceSide::Reject(uint16_t reason, const std::string& text) {
  abi::CepSendRejIn in{};
  in.cep = cep_;
  in.reason = reason;
  const auto data = EncodeRejReason(text);
  in.private_data_length = static_cast<uint32_t>(data.size());
  Note("REJ %s: %s", RejReasonName(reason), text.c_str());
  return proxy::CepSendRej(ca().device, in, data) == Status::SUCCESS;
}

bool ServiceSide::Run(const TestPlan& plan, RunReport* report, std::string* error) {
  return RunPlan(endpoint_, nullptr, plan, client_, LimitsOf(o_), report, error);
}

bool ServiceSide::Server(RunReport* report, std::string* error) {
  if (!OpenPort(error) || !Register(error)) return false;
  abi::CreateCepOut created{};
  if (!Check(proxy::CreateCep(ca().device, {ca().al, 0}, created), "CreateCep", error)) {
    return false;
  }
  listen_ = created.cep;
  abi::CepListenIn listen{};
  listen.cep = listen_;
  listen.service_id = htobe64(*o_.service_id);
  listen.port_guid = port_.port_guid;
  if (!Check(proxy::CepListen(ca().device, listen), "CepListen", error)) return false;
  Note("listening on the CM for service %s", Hex(*o_.service_id).c_str());

  abi::CepGetEventOut event{};
  if (!NextEvent(listen_, limit() * 4, &event, error)) {
    *error = "no client connected: " + *error;
    return false;
  }
  if (event.event != abi::CepEventType::REQ_RECEIVED || event.new_cep.IsNull()) {
    *error = std::string("listen: unexpected ") + abi::ToString(event.event);
    return false;
  }
  cep_ = event.new_cep;
  TestPlan plan;
  PeerInfo peer;
  const std::span<const uint8_t> req_data(event.mad + kCmMessage + kReqPrivateData,
                                          kReqPrivateDataBytes);
  if (!DecodeReqPrivateData(req_data, &plan, &peer, error) || !AcceptPlan(o_, plan, error)) {
    Reject(kConsumerReject, *error);
    return false;
  }
  Note("REQ: %s over %s, %u size(s) from %u B, %u iterations%s", Name(o_.test), Name(o_.transport),
       plan.num_sizes, plan.sizes[0], plan.iterations, plan.validate ? ", validated" : "");
  DescribePlan(plan, false, false, report);
  report->ca_guid = backend_.ca_guid();
  if (!endpoint_.Create(plan, o_.port, error)) {
    Reject(kNoResources, *error);
    return false;
  }
  const PeerInfo mine = endpoint_.LocalInfo();
  abi::CepSendRepIn rep{};
  rep.cep = cep_;
  rep.qp = endpoint_.qp();
  rep.params.starting_psn = mine.psn;
  rep.params.responder_resources = 16;
  rep.params.initiator_depth = 16;
  rep.params.rnr_retry_count = 7;
  const auto rep_data = EncodeRepPrivateData(mine);
  rep.private_data_length = static_cast<uint32_t>(rep_data.size());
  // RTR before the RTU: the client may send as soon as it has sent the RTU.
  if (!Check(proxy::CepSendRep(ca().device, rep, rep_data), "CepSendRep", error) || !ToRtr(error) ||
      !Expect(cep_, abi::CepEventType::RTU_RECEIVED, "the RTU", &event, error) || !ToRts(error)) {
    return false;
  }
  Note("RTU: connected, QPs at RTS with the CM's attributes");
  endpoint_.set_peer(peer);
  if (!Run(plan, report, error)) return false;
  // Time-wait (2 x packet lifetime + ACK timeout, 4.3 s under softib-sm's defaults) is the
  // CM's: it keeps the connection's IDs after the process has gone, as the kernel's does.
  if (!Expect(cep_, abi::CepEventType::DREQ_RECEIVED, "the DREQ", &event, error) ||
      !Check(proxy::CepSendDrep(ca().device, {cep_, 0, 0}, {}), "CepSendDrep", error)) {
    return false;
  }
  Note("DREQ answered with DREP, time-wait left to the CM");
  return true;
}

bool ServiceSide::Client(RunReport* report, std::string* error) {
  std::array<uint8_t, 16> server_gid{};
  Bytes path;
  if (!OpenPort(error) || !FindService(&server_gid, error) || !FindPath(server_gid, &path, error)) {
    return false;
  }
  const TestPlan plan = MakePlan(o_);
  DescribePlan(plan, true, false, report);
  report->ca_guid = backend_.ca_guid();
  if (!endpoint_.Create(plan, o_.port, error)) return false;
  const PeerInfo mine = endpoint_.LocalInfo();
  std::array<uint8_t, kReqPrivateDataBytes> req_data{};
  if (!EncodeReqPrivateData(plan, mine, &req_data, error)) return false;

  abi::CreateCepOut created{};
  if (!Check(proxy::CreateCep(ca().device, {ca().al, 0}, created), "CreateCep", error)) {
    return false;
  }
  cep_ = created.cep;
  abi::CepSendReqIn req{};
  req.cep = cep_;
  req.qp = endpoint_.qp();
  req.params.service_id = htobe64(*o_.service_id);
  std::memcpy(req.params.primary_path, path.data(), abi::kPathRecordBytes);
  req.params.starting_psn = mine.psn;
  req.params.responder_resources = 16;
  req.params.initiator_depth = 16;
  req.params.remote_cm_response_timeout = 18;  // 4.096 us * 2^18 = 1.07 s per try
  req.params.local_cm_response_timeout = 18;
  req.params.retry_count = 7;
  req.params.rnr_retry_count = 7;
  req.params.max_cm_retries = 3;
  req.private_data_length = static_cast<uint32_t>(req_data.size());
  abi::CepGetEventOut event{};
  if (!Check(proxy::CepSendReq(ca().device, req, req_data), "CepSendReq", error) ||
      !Expect(cep_, abi::CepEventType::REP_RECEIVED, "the REP", &event, error)) {
    return false;
  }
  PeerInfo peer;
  const std::span<const uint8_t> rep_data(event.mad + kCmMessage + kRepPrivateData,
                                          kRepPrivateDataBytes);
  if (!DecodeRepPrivateData(rep_data, &peer, error)) {
    Reject(kConsumerReject, *error);
    return false;
  }
  if (peer.buffer_bytes != mine.buffer_bytes) {
    *error = "the server's buffer does not match this side's plan";
    Reject(kConsumerReject, *error);
    return false;
  }
  if (!ToRtr(error) || !ToRts(error) ||
      !Check(proxy::CepSendRtu(ca().device, {cep_, 0, 0}, {}), "CepSendRtu", error)) {
    return false;
  }
  Note("REP, RTU: connected to QP %u, QPs at RTS with the CM's attributes",
       (event.mad[kCmMessage + 12] << 16) | (event.mad[kCmMessage + 13] << 8) |
           event.mad[kCmMessage + 14]);
  endpoint_.set_peer(peer);
  if (!Run(plan, report, error)) return false;
  if (!Check(proxy::CepSendDreq(ca().device, {cep_, 0, 0}, {}), "CepSendDreq", error) ||
      !Expect(cep_, abi::CepEventType::DREP_RECEIVED, "the DREP", &event, error)) {
    return false;
  }
  Note("DREQ, DREP, time-wait left to the CM");
  return true;
}

}  // namespace

bool RunServiceSession(const Options& options, RunReport* report, std::string* error) {
  ServiceSide side(options, options.connect);
  return options.connect ? side.Client(report, error) : side.Server(report, error);
}

}  // namespace softib::perf
