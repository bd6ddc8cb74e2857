#include "object_maker.h"

#include <endian.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string_view>

#include "far_end.h"
#include "softib/abi/runtime_ioctls.h"
#include "softib/abi/verbs_al.h"
#include "softib/abi/verbs_ca.h"
#include "softib/abi/verbs_cm.h"
#include "softib/abi/verbs_cq.h"
#include "softib/abi/verbs_ioc.h"
#include "softib/abi/verbs_mcast.h"
#include "softib/abi/verbs_mr_mw.h"
#include "softib/abi/verbs_pd_av.h"
#include "softib/abi/verbs_qp.h"
#include "softib/abi/verbs_srq.h"

namespace softib::conformance {

using abi::ObjectType;
using abi::Status;

void StoreLe(std::vector<uint8_t>& buf, uint32_t offset, uint32_t size, uint64_t value) {
  for (uint32_t i = 0; i < size && offset + i < buf.size(); ++i) {
    buf[offset + i] = static_cast<uint8_t>(value >> (8 * std::min(i, 7u)));
  }
}

uint64_t LoadLe(std::span<const uint8_t> buf, uint32_t offset, uint32_t size) {
  uint64_t value = 0;
  for (uint32_t i = 0; i < size && i < 8 && offset + i < buf.size(); ++i) {
    value |= uint64_t{buf[offset + i]} << (8 * i);
  }
  return value;
}

const char* ExemptionOfVerb(uint32_t ordinal) {
  // CiCall (IBAL ib_ci_call): softib's HCA driver defines no vendor command, so every
  // command answers UNSUPPORTED (idl/verbs_ca.idl). Its checks before the handler are tested
  // like any verb's.
  if (ordinal == 0x0107) return "CiCall: the HCA driver defines no vendor command";
  return nullptr;
}

// Every object type is made by the harness: the CM's endpoints in each state through the
// far end (FarEnd), the SA client's objects answered by the harness's SA (SaResponder).
const char* ExemptionOfObject(ObjectType) { return nullptr; }

const VerbInfo* FindVerbByIoctl(uint32_t code) {
  for (const VerbInfo& verb : fuzz::AllVerbs()) {
    if (verb.ioctl == code && code != 0) return &verb;
  }
  return nullptr;
}

namespace {

template <typename T>
T As(const std::vector<uint8_t>& input) {
  T value{};
  if (!input.empty()) std::memcpy(&value, input.data(), std::min(sizeof(T), input.size()));
  return value;
}

template <typename T>
void Put(std::vector<uint8_t>& input, const T& value) {
  if (!input.empty()) std::memcpy(input.data(), &value, std::min(sizeof(T), input.size()));
}

template <typename T>
T OutOf(const CallResult& r) {
  T value{};
  if (!r.output.empty()) std::memcpy(&value, r.output.data(), std::min(sizeof(T), r.output.size()));
  return value;
}

constexpr abi::AccessFlags kMrAccess = abi::AccessFlags::LOCAL_WRITE |
                                       abi::AccessFlags::REMOTE_WRITE |
                                       abi::AccessFlags::REMOTE_READ | abi::AccessFlags::MW_BIND;

constexpr uint32_t kQueueDepth = 16;
constexpr uint16_t kMlid = 0xC001;

abi::QpCreateParams QpParams(abi::QpType type, bool with_srq) {
  abi::QpCreateParams p{};
  p.qp_type = type;
  p.sq_signaled = 1;
  p.caps.sq_depth = kQueueDepth;
  p.caps.rq_depth = with_srq ? 0 : kQueueDepth;
  p.caps.sq_sge = 1;
  p.caps.rq_sge = with_srq ? 0 : 1;
  return p;
}

abi::Gid MulticastGid() {
  abi::Gid g{};
  g.raw[0] = 0xFF;
  g.raw[1] = 0x12;
  g.raw[2] = 0x60;
  g.raw[3] = 0x1B;
  g.raw[15] = 0x01;
  return g;
}

uint32_t DefaultOutputLength(const VerbInfo& verb) {
  return verb.out_size + std::min(verb.out_max, 16u) * verb.out_elem_size;
}

}  // namespace

uint64_t ObjectMaker::AliasQp(bool fresh) {
  if (alias_qp_ != 0 && !fresh) return alias_qp_;
  abi::GetSpecialQpIn in{};
  in.pd.value = Get(ObjectType::Pd);
  in.send_cq.value = Get(ObjectType::Cq);
  in.recv_cq.value = in.send_cq.value;
  uint16_t lid = 0;
  if (!PortInfo(&lid, &in.port_guid)) return 0;
  in.params = QpParams(abi::QpType::GSI_ALIAS, false);
  const CallResult r = RunTyped("GetSpecialQp", in, sizeof(abi::GetSpecialQpOut));
  if (r.status != Status::SUCCESS) return 0;
  const uint64_t qp = OutOf<abi::GetSpecialQpOut>(r).qp.value;
  aliases_.insert(qp);
  if (!fresh) alias_qp_ = qp;
  return qp;
}

// A GMP of the vendor class 0x09 to this port's own QP1.
static std::vector<uint8_t> SendMadRequest(uint64_t svc, uint16_t lid, bool response_expected) {
  abi::SendMadIn in{};
  in.svc.value = svc;
  in.params.remote_qpn = 1;
  in.params.remote_qkey = htobe32(0x80010000);
  in.params.remote_lid = lid;
  in.params.response_expected = response_expected ? 1 : 0;
  in.params.timeout_ms = response_expected ? 600000 : 0;
  in.mad_length = 256;
  std::vector<uint8_t> input(sizeof(in) + 256, 0);
  std::memcpy(input.data(), &in, sizeof(in));
  uint8_t* mad = input.data() + sizeof(in);
  mad[0] = 1;
  mad[1] = 0x09;
  mad[2] = 1;
  mad[3] = 0x01;  // Get
  return input;
}

uint64_t ObjectMaker::PendingSend() {
  uint16_t lid = 0;
  uint64_t guid = 0;
  const uint64_t svc = Get(ObjectType::MadSvc);
  if (svc == 0 || !PortInfo(&lid, &guid)) return 0;
  const std::vector<uint8_t> input = SendMadRequest(svc, lid, true);
  const CallResult r = Run("SendMad", input, sizeof(abi::SendMadOut));
  return r.status == Status::SUCCESS ? OutOf<abi::SendMadOut>(r).send_id : 0;
}

uint64_t ObjectMaker::InitQp(abi::QpType type) {
  const bool was_ud = ud_qps_;
  ud_qps_ = type == abi::QpType::UD;
  const uint64_t qp = Make(ObjectType::Qp);
  ud_qps_ = was_ud;
  if (qp == 0 || type == abi::QpType::UD) return qp;
  abi::ModifyQpIn in{};
  in.qp.value = qp;
  in.attributes.mask = abi::QpAttrMask::STATE | abi::QpAttrMask::PKEY_INDEX |
                       abi::QpAttrMask::PORT | abi::QpAttrMask::ACCESS_FLAGS;
  in.attributes.state = abi::QpState::INIT;
  in.attributes.port_num = 1;
  in.attributes.access_flags = abi::AccessFlags::REMOTE_WRITE | abi::AccessFlags::REMOTE_READ;
  return RunTyped("ModifyQp", in, 0).status == Status::SUCCESS ? qp : 0;
}

// A PathRecord Get (the Override below) whose answer is in the port's path cache: the first
// one of the port goes to the harness's SA, and its response is awaited (which stores the
// answer in the cache); the request returned was then answered from the cache as it was sent,
// so GetSaResponse finds its response at once through every path.
uint64_t ObjectMaker::AnsweredSaRequest() {
  const uint64_t first = CreateByVerb(ObjectType::SaReq);
  if (first == 0) return 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  abi::GetSaResponseIn in{};
  in.req.value = first;
  CallResult r;
  do {
    r = RunTyped("GetSaResponse", in, sizeof(abi::GetSaResponseOut) + 256);
  } while (r.status == Status::CANCELED && std::chrono::steady_clock::now() < deadline);
  if (r.status != Status::SUCCESS) return 0;
  return CreateByVerb(ObjectType::SaReq);
}

bool ObjectMaker::NextCepEvent(uint64_t cep, abi::CepEventType type, uint64_t* new_cep) {
  // Each call pends until an event arrives or the caller's grace ends (then: CANCELED).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  abi::CepGetEventIn in{};
  in.cep.value = cep;
  CallResult r;
  do {
    r = RunTyped("CepGetEvent", in, sizeof(abi::CepGetEventOut));
  } while (r.status == Status::CANCELED && std::chrono::steady_clock::now() < deadline);
  if (r.status != Status::SUCCESS) return false;
  const auto out = OutOf<abi::CepGetEventOut>(r);
  if (out.event != type) {
    last_failure_ = Status::INVALID_STATE;
    last_failed_verb_ = "CepGetEvent (another event than the exchange's next)";
    return false;
  }
  if (new_cep != nullptr) *new_cep = out.new_cep.value;
  return true;
}

uint64_t ObjectMaker::MakeCep(CepStage stage) {
  uint16_t lid = 0;
  uint64_t guid = 0;
  if (far_end_ == nullptr || !far_end_->Open() || !PortInfo(&lid, &guid)) {
    last_failure_ = Status::UNSUPPORTED;
    last_failed_verb_ = "(no far end for the CM exchange)";
    return 0;
  }
  const uint64_t service = FreshServiceId();
  if (stage == CepStage::kReqReceived || stage == CepStage::kSidrReqReceived) {
    // Passive: we listen, the far end asks.
    const uint64_t listen = Make(ObjectType::Cep);
    abi::CepListenIn in{};
    in.cep.value = listen;
    in.service_id = htobe64(service);
    if (listen == 0 || RunTyped("CepListen", in, 0).status != Status::SUCCESS) return 0;
    uint64_t far_cep = 0;
    const bool sidr = stage == CepStage::kSidrReqReceived;
    const bool sent = sidr ? far_end_->SendSidrReq(service, lid, &far_cep)
                           : far_end_->SendReq(service, lid, &far_cep);
    uint64_t cep = 0;
    const auto event =
        sidr ? abi::CepEventType::SIDR_REQ_RECEIVED : abi::CepEventType::REQ_RECEIVED;
    return sent && NextCepEvent(listen, event, &cep) ? cep : 0;
  }
  // Active: the far end listens and answers our REQ with a REP.
  uint64_t far_listen = 0, far_cep = 0;
  if (!far_end_->Listen(service, &far_listen)) return 0;
  const uint64_t cep = Make(ObjectType::Cep);
  abi::CepSendReqIn req{};
  req.cep.value = cep;
  req.qp.value = InitQp(abi::QpType::RC);
  req.params = HarnessReqParams(service, lid, far_end_->lid());
  if (cep == 0 || req.qp.value == 0 || RunTyped("CepSendReq", req, 0).status != Status::SUCCESS) {
    return 0;
  }
  if (!far_end_->Expect(far_listen, abi::CepEventType::REQ_RECEIVED, &far_cep) ||
      !far_end_->SendRep(far_cep) || !NextCepEvent(cep, abi::CepEventType::REP_RECEIVED)) {
    return 0;
  }
  if (stage == CepStage::kRepReceived) return cep;
  abi::CepSendRtuIn rtu{};
  rtu.cep.value = cep;
  if (RunTyped("CepSendRtu", rtu, 0).status != Status::SUCCESS) return 0;
  if (stage == CepStage::kEstablished) return cep;
  if (!far_end_->Expect(far_cep, abi::CepEventType::RTU_RECEIVED)) return 0;
  if (stage == CepStage::kDreqReceived) {
    return far_end_->SendDreq(far_cep) && NextCepEvent(cep, abi::CepEventType::DREQ_RECEIVED) ? cep
                                                                                              : 0;
  }
  return far_end_->SendLap(far_cep, lid) && NextCepEvent(cep, abi::CepEventType::LAP_RECEIVED) ? cep
                                                                                               : 0;
}

void ObjectMaker::Clear() {
  cache_.clear();
  alias_qp_ = 0;
  aliases_.clear();
  have_port_ = false;
  ud_qps_ = false;
}

CallResult ObjectMaker::Run(const char* name, std::span<const uint8_t> input,
                            uint32_t output_length) {
  const VerbInfo* verb = fuzz::FindVerbByName(name);
  CallResult r;
  if (verb == nullptr) {
    r.status = Status::UNSUPPORTED;
  } else {
    r = env_.Send(*verb, input, std::max(output_length, verb->out_size));
  }
  if (r.status != Status::SUCCESS) {
    last_failure_ = r.status;
    last_failed_verb_ = name;
  }
  return r;
}

bool ObjectMaker::PortInfo(uint16_t* lid, uint64_t* port_guid_be) {
  if (!have_port_) {
    abi::QueryCaIn in{};
    in.ca.value = Get(ObjectType::Ca);
    const VerbInfo* verb = fuzz::FindVerbByName("QueryCa");
    const CallResult r = Run("QueryCa", {reinterpret_cast<const uint8_t*>(&in), sizeof(in)},
                             verb->out_size + 8 * verb->out_elem_size);
    if (r.status != Status::SUCCESS ||
        r.output.size() < verb->out_size + sizeof(abi::PortAttributes)) {
      return false;
    }
    abi::PortAttributes port{};
    std::memcpy(&port, r.output.data() + verb->out_size, sizeof(port));
    lid_ = port.lid;
    port_guid_be_ = port.port_guid;
    have_port_ = true;
  }
  *lid = lid_;
  *port_guid_be = port_guid_be_;
  return true;
}

uint64_t ObjectMaker::Get(ObjectType type) {
  if (auto it = cache_.find(type); it != cache_.end() && it->second != 0) return it->second;
  const uint64_t handle = Make(type);
  if (handle != 0) cache_[type] = handle;
  return handle;
}

uint64_t ObjectMaker::Make(ObjectType type) { return Create(type); }

uint64_t ObjectMaker::Create(ObjectType type) {
  switch (type) {
    case ObjectType::Al: {
      if (env_.user_mode()) {
        const CallResult r = RunTyped("GetFileAl", abi::GetFileAlIn{}, sizeof(abi::GetFileAlOut));
        return r.status == Status::SUCCESS ? OutOf<abi::GetFileAlOut>(r).al.value : 0;
      }
      abi::OpenAlIn in{};
      in.interface_version = abi::kAlInterfaceVersion;
      const CallResult r = RunTyped("OpenAl", in, sizeof(abi::OpenAlOut));
      return r.status == Status::SUCCESS ? OutOf<abi::OpenAlOut>(r).al.value : 0;
    }
    case ObjectType::Ca: {
      abi::OpenCaIn in{};
      in.al.value = Get(ObjectType::Al);
      in.ca_guid = htobe64(ca_guid_);
      const CallResult r = RunTyped("OpenCa", in, sizeof(abi::OpenCaOut));
      return r.status == Status::SUCCESS ? OutOf<abi::OpenCaOut>(r).ca.value : 0;
    }
    case ObjectType::Pd: {
      abi::AllocPdIn in{};
      in.ca.value = Get(ObjectType::Ca);
      in.type = abi::PdType::NORMAL;
      const CallResult r = RunTyped("AllocPd", in, sizeof(abi::AllocPdOut));
      return r.status == Status::SUCCESS ? OutOf<abi::AllocPdOut>(r).pd.value : 0;
    }
    case ObjectType::Av: {
      abi::CreateAvIn in{};
      in.pd.value = Get(ObjectType::Pd);
      uint64_t guid = 0;
      in.attributes.port_num = 1;
      if (!PortInfo(&in.attributes.dlid, &guid)) return 0;
      const CallResult r = RunTyped("CreateAv", in, sizeof(abi::CreateAvOut));
      return r.status == Status::SUCCESS ? OutOf<abi::CreateAvOut>(r).av.value : 0;
    }
    case ObjectType::Cq: {
      abi::CreateCqIn in{};
      in.ca.value = Get(ObjectType::Ca);
      in.size = kQueueDepth;
      const CallResult r = RunTyped("CreateCq", in, sizeof(abi::CreateCqOut));
      return r.status == Status::SUCCESS ? OutOf<abi::CreateCqOut>(r).cq.value : 0;
    }
    case ObjectType::Srq: {
      abi::CreateSrqIn in{};
      in.pd.value = Get(ObjectType::Pd);
      in.attributes.max_wr = kQueueDepth;
      in.attributes.max_sge = 1;
      const CallResult r = RunTyped("CreateSrq", in, sizeof(abi::CreateSrqOut));
      return r.status == Status::SUCCESS ? OutOf<abi::CreateSrqOut>(r).srq.value : 0;
    }
    case ObjectType::Qp: {
      if (alias_qps_) return AliasQp(true);
      abi::CreateQpIn in{};
      in.pd.value = Get(ObjectType::Pd);
      in.send_cq.value = Get(ObjectType::Cq);
      in.recv_cq.value = in.send_cq.value;
      const auto srq = cache_.find(ObjectType::Srq);
      const bool with_srq = srq != cache_.end() && srq->second != 0 && !ud_qps_;
      if (with_srq) in.srq.value = srq->second;
      in.params = QpParams(ud_qps_ ? abi::QpType::UD : abi::QpType::RC, with_srq);
      const CallResult r = RunTyped("CreateQp", in, sizeof(abi::CreateQpOut));
      return r.status == Status::SUCCESS ? OutOf<abi::CreateQpOut>(r).qp.value : 0;
    }
    case ObjectType::Mr: {
      abi::RegMemIn in{};
      in.pd.value = Get(ObjectType::Pd);
      in.region.vaddr = reinterpret_cast<uintptr_t>(buffer_.data());
      in.region.length = buffer_.size();
      in.region.access = kMrAccess;
      const CallResult r = RunTyped("RegMem", in, sizeof(abi::RegMemOut));
      return r.status == Status::SUCCESS ? OutOf<abi::RegMemOut>(r).mr.value : 0;
    }
    case ObjectType::Mw: {
      abi::CreateMwIn in{};
      in.pd.value = Get(ObjectType::Pd);
      in.type = abi::MwType::TYPE1;
      const CallResult r = RunTyped("CreateMw", in, sizeof(abi::CreateMwOut));
      return r.status == Status::SUCCESS ? OutOf<abi::CreateMwOut>(r).mw.value : 0;
    }
    case ObjectType::SaReq:
      return AnsweredSaRequest();
    case ObjectType::Mcast: {
      abi::AttachMcastIn in{};
      if (cache_.count(ObjectType::Qp) == 0) {
        const bool was_ud = ud_qps_;
        ud_qps_ = true;
        Pin(ObjectType::Qp, Make(ObjectType::Qp));
        ud_qps_ = was_ud;
      }
      in.qp.value = Get(ObjectType::Qp);
      in.mgid = MulticastGid();
      in.mlid = kMlid;
      const CallResult r = RunTyped("AttachMcast", in, sizeof(abi::AttachMcastOut));
      return r.status == Status::SUCCESS ? OutOf<abi::AttachMcastOut>(r).mcast.value : 0;
    }
    default:
      break;
  }
  return CreateByVerb(type);
}

// Objects of the MAD services, the SA client, the CM and PnP registrations: the first verb
// that creates the type, with its defaults.
uint64_t ObjectMaker::CreateByVerb(ObjectType type) {
  for (const VerbInfo& verb : fuzz::AllVerbs()) {
    if (!verb.has_creates || verb.creates != type || !env_.Reaches(verb)) continue;
    std::vector<uint8_t> input;
    uint32_t output_length = 0;
    if (!Prepare(verb, input, output_length)) return 0;
    const CallResult r = Run(verb.name, input, output_length);
    if (r.status != Status::SUCCESS) return 0;
    return LoadLe(r.output, verb.creates_offset, 8);
  }
  last_failure_ = Status::UNSUPPORTED;
  last_failed_verb_ = "(no creating verb on this path)";
  return 0;
}

bool ObjectMaker::Destroy(ObjectType type, uint64_t handle) {
  for (const VerbInfo& verb : fuzz::AllVerbs()) {
    if (!verb.has_destroys || verb.destroys != type || !env_.Reaches(verb)) continue;
    std::vector<uint8_t> input(verb.in_size, 0);
    for (const fuzz::FieldInfo& f : verb.fields) {
      if (f.kind == fuzz::FieldKind::kHandle && f.access == fuzz::FieldAccess::kDestroy) {
        StoreLe(input, f.offset, 8, handle);
      }
    }
    for (auto& [t, h] : cache_) {
      if (h == handle) h = 0;
    }
    return Run(verb.name, input, verb.out_size).status == Status::SUCCESS;
  }
  return false;
}

bool ObjectMaker::Defaults(const VerbInfo& verb, std::vector<uint8_t>& input,
                           uint32_t& output_length) {
  input.assign(verb.in_size, 0);
  output_length = DefaultOutputLength(verb);
  for (const fuzz::FieldInfo& f : verb.fields) {
    if (f.elem) continue;  // trailing arrays start empty
    switch (f.kind) {
      case fuzz::FieldKind::kEnum:
        if (!f.values.empty()) StoreLe(input, f.offset, f.size, f.values.front());
        break;
      case fuzz::FieldKind::kHandle: {
        if (f.optional) break;
        const uint64_t h = f.access == fuzz::FieldAccess::kDestroy ? Make(f.object) : Get(f.object);
        // An exempted object stays null: the request still passes every check before the
        // handle lookup, and answers that object's invalid-handle status.
        if (h == 0 && ExemptionOfObject(f.object) == nullptr) return false;
        if (h == 0 && missing_.empty()) {
          missing_ = std::string("a ") + abi::ToString(f.object) + " (" +
                     ExemptionOfObject(f.object) + ")";
        }
        StoreLe(input, f.offset, 8, h);
        break;
      }
      default:
        break;
    }
  }
  return true;
}

bool ObjectMaker::Prepare(const VerbInfo& verb, std::vector<uint8_t>& input,
                          uint32_t& output_length) {
  const std::string_view name = verb.name;
  if ((name == "AttachMcast" || name == "JoinMcast") && cache_.count(ObjectType::Qp) == 0) {
    const bool was_ud = ud_qps_;
    ud_qps_ = true;
    Pin(ObjectType::Qp, Make(ObjectType::Qp));
    ud_qps_ = was_ud;
  }
  missing_.clear();
  if (!Defaults(verb, input, output_length)) return false;
  Override(verb, input);
  // Room for the answer's record (a PathRecord: SendSaRequest's Override).
  if (name == "GetSaResponse") output_length = verb.out_size + 256;
  return true;
}

// The values that make each request mean something: sizes, ports, the registered buffer.
void ObjectMaker::Override(const VerbInfo& verb, std::vector<uint8_t>& input) {
  const std::string_view name = verb.name;
  const uint64_t guid_be = htobe64(ca_guid_);
  const uint64_t buffer = reinterpret_cast<uintptr_t>(buffer_.data());
  uint16_t lid = 0;
  uint64_t port_guid_be = 0;
  if (name == "OpenAl") {
    auto in = As<abi::OpenAlIn>(input);
    in.interface_version = abi::kAlInterfaceVersion;
    Put(input, in);
  } else if (name == "OpenCa") {
    auto in = As<abi::OpenCaIn>(input);
    in.ca_guid = guid_be;
    Put(input, in);
  } else if (name == "ResolveCaDevice") {
    auto in = As<abi::ResolveCaDeviceIn>(input);
    in.ca_guid = guid_be;
    Put(input, in);
  } else if (name == "QueryGidTable" || name == "QueryPkeyTable") {
    input[8] = 1;  // port_num, after the CA handle (both verbs)
  } else if (name == "ModifyCa") {
    auto in = As<abi::ModifyCaIn>(input);
    in.port_num = 1;
    Put(input, in);
  } else if (name == "LocalMad") {
    auto in = As<abi::LocalMadIn>(input);
    in.port_num = 1;
    // SubnGet(NodeInfo), LID-routed: base version 1, class 0x01, version 1, method Get.
    in.request[0] = 1;
    in.request[1] = 0x01;
    in.request[2] = 1;
    in.request[3] = 0x01;
    in.request[16] = 0x00;
    in.request[17] = 0x11;
    Put(input, in);
  } else if (name == "CreateAv" || name == "ModifyAv") {
    abi::AddressVector av{};
    av.port_num = 1;
    if (PortInfo(&lid, &port_guid_be)) av.dlid = lid;
    std::memcpy(input.data() + 8, &av, sizeof(av));
  } else if (name == "CreateIoc") {
    auto in = As<abi::CreateIocIn>(input);
    in.profile[7] = 0x01;  // IOControllerProfile GUID 1: a controller needs one
    Put(input, in);
  } else if (name == "CreateCq") {
    auto in = As<abi::CreateCqIn>(input);
    in.size = kQueueDepth;
    Put(input, in);
  } else if (name == "ModifyCq") {
    auto in = As<abi::ModifyCqIn>(input);
    in.size = 2 * kQueueDepth;
    Put(input, in);
  } else if (name == "CreateSrq") {
    auto in = As<abi::CreateSrqIn>(input);
    in.attributes.max_wr = kQueueDepth;
    in.attributes.max_sge = 1;
    Put(input, in);
  } else if (name == "ModifySrq") {
    auto in = As<abi::ModifySrqIn>(input);
    in.mask = abi::SrqAttrMask::LIMIT;
    in.attributes.srq_limit = 4;
    Put(input, in);
  } else if (name == "CreateQp") {
    auto in = As<abi::CreateQpIn>(input);
    in.params = QpParams(abi::QpType::RC, false);
    Put(input, in);
  } else if (name == "GetSpecialQp") {
    auto in = As<abi::GetSpecialQpIn>(input);
    if (PortInfo(&lid, &port_guid_be)) in.port_guid = port_guid_be;
    // The AL owns QP0/QP1; clients get aliases (IBAL ib_get_spl_qp).
    in.params = QpParams(abi::QpType::GSI_ALIAS, false);
    Put(input, in);
  } else if (name == "SendMad") {
    const uint64_t svc = As<abi::SendMadIn>(input).svc.value;
    if (PortInfo(&lid, &port_guid_be)) input = SendMadRequest(svc, lid, false);
  } else if (name == "CancelMad") {
    auto in = As<abi::CancelMadIn>(input);
    in.send_id = PendingSend();
    Put(input, in);
  } else if (name == "RegMadSvc") {
    auto in = As<abi::RegMadSvcIn>(input);
    if (aliases_.count(in.qp.value) == 0) in.qp.value = AliasQp();
    in.params.mgmt_class = 0x09;  // a vendor class, no unsolicited methods: never busy
    in.params.mgmt_version = 1;
    Put(input, in);
  } else if (name == "ModifyQp") {
    auto in = As<abi::ModifyQpIn>(input);
    in.attributes.mask = abi::QpAttrMask::STATE | abi::QpAttrMask::PKEY_INDEX |
                         abi::QpAttrMask::PORT | abi::QpAttrMask::ACCESS_FLAGS;
    in.attributes.state = abi::QpState::INIT;
    in.attributes.port_num = 1;
    in.attributes.access_flags = abi::AccessFlags::REMOTE_WRITE;
    Put(input, in);
  } else if (name == "RegMem") {
    auto in = As<abi::RegMemIn>(input);
    in.region.vaddr = buffer;
    in.region.length = buffer_.size();
    in.region.access = kMrAccess;
    Put(input, in);
  } else if (name == "RegPhys") {
    auto in = As<abi::RegPhysIn>(input);
    in.length = buffer_.size();
    in.iova = buffer;
    in.hca_page_size = 4096;
    in.access = abi::AccessFlags::LOCAL_WRITE;
    in.num_ranges = 1;
    Put(input, in);
    abi::PhysRange range{buffer, buffer_.size()};
    const auto* bytes = reinterpret_cast<const uint8_t*>(&range);
    input.insert(input.end(), bytes, bytes + sizeof(range));
  } else if (name == "ReregMem") {
    auto in = As<abi::ReregMemIn>(input);
    in.flags = abi::MrReregFlags::ACCESS;
    in.region.access = abi::AccessFlags::LOCAL_WRITE;
    Put(input, in);
  } else if (name == "ReregPhys") {
    auto in = As<abi::ReregPhysIn>(input);
    in.flags = abi::MrReregFlags::ACCESS;
    in.access = abi::AccessFlags::LOCAL_WRITE;
    Put(input, in);
  } else if (name == "RegShared") {
    auto in = As<abi::RegSharedIn>(input);
    in.access = abi::AccessFlags::LOCAL_WRITE;
    in.vaddr = buffer;
    Put(input, in);
  } else if (name == "AttachMcast") {
    auto in = As<abi::AttachMcastIn>(input);
    in.mgid = MulticastGid();
    in.mlid = kMlid;
    Put(input, in);
  } else if (name.starts_with("Cep") || name == "SendSaRequest" || name == "PathCacheControl" ||
             name == "SubscribeReport" || name == "RegisterService" || name == "JoinMcast") {
    OverrideCmSa(verb, input);
  }
}

// The CM's verbs name an endpoint in the state the verb needs (MakeCep) and meaningful
// parameters; the SA client's name port 1 and records the harness's SA answers.
void ObjectMaker::OverrideCmSa(const VerbInfo& verb, std::vector<uint8_t>& input) {
  const std::string_view name = verb.name;
  uint16_t lid = 0;
  uint64_t port_guid_be = 0;
  if (!PortInfo(&lid, &port_guid_be)) return;
  abi::Gid port_gid{};
  port_gid.raw[0] = 0xFE;  // the default subnet prefix fe80::/64
  port_gid.raw[1] = 0x80;
  std::memcpy(port_gid.raw + 8, &port_guid_be, 8);
  if (name == "SendSaRequest") {
    // A PathRecord Get from this port to itself (answered from the path cache once the SA
    // answered it: AnsweredSaRequest).
    auto in = As<abi::SendSaRequestIn>(input);
    in.port_guid = port_guid_be;
    in.component_mask = (1ull << 2) | (1ull << 3);  // DGID, SGID
    in.timeout_ms = 1000;
    in.retry_count = 3;
    in.attribute_id = 0x35;  // PathRecord
    in.method = 0x01;        // Get
    in.attribute_length = 64;
    Put(input, in);
    input.resize(sizeof(in) + 64, 0);
    std::memcpy(input.data() + sizeof(in) + 8, port_gid.raw, 16);   // DGID
    std::memcpy(input.data() + sizeof(in) + 24, port_gid.raw, 16);  // SGID
  } else if (name == "PathCacheControl") {
    auto in = As<abi::PathCacheControlIn>(input);
    in.port_guid = port_guid_be;
    Put(input, in);
  } else if (name == "SubscribeReport") {
    auto in = As<abi::SubscribeReportIn>(input);
    in.port_guid = port_guid_be;
    in.timeout_ms = 1000;
    in.retry_count = 3;
    in.trap_number = 64;  // GID in service
    Put(input, in);
  } else if (name == "RegisterService") {
    auto in = As<abi::RegisterServiceIn>(input);
    in.port_guid = port_guid_be;
    in.component_mask = (1ull << 0) | (1ull << 1);  // ServiceID, ServiceGID
    in.timeout_ms = 1000;
    in.retry_count = 3;
    const uint64_t service_be = htobe64(0x0500000000000000ull);
    std::memcpy(in.record, &service_be, 8);        // ServiceID
    std::memcpy(in.record + 8, port_gid.raw, 16);  // ServiceGID
    in.record[24] = in.record[25] = 0xFF;          // ServiceP_Key
    Put(input, in);                                // ServiceLease 0: never renewed
  } else if (name == "JoinMcast") {
    auto in = As<abi::JoinMcastIn>(input);
    in.port_guid = port_guid_be;
    in.component_mask = (1ull << 0) | (1ull << 1) | (1ull << 16);  // MGID, PortGID, JoinState
    in.timeout_ms = 1000;
    in.retry_count = 3;
    const abi::Gid mgid = MulticastGid();
    std::memcpy(in.member_record, mgid.raw, 16);
    std::memcpy(in.member_record + 16, port_gid.raw, 16);
    in.member_record[48] = 0x21;  // Scope link-local, JoinState FullMember
    Put(input, in);
  } else if (far_end_ == nullptr || !far_end_->Open()) {
    return;  // no far end (the fuzz targets): CM requests name an idle endpoint
  } else if (name == "CepListen") {
    auto in = As<abi::CepListenIn>(input);
    in.service_id = htobe64(FreshServiceId());
    Put(input, in);
  } else if (name == "CepSendReq") {
    // To the far end, which has no listen for the service: it answers with a REJ.
    auto in = As<abi::CepSendReqIn>(input);
    in.qp.value = InitQp(abi::QpType::RC);
    in.params = HarnessReqParams(FreshServiceId(), lid, far_end_->lid());
    Put(input, in);
  } else if (name == "CepSendSidrReq") {
    auto in = As<abi::CepSendSidrReqIn>(input);
    in.service_id = htobe64(FreshServiceId());
    const auto path = HarnessPath(lid, far_end_->lid());
    std::memcpy(in.path, path.data(), path.size());
    in.timeout_ms = 1000;
    in.max_retries = 3;
    Put(input, in);
  } else if (name == "CepSendRep") {
    auto in = As<abi::CepSendRepIn>(input);
    in.cep.value = MakeCep(CepStage::kReqReceived);
    in.qp.value = InitQp(abi::QpType::RC);
    in.params = HarnessRepParams();
    Put(input, in);
  } else if (name == "CepSendRej") {
    auto in = As<abi::CepSendRejIn>(input);
    in.cep.value = MakeCep(CepStage::kReqReceived);
    in.reason = 28;  // CONSUMER_REJECT
    Put(input, in);
  } else if (name == "CepSendMra") {
    auto in = As<abi::CepSendMraIn>(input);
    in.cep.value = MakeCep(CepStage::kReqReceived);
    in.service_timeout = 20;
    Put(input, in);
  } else if (name == "CepSendSidrRep") {
    auto in = As<abi::CepSendSidrRepIn>(input);
    in.cep.value = MakeCep(CepStage::kSidrReqReceived);
    in.qp.value = InitQp(abi::QpType::UD);  // status VALID (0) names a UD QP
    in.qkey = htobe32(0x11111111);
    Put(input, in);
  } else if (name == "CepSendRtu" || name == "CepGetRtrAttributes" ||
             name == "CepGetRtsAttributes") {
    StoreLe(input, 0, 8, MakeCep(CepStage::kRepReceived));  // `cep`, first in all three
  } else if (name == "CepSendDreq") {
    StoreLe(input, 0, 8, MakeCep(CepStage::kEstablished));
  } else if (name == "CepSendDrep") {
    StoreLe(input, 0, 8, MakeCep(CepStage::kDreqReceived));
  } else if (name == "CepSendLap") {
    auto in = As<abi::CepSendLapIn>(input);
    in.cep.value = MakeCep(CepStage::kEstablished);
    const auto path = HarnessPath(lid, far_end_->lid());  // the primary path, as alternate
    std::memcpy(in.alternate_path, path.data(), path.size());
    in.remote_cm_response_timeout = 16;
    Put(input, in);
  } else if (name == "CepSendApr") {
    auto in = As<abi::CepSendAprIn>(input);
    in.cep.value = MakeCep(CepStage::kLapReceived);
    in.status = 0;  // CmAprStatus SUCCESS: the path is loaded
    Put(input, in);
  }
}

}  // namespace softib::conformance
