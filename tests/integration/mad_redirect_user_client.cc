// softib_mad_redirect_user_client <run dir>: GSI redirection seen from a user process. On
// the second CA a MAD QP (CreateQp of type MAD, brought to RTS with QP1's Q_Key) with a
// vendor-class agent, and an agent on QP1 that answers every request "redirect required"
// with a ClassPortInfo naming the MAD QP; on the first CA a requester on a GSI alias. The
// requester's first request is answered from the MAD QP, the second goes there directly.
// The process exits with the MAD QP alive: its file's cleanup destroys it. Prints one line
// per check; exit 0 only when every check passed.
#include <endian.h>

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

constexpr uint8_t kClass = 0x09;
constexpr uint32_t kGsiQkey = 0x80010000;

struct End {
  user::CaFile ca;
  uint16_t lid = 0;
  abi::Handle<abi::ObjectType::Cq> cq{};
  abi::Handle<abi::ObjectType::MadPool> pool{};
};

bool Open(const user::AlFile& al, uint64_t guid, End* e, abi::PortAttributes* port) {
  if (!Expect(user::OpenCaByGuid(al, guid, 0, &e->ca), "OpenCa")) return false;
  std::vector<abi::PortAttributes> ports(2);
  abi::QueryCaOut q{};
  if (!Expect(user::proxy::QueryCa(e->ca.device, {e->ca.ca}, q, ports), "QueryCa")) return false;
  *port = ports[0];
  e->lid = ports[0].lid;
  abi::CreateCqOut cq{};
  Expect(user::proxy::CreateCq(e->ca.device, {e->ca.ca, 16, 0, 0}, cq), "CreateCq");
  e->cq = cq.cq;
  abi::CreateMadPoolOut pool{};
  Expect(user::proxy::CreateMadPool(e->ca.device, {e->ca.al, 8, 0, 8, 0}, pool), "CreateMadPool");
  e->pool = pool.pool;
  return true;
}

// A service of kClass on `qp`, taking Get unsolicited when `agent`.
abi::Handle<abi::ObjectType::MadSvc> Service(const End& e, abi::Handle<abi::ObjectType::Qp> qp,
                                             bool agent, const char* what) {
  abi::RegMadSvcIn reg{};
  reg.qp = qp;
  reg.pool = e.pool;
  reg.params.mgmt_class = kClass;
  reg.params.mgmt_version = 1;
  reg.params.support_unsolicited = agent ? 1 : 0;
  reg.params.method_mask[0] = agent ? 0x02 : 0;  // Get
  abi::RegMadSvcOut svc{};
  Expect(user::proxy::RegMadSvc(e.ca.device, reg, svc), what);
  return svc.svc;
}

abi::Handle<abi::ObjectType::Qp> GsiAlias(const End& e, const abi::PortAttributes& port) {
  abi::AllocPdOut pd{};
  Expect(user::proxy::AllocPd(e.ca.device, {e.ca.ca, abi::PdType::ALIAS, 0, 0}, pd), "AllocPd");
  abi::GetSpecialQpIn in{};
  in.pd = pd.pd;
  in.send_cq = e.cq;
  in.recv_cq = e.cq;
  in.port_guid = port.port_guid;
  in.params.qp_type = abi::QpType::GSI_ALIAS;
  in.params.caps = {16, 16, 1, 1, 0, 0};
  abi::GetSpecialQpOut qp{};
  Expect(user::proxy::GetSpecialQp(e.ca.device, in, qp), "GetSpecialQp GSI_ALIAS");
  return qp.qp;
}

// A MAD QP on port 1, RESET -> INIT (port, P_Key index, Q_Key) -> RTR -> RTS.
abi::Handle<abi::ObjectType::Qp> MadQp(const End& e, uint32_t* qpn) {
  abi::AllocPdOut pd{};
  Expect(user::proxy::AllocPd(e.ca.device, {e.ca.ca, abi::PdType::NORMAL, 0, 0}, pd), "AllocPd");
  abi::CreateQpIn in{};
  in.pd = pd.pd;
  in.send_cq = e.cq;
  in.recv_cq = e.cq;
  in.params.qp_type = abi::QpType::MAD;
  in.params.caps = {16, 16, 1, 1, 0, 0};
  abi::CreateQpOut qp{};
  Expect(user::proxy::CreateQp(e.ca.device, in, qp), "CreateQp MAD");
  *qpn = qp.qp_num;
  using M = abi::QpAttrMask;
  abi::ModifyQpIn modify{};
  modify.qp = qp.qp;
  modify.attributes.mask = M::STATE | M::PKEY_INDEX | M::PORT | M::QKEY;
  modify.attributes.state = abi::QpState::INIT;
  modify.attributes.port_num = 1;
  modify.attributes.qkey = htobe32(kGsiQkey);
  Expect(user::proxy::ModifyQp(e.ca.device, modify), "ModifyQp INIT");
  modify.attributes = {};
  modify.attributes.mask = M::STATE;
  modify.attributes.state = abi::QpState::RTR;
  Expect(user::proxy::ModifyQp(e.ca.device, modify), "ModifyQp RTR");
  modify.attributes.mask = M::STATE | M::SQ_PSN;
  modify.attributes.state = abi::QpState::RTS;
  Expect(user::proxy::ModifyQp(e.ca.device, modify), "ModifyQp RTS");
  return qp.qp;
}

