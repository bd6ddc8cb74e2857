// softib_cm_user_client <run dir> server|client|server-dies|client-waits <service id (hex)>:
// one side of an RC
// connection made through the CM by a user process, every verb through the channel.
// server (CA 2): listens for the service, takes the REQ's new CEP, answers with a REP,
// goes to RTR, then to RTS at the RTU (the CEP's attributes), receives "hello" and answers "world",
// then takes the DREQ, answers DREP and waits for time-wait to end.
// client (CA 1): REQ to the server's port (LID from QueryCa), REP, RTR/RTS, RTU, sends
// "hello", receives "world", DREQ, DREP, time-wait.
// server-dies prints "established" after the exchange and waits to be killed; client-waits
// then takes the DREQ the CM sends for the dead process, answers DREP and waits for
// time-wait. CepGetEvent is a pending IOCTL each time. Prints one line per check (the server prints
// "listening" once its listen is up); exit 0 only when every check passed.
#include <endian.h>

#include <unistd.h>
#include <array>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "rc_endpoint.h"
#include "transcript.h"
#include "user/verbs_ca_proxy.h"
#include "user/verbs_cm_proxy.h"

namespace {

using namespace softib;
using integration::Check;
using integration::Expect;
using user::Status;
using Cep = abi::Handle<abi::ObjectType::Cep>;

struct Side {
  user::CaFile ca;
  abi::Handle<abi::ObjectType::Pd> pd{};
  integration::RcEndpoint qp;
  std::vector<uint8_t> buffer = std::vector<uint8_t>(4096);
  uint32_t lkey = 0;
  uint16_t lid = 0;
};

bool OpenSide(const user::AlFile& al, uint64_t guid, Side* s) {
  if (!Expect(user::OpenCaByGuid(al, guid, 0, &s->ca), "OpenCa")) return false;
  uint8_t state = 0;
  Expect(integration::PortLid(s->ca, &s->lid, &state), "PortLid");
  if (!Expect(integration::AllocPd(s->ca, &s->pd), "AllocPd")) return false;
  abi::Handle<abi::ObjectType::Mr> mr{};
  uint32_t rkey = 0;
  if (!Expect(integration::RegisterBuffer(s->ca, s->pd, s->buffer.data(), s->buffer.size(),
                                          abi::AccessFlags::LOCAL_WRITE, &mr, &s->lkey, &rkey),
              "RegMem")) {
    return false;
  }
  return Expect(s->qp.Create(s->ca, s->pd, 16), "Create QP") &&
         Expect(s->qp.MapRings(), "MapRings") && Expect(s->qp.Init(), "QP to INIT");
}

abi::CepGetEventOut NextEvent(const Side& s, Cep cep, abi::CepEventType expected,
                              const std::string& what) {
  abi::CepGetEventOut out{};
  Expect(user::proxy::CepGetEvent(s.ca.device, {cep}, out), "CepGetEvent " + what);
  Check(out.event == expected,
        what + " (event " + std::to_string(static_cast<uint32_t>(out.event)) + ")");
  return out;
}

bool ToRtr(Side& s, Cep cep) {
  abi::CepGetRtrAttributesOut rtr{};
  return Expect(user::proxy::CepGetRtrAttributes(s.ca.device, {cep}, rtr), "RTR attributes") &&
         Expect(s.qp.Modify(rtr.attributes), "QP to RTR");
}
bool ToRtsFromRtr(Side& s, Cep cep) {
  abi::CepGetRtsAttributesOut rts{};
  return Expect(user::proxy::CepGetRtsAttributes(s.ca.device, {cep}, rts), "RTS attributes") &&
         Expect(s.qp.Modify(rts.attributes), "QP to RTS");
}
bool ToRts(Side& s, Cep cep) { return ToRtr(s, cep) && ToRtsFromRtr(s, cep); }

void PostRecv(Side& s) {
  abi::RecvWorkRequest wr{};
  wr.wr_id = 1;
  wr.num_sge = 1;
  wr.sge[0] = {reinterpret_cast<uint64_t>(s.buffer.data()) + 2048, 64, s.lkey};
  Expect(s.qp.PostRecv(wr), "PostRecv");
}

void SendText(Side& s, const char* text) {
  std::memcpy(s.buffer.data(), text, std::strlen(text) + 1);
  abi::SendWorkRequest wr{};
  wr.wr_id = 2;
  wr.wr_type = abi::WrType::SEND;
  wr.send_flags = abi::SendFlags::SIGNALED;
  wr.num_sge = 1;
  wr.sge[0] = {reinterpret_cast<uint64_t>(s.buffer.data()),
               static_cast<uint32_t>(std::strlen(text) + 1), s.lkey};
  Expect(s.qp.PostSend(wr), std::string("PostSend ") + text);
}

// The send's and the receive's completions, in any order; the received text.
std::string Exchange(Side& s) {
  for (int i = 0; i < 2; ++i) {
    abi::WorkCompletion wc{};
    Expect(s.qp.PollOne(&wc, std::chrono::seconds(20)), "PollOne");
    Check(wc.status == abi::WcStatus::SUCCESS, "completion SUCCESS");
  }
  return std::string(reinterpret_cast<const char*>(s.buffer.data()) + 2048);
}

void Disconnected(Side& s, Cep cep) {
  NextEvent(s, cep, abi::CepEventType::TIMEWAIT_EXIT, "time-wait over");
  Expect(user::proxy::DestroyCep(s.ca.device, {cep}), "DestroyCep");
}

int Server(const user::AlFile& al, uint64_t guid, uint64_t service_id, bool dies) {
  Side s;
  if (!OpenSide(al, guid, &s)) return integration::FinishTranscript();
  abi::CreateCepOut listen{};
  Expect(user::proxy::CreateCep(s.ca.device, {s.ca.al, 0x5E}, listen), "CreateCep (listen)");
  abi::CepListenIn in{};
  in.cep = listen.cep;
  in.service_id = htobe64(service_id);
  Expect(user::proxy::CepListen(s.ca.device, in), "CepListen");
  std::printf("listening\n");
  std::fflush(stdout);
  const auto req = NextEvent(s, listen.cep, abi::CepEventType::REQ_RECEIVED, "REQ received");
  const Cep cep = req.new_cep;
  Check(cep.value != 0 && req.context == 0x5E, "new CEP with the listen's context");
  PostRecv(s);
  abi::CepSendRepIn rep{};
  rep.cep = cep;
  rep.qp = s.qp.qp();
  rep.params.starting_psn = 0x3333;
  rep.params.responder_resources = 1;
  rep.params.initiator_depth = 1;
  rep.params.rnr_retry_count = 7;
  Expect(user::proxy::CepSendRep(s.ca.device, rep, {}), "CepSendRep");
  // Ready to receive before the RTU: the peer may send as soon as it has sent the RTU.
  ToRtr(s, cep);
  NextEvent(s, cep, abi::CepEventType::RTU_RECEIVED, "RTU received");
  ToRtsFromRtr(s, cep);
  SendText(s, "world");
  Check(Exchange(s) == "hello", "received hello");
  if (dies) {
    std::printf("established\n");
    std::fflush(stdout);
    for (;;) pause();  // until killed, with the connection up
  }
  NextEvent(s, cep, abi::CepEventType::DREQ_RECEIVED, "DREQ received");
  Expect(user::proxy::CepSendDrep(s.ca.device, {cep, 0, 0}, {}), "CepSendDrep");
  Disconnected(s, cep);
  Expect(user::proxy::DestroyCep(s.ca.device, {listen.cep}), "DestroyCep (listen)");
  return integration::FinishTranscript();
}

int Client(const user::AlFile& al, uint64_t guid, uint64_t server_guid, uint64_t service_id,
           bool waits) {
  Side s;
  if (!OpenSide(al, guid, &s)) return integration::FinishTranscript();
  user::CaFile server_ca;
  uint16_t server_lid = 0;
  uint8_t state = 0;
  Expect(user::OpenCaByGuid(al, server_guid, 0, &server_ca), "OpenCa (server's)");
  Expect(integration::PortLid(server_ca, &server_lid, &state), "server's LID");
  abi::CreateCepOut cep{};
  Expect(user::proxy::CreateCep(s.ca.device, {s.ca.al, 0xC1}, cep), "CreateCep");
  // An SA PathRecord (IBA 15.2.5.16), the fields the CM uses: DLID @40, SLID @42, P_Key @50,
  // MTU @54 and Rate @55 (low 6 bits each).
  std::array<uint8_t, 64> record{};
  record[40] = static_cast<uint8_t>(server_lid >> 8);
  record[41] = static_cast<uint8_t>(server_lid);
  record[42] = static_cast<uint8_t>(s.lid >> 8);
  record[43] = static_cast<uint8_t>(s.lid);
  record[50] = record[51] = 0xFF;
  record[54] = static_cast<uint8_t>(abi::PathMtu::MTU_1024);
  record[55] = 3;  // 2.5 Gb/s
  abi::CepSendReqIn req{};
  req.cep = cep.cep;
  req.qp = s.qp.qp();
  req.params.service_id = htobe64(service_id);
  std::memcpy(req.params.primary_path, record.data(), record.size());
  req.params.starting_psn = 0x4444;
  req.params.responder_resources = 1;
  req.params.initiator_depth = 1;
  req.params.remote_cm_response_timeout = 20;
  req.params.local_cm_response_timeout = 20;
  req.params.retry_count = 7;
  req.params.rnr_retry_count = 7;
  req.params.max_cm_retries = 3;
  Expect(user::proxy::CepSendReq(s.ca.device, req, {}), "CepSendReq");
  NextEvent(s, cep.cep, abi::CepEventType::REP_RECEIVED, "REP received");
  PostRecv(s);
  ToRts(s, cep.cep);
  Expect(user::proxy::CepSendRtu(s.ca.device, {cep.cep, 0, 0}, {}), "CepSendRtu");
  SendText(s, "hello");
  Check(Exchange(s) == "world", "received world");
  if (waits) {
    NextEvent(s, cep.cep, abi::CepEventType::DREQ_RECEIVED, "DREQ received (the peer died)");
    Expect(user::proxy::CepSendDrep(s.ca.device, {cep.cep, 0, 0}, {}), "CepSendDrep");
  } else {
    Expect(user::proxy::CepSendDreq(s.ca.device, {cep.cep, 0, 0}, {}), "CepSendDreq");
    NextEvent(s, cep.cep, abi::CepEventType::DREP_RECEIVED, "DREP received");
  }
  Disconnected(s, cep.cep);
  return integration::FinishTranscript();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return 2;
  user::AlFile al;
  if (!Expect(user::OpenAl(argv[1], &al), "OpenAl")) return 1;
  abi::GetCaGuidsOut guids_out{};
  uint64_t guids[64] = {};
  Expect(user::proxy::GetCaGuids(al.device, {al.al}, guids_out, guids), "GetCaGuids");
  if (!Check(guids_out.num_cas >= 2, "two CAs")) return 1;
  const uint64_t service_id = std::strtoull(argv[3], nullptr, 16);
  const std::string role = argv[2];
  const int code = role.starts_with("server")
                       ? Server(al, guids[1], service_id, role == "server-dies")
                       : Client(al, guids[0], guids[1], service_id, role == "client-waits");
  user::CloseAl(&al);
  return code;
}
