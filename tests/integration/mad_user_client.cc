// softib_mad_user_client <run dir>: a user process doing a GSI exchange through the channel,
// as a user-mode SM or SA client does: on each of two CAs a GSI alias QP, a MAD pool and a
// MAD service (vendor class 0x09); a request from the first to the second, which receives
// it by a blocking GetMadEvent, answers, and the first gets the matched response and its
// send completion; then 120 KiB each way by RMPP (vendor class 0x31). Then a pending GetMadEvent
// cancelled by CancelPending. Prints one line per check; exit 0 only when every check passed.
#include <endian.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "softib/user/access_layer.h"
#include "transcript.h"
#include "user/runtime_ioctls_proxy.h"
#include "user/verbs_al_proxy.h"
#include "user/verbs_ca_proxy.h"
#include "user/verbs_cq_proxy.h"
#include "user/verbs_pd_av_proxy.h"
#include "user/verbs_qp_proxy.h"

namespace {

using namespace softib;
using integration::Check;
using integration::Expect;
using user::Status;

struct End {
  user::CaFile ca;
  uint16_t lid = 0;
  abi::Handle<abi::ObjectType::MadSvc> svc{};
  abi::Handle<abi::ObjectType::MadSvc> rmpp_svc{};
};

bool Open(const user::AlFile& al, uint64_t guid, bool unsolicited, End* e) {
  if (!Expect(user::OpenCaByGuid(al, guid, 0, &e->ca), "OpenCa")) return false;
  std::vector<abi::PortAttributes> ports(2);
  abi::QueryCaOut q{};
  if (!Expect(user::proxy::QueryCa(e->ca.device, {e->ca.ca}, q, ports), "QueryCa")) return false;
  e->lid = ports[0].lid;
  abi::AllocPdOut pd{};
  Expect(user::proxy::AllocPd(e->ca.device, {e->ca.ca, abi::PdType::ALIAS, 0, 0}, pd), "AllocPd");
  abi::CreateCqOut cq{};
  Expect(user::proxy::CreateCq(e->ca.device, {e->ca.ca, 16, 0, 0}, cq), "CreateCq");
  abi::GetSpecialQpIn in{};
  in.pd = pd.pd;
  in.send_cq = cq.cq;
  in.recv_cq = cq.cq;
  in.port_guid = ports[0].port_guid;
  in.params.qp_type = abi::QpType::GSI_ALIAS;
  in.params.caps = {16, 16, 1, 1, 0, 0};
  abi::GetSpecialQpOut qp{};
  if (!Expect(user::proxy::GetSpecialQp(e->ca.device, in, qp), "GetSpecialQp GSI_ALIAS")) {
    return false;
  }
  Check(qp.qp_num == 1, "alias QP number " + std::to_string(qp.qp_num));
  abi::CreateMadPoolOut pool{};
  Expect(user::proxy::CreateMadPool(e->ca.device, {e->ca.al, 8, 0, 8, 0}, pool), "CreateMadPool");
  abi::RegMadSvcIn reg{};
  reg.qp = qp.qp;
  reg.pool = pool.pool;
  reg.params.mgmt_class = 0x09;
  reg.params.mgmt_version = 1;
  reg.params.support_unsolicited = unsolicited ? 1 : 0;
  reg.params.method_mask[0] = unsolicited ? 0x02 : 0;  // Get
  abi::RegMadSvcOut svc{};
  if (!Expect(user::proxy::RegMadSvc(e->ca.device, reg, svc), "RegMadSvc")) return false;
  e->svc = svc.svc;
  // An RMPP service of vendor class 0x31 (range 2) on the same alias QP.
  reg.params.mgmt_class = 0x31;
  reg.params.svc_type = abi::MadSvcType::RMPP;
  reg.params.method_mask[0] = unsolicited ? 0x04 : 0;  // Set
  if (!Expect(user::proxy::RegMadSvc(e->ca.device, reg, svc), "RegMadSvc RMPP")) return false;
  e->rmpp_svc = svc.svc;
  return true;
}

// A transfer of vendor class 0x31: common + RMPP + OUI headers (40 bytes), then `bytes`.
std::vector<uint8_t> Transfer(uint8_t method, uint64_t tid, uint32_t bytes, uint8_t seed) {
  std::vector<uint8_t> t(40 + bytes, 0);
  t[0] = 1;
  t[1] = 0x31;
  t[2] = 1;
  t[3] = method;
  for (int i = 0; i < 8; ++i) t[8 + i] = static_cast<uint8_t>(tid >> (56 - 8 * i));
  t[37] = 0x14;
  t[38] = 0x05;
  for (uint32_t i = 0; i < bytes; ++i) t[40 + i] = static_cast<uint8_t>(i * 29 + seed);
  return t;
}

// A transfer larger than the old 64 KiB channel frames and close to MAX_RMPP_DATA (128 KiB),
// each way: the channel must carry a whole reassembled MAD in one IOCTL.
constexpr uint32_t kRmppBytes = 120 * 1024;

// kRmppBytes each way by RMPP: the responder's blocking GetMadEvent gets the whole request,
// the requester the whole response matched to its send.
void RmppExchange(End& a, End& b) {
  const auto request = Transfer(0x02, 0x77, kRmppBytes, 5);
  abi::SendMadIn send{};
  send.svc = a.rmpp_svc;
  send.params.context = 0xBEEF;
  send.params.remote_qpn = 1;
  send.params.remote_qkey = htobe32(0x80010000);
  send.params.timeout_ms = 10000;  // generous: a loaded CI machine (ASan) is slow
  send.params.retry_count = 3;
  send.params.remote_lid = b.lid;
  send.params.response_expected = 1;
  send.params.rmpp_version = 1;
  send.mad_length = static_cast<uint32_t>(request.size());
  abi::SendMadOut sent{};
  Expect(user::proxy::SendMad(a.ca.device, send, request, sent), "SendMad RMPP request");
  abi::GetMadEventOut event{};
  std::vector<uint8_t> mad(40 + kRmppBytes);
  Expect(user::proxy::GetMadEvent(b.ca.device, {b.rmpp_svc}, event, mad),
         "GetMadEvent RMPP (responder)");
  Check(event.event.kind == abi::MadEventKind::RECEIVED && event.mad_length == 40 + kRmppBytes &&
            std::equal(request.begin() + 36, request.end(), mad.begin() + 36),
        "rmpp request reassembled: " + std::to_string(event.mad_length) + " bytes");
  uint64_t tid = 0;
  for (int i = 0; i < 8; ++i) tid = tid << 8 | mad[8 + i];
  const auto response = Transfer(0x81, tid, kRmppBytes, 9);
  send.svc = b.rmpp_svc;
  send.params.remote_lid = static_cast<uint16_t>(event.event.remote_lid);
  send.params.response_expected = 0;
  send.mad_length = static_cast<uint32_t>(response.size());
  Expect(user::proxy::SendMad(b.ca.device, send, response, sent), "SendMad RMPP response");
  Expect(user::proxy::GetMadEvent(a.ca.device, {a.rmpp_svc}, event, mad),
         "GetMadEvent RMPP (answer)");
  Check(event.event.kind == abi::MadEventKind::RECEIVED && event.event.send_context == 0xBEEF &&
            event.mad_length == 40 + kRmppBytes &&
            std::equal(response.begin() + 36, response.end(), mad.begin() + 36),
        "rmpp response matched: " + std::to_string(event.mad_length) + " bytes");
  Expect(user::proxy::GetMadEvent(a.ca.device, {a.rmpp_svc}, event, mad),
         "GetMadEvent RMPP (done)");
  Check(event.event.kind == abi::MadEventKind::SEND_COMPLETED &&
            event.event.status == abi::WcStatus::SUCCESS,
        "rmpp request completed SUCCESS");
  Expect(user::proxy::GetMadEvent(b.ca.device, {b.rmpp_svc}, event, mad),
         "GetMadEvent RMPP (response done)");
  Check(event.event.kind == abi::MadEventKind::SEND_COMPLETED &&
            event.event.status == abi::WcStatus::SUCCESS,
        "rmpp response completed SUCCESS");
}

int Run(const char* run_dir) {
  user::AlFile al;
  if (!Expect(user::OpenAl(run_dir, &al), "OpenAl")) return 1;
  abi::GetCaGuidsOut guids_out{};
  uint64_t guids[64] = {};
  Expect(user::proxy::GetCaGuids(al.device, {al.al}, guids_out, guids), "GetCaGuids");
  if (!Check(guids_out.num_cas >= 2, "two CAs")) return 1;
  End a, b;
  if (!Open(al, guids[0], false, &a) || !Open(al, guids[1], true, &b)) return 1;

  std::vector<uint8_t> request(256, 0xA5);
  request[0] = 1;
  request[1] = 0x09;
  request[2] = 1;
  request[3] = 0x01;  // Get
  for (int i = 4; i < 16; ++i) request[i] = 0;
  request[15] = 0x2A;  // TID low half 0x2A
  abi::SendMadIn send{};
  send.svc = a.svc;
  send.params.context = 0xC0DE;
  send.params.remote_qpn = 1;
  send.params.remote_qkey = htobe32(0x80010000);
  send.params.timeout_ms = 10000;  // generous: a loaded CI machine (ASan) is slow
  send.params.retry_count = 3;
  send.params.remote_lid = b.lid;
  send.params.response_expected = 1;
  send.mad_length = 256;
  abi::SendMadOut sent{};
  Expect(user::proxy::SendMad(a.ca.device, send, request, sent), "SendMad request");

  abi::GetMadEventOut event{};
  std::vector<uint8_t> mad(256);
  Expect(user::proxy::GetMadEvent(b.ca.device, {b.svc}, event, mad), "GetMadEvent (responder)");
  Check(event.event.kind == abi::MadEventKind::RECEIVED && event.mad_length == 256 &&
            mad[15] == 0x2A && mad[3] == 0x01 && event.event.remote_lid == a.lid,
        "request received, TID low half kept");
  mad[3] = 0x81;  // GetResp, same TID
  mad[200] = 0x5A;
  send.svc = b.svc;
  send.params.remote_lid = static_cast<uint16_t>(event.event.remote_lid);
  send.params.response_expected = 0;
  send.params.timeout_ms = 0;
  send.params.retry_count = 0;
  Expect(user::proxy::SendMad(b.ca.device, send, mad, sent), "SendMad response");

  std::vector<uint8_t> answer(256);
  Expect(user::proxy::GetMadEvent(a.ca.device, {a.svc}, event, answer), "GetMadEvent (answer)");
  Check(event.event.kind == abi::MadEventKind::RECEIVED && event.event.send_context == 0xC0DE &&
            answer[3] == 0x81 && answer[200] == 0x5A,
        "response matched to the request");
  Expect(user::proxy::GetMadEvent(a.ca.device, {a.svc}, event, answer), "GetMadEvent (done)");
  Check(event.event.kind == abi::MadEventKind::SEND_COMPLETED &&
            event.event.status == abi::WcStatus::SUCCESS,
        "request completed SUCCESS");

  RmppExchange(a, b);

  // A pending GetMadEvent, cancelled through the channel.
  std::vector<uint8_t> output(sizeof(abi::GetMadEventOut) + 256);
  user::Overlapped wait{};
  Expect(user::proxy::GetMadEventAsync(a.ca.device, {a.svc}, output.data(),
                                       static_cast<uint32_t>(output.size()), &wait),
         "GetMadEvent pends", Status::PENDING);
  abi::CancelPendingOut cancelled{};
  Expect(
      user::proxy::CancelPending(
          a.ca.device, {a.ca.al, (abi::kIoctlGetMadEvent >> 2) & 0xFFF, 0, a.svc.value}, cancelled),
      "CancelPending");
  uint32_t bytes = 0;
  Expect(user::GetOverlappedResult(a.ca.device, &wait, &bytes, true), "pending GetMadEvent",
         Status::CANCELED);
  user::CloseAl(&al);
  return integration::FinishTranscript();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  return Run(argv[1]);
}