abi::SendMadIn SendTo(abi::Handle<abi::ObjectType::MadSvc> svc, uint16_t lid, bool request) {
  abi::SendMadIn send{};
  send.svc = svc;
  send.params.remote_qpn = 1;
  send.params.remote_qkey = htobe32(kGsiQkey);
  send.params.timeout_ms = request ? 2000 : 0;
  send.params.retry_count = request ? 2 : 0;
  send.params.remote_lid = lid;
  send.params.response_expected = request ? 1 : 0;
  send.mad_length = 256;
  return send;
}

// `svc` receives a Get; it answers GetResp with `fill` (the response's status and data).
void Answer(const End& e, abi::Handle<abi::ObjectType::MadSvc> svc, uint16_t to,
            const std::vector<uint8_t>& answer_data, uint16_t status, const std::string& what) {
  abi::GetMadEventOut event{};
  std::vector<uint8_t> mad(256);
  Expect(user::proxy::GetMadEvent(e.ca.device, {svc}, event, mad), "GetMadEvent " + what);
  Check(event.event.kind == abi::MadEventKind::RECEIVED && mad[3] == 0x01, what + " got the Get");
  mad[3] = 0x81;
  mad[4] = static_cast<uint8_t>(status >> 8);
  mad[5] = static_cast<uint8_t>(status);
  std::copy(answer_data.begin(), answer_data.end(), mad.begin() + 16);
  abi::SendMadOut sent{};
  Expect(user::proxy::SendMad(e.ca.device, SendTo(svc, to, false), mad, sent), "SendMad " + what);
  Expect(user::proxy::GetMadEvent(e.ca.device, {svc}, event, mad), "send done " + what);
}

int Run(const char* run_dir) {
  user::AlFile al;
  if (!Expect(user::OpenAl(run_dir, &al), "OpenAl")) return 1;
  abi::GetCaGuidsOut guids_out{};
  uint64_t guids[64] = {};
  Expect(user::proxy::GetCaGuids(al.device, {al.al}, guids_out, guids), "GetCaGuids");
  if (!Check(guids_out.num_cas >= 2, "two CAs")) return 1;
  End a, b;
  abi::PortAttributes pa{}, pb{};
  if (!Open(al, guids[0], &a, &pa) || !Open(al, guids[1], &b, &pb)) return 1;
  const auto requester = Service(a, GsiAlias(a, pa), false, "RegMadSvc requester");
  const auto agent = Service(b, GsiAlias(b, pb), true, "RegMadSvc QP1 agent");
  uint32_t mad_qpn = 0;
  const auto mad_agent = Service(b, MadQp(b, &mad_qpn), true, "RegMadSvc on the MAD QP");
  Check(mad_qpn > 1, "MAD QP number " + std::to_string(mad_qpn));

  // The redirect: attribute ClassPortInfo (MAD byte 16), then ClassPortInfo at byte 24.
  std::vector<uint8_t> info(8 + 72, 0);
  info[1] = 0x01;
  uint8_t* cpi = info.data() + 8;
  cpi[29] = static_cast<uint8_t>(b.lid);  // RedirectLID
  cpi[28] = static_cast<uint8_t>(b.lid >> 8);
  cpi[30] = cpi[31] = 0xFF;  // RedirectP_Key
  cpi[33] = static_cast<uint8_t>(mad_qpn >> 16);
  cpi[34] = static_cast<uint8_t>(mad_qpn >> 8);
  cpi[35] = static_cast<uint8_t>(mad_qpn);
  cpi[36] = 0x80;  // RedirectQ_Key 0x80010000
  cpi[38] = 0x01;
  std::vector<uint8_t> mark = {0x00, 0x10};  // the answer's attribute; data unchanged

  for (int round = 1; round <= 2; ++round) {
    std::vector<uint8_t> request(256, 0);
    request[0] = 1;
    request[1] = kClass;
    request[2] = 1;
    request[3] = 0x01;
    request[15] = static_cast<uint8_t>(round);
    request[17] = 0x10;
    abi::SendMadOut sent{};
    Expect(user::proxy::SendMad(a.ca.device, SendTo(requester, b.lid, true), request, sent),
           "SendMad request " + std::to_string(round));
    if (round == 1) Answer(b, agent, a.lid, info, 0x0002, "QP1 agent (redirects)");
    Answer(b, mad_agent, a.lid, mark, 0, "MAD QP agent " + std::to_string(round));
    abi::GetMadEventOut event{};
    std::vector<uint8_t> answer(256);
    Expect(user::proxy::GetMadEvent(a.ca.device, {requester}, event, answer), "answer");
    Check(event.event.kind == abi::MadEventKind::RECEIVED && event.event.remote_qpn == mad_qpn &&
              answer[5] == 0 && answer[15] == round,
          "request " + std::to_string(round) + " answered from the MAD QP");
    Expect(user::proxy::GetMadEvent(a.ca.device, {requester}, event, answer), "done");
    Check(event.event.kind == abi::MadEventKind::SEND_COMPLETED &&
              event.event.status == abi::WcStatus::SUCCESS,
          "request " + std::to_string(round) + " completed SUCCESS");
  }
  user::CloseAl(&al);
  return integration::FinishTranscript();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  return Run(argv[1]);
}
