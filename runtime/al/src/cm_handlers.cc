// The CM verbs over the connection manager (cm/cm.h). The generated validation runs first
// (lengths, reserved bytes, enum values, handles).
#include <endian.h>

#include <vector>

#include "runtime/al/src/ci_call.h"
#include "runtime/al/src/cm/cm.h"
#include "runtime/al/src/handlers.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

namespace {

cm::CepObj* Cep(const kernel::ObjectRef& ref) { return As<cm::CepObj>(ref); }

class CmVerbs final : public kernel::CmVerbHandlers {
 public:
  Status CreateCep(const kernel::CallContext& ctx, const abi::CreateCepIn& in,
                   kernel::CreateCepRefs& refs, abi::CreateCepOut& out, Irp*) override {
    Instance* instance = InstanceOf(ctx);
    if (instance->al->cm == nullptr) return Status::INSUFFICIENT_MEMORY;
    auto* cep = new cm::CepObj(instance, instance->al->cm, in.context);
    if (!Adopt(cep, refs.al.get())) {
      kernel::DereferenceObject(cep);
      return Status::INVALID_AL_HANDLE;
    }
    return Publish(instance, cep, &out.cep.value);
  }

  Status DestroyCep(const kernel::CallContext& ctx, const abi::DestroyCepIn& in,
                    kernel::DestroyCepRefs&, Irp*) override {
    return DestroyHandle(ctx, in.cep.value, abi::ObjectType::Cep, Status::INVALID_CEP_HANDLE);
  }

  Status CepListen(const kernel::CallContext&, const abi::CepListenIn& in,
                   kernel::CepListenRefs& refs, Irp*) override {
    return Cep(refs.cep)->cm->Listen(Cep(refs.cep), in);
  }

  // REQ and REP need the QP's state and port: a CiQueryQp IRP, the verb continuing in its
  // completion (SendWithQpAttributes).
  Status CepSendReq(const kernel::CallContext&, const abi::CepSendReqIn& in,
                    std::span<const uint8_t> private_data, kernel::CepSendReqRefs& refs,
                    Irp* irp) override {
    if (const Status s = cm::ConnectionManager::CheckReq(As<QpObj>(refs.qp), in.params);
        s != Status::SUCCESS) {
      return s;
    }
    return SendWithQpAttributes(std::move(refs.cep), std::move(refs.qp), in.params,
                                {private_data.begin(), private_data.end()},
                                [](auto* cep, QpObj* qp, const abi::CmReqParams& params,
                                   const std::vector<uint8_t>& data, const auto& attributes) {
                                  return cep->cm->SendReq(cep, qp, params, data, attributes);
                                })
        .Start(irp);
  }

  Status CepSendRep(const kernel::CallContext&, const abi::CepSendRepIn& in,
                    std::span<const uint8_t> private_data, kernel::CepSendRepRefs& refs,
                    Irp* irp) override {
    if (const Status s = cm::ConnectionManager::CheckRep(in.params); s != Status::SUCCESS) {
      return s;
    }
    return SendWithQpAttributes(std::move(refs.cep), std::move(refs.qp), in.params,
                                {private_data.begin(), private_data.end()},
                                [](auto* cep, QpObj* qp, const abi::CmRepParams& params,
                                   const std::vector<uint8_t>& data, const auto& attributes) {
                                  return cep->cm->SendRep(cep, qp, params, data, attributes);
                                })
        .Start(irp);
  }

  // The QP's attributes from the HCA (a CiQueryQp IRP), then `send` (a captureless lambda:
  // gcc 12 may destroy a co_await temporary twice, see ci_call.h, so nothing here owns state
  // but the coroutine's own parameters).
  template <typename Params, typename Send>
  static kernel::VerbTask SendWithQpAttributes(kernel::ObjectRef cep, kernel::ObjectRef qp,
                                               Params params, std::vector<uint8_t> data,
                                               Send send) {
    AlCa* ca = As<QpObj>(qp)->pd_obj->ca_obj->ca.get();
    if (ca->removed.load()) co_return {Status::INVALID_QP_HANDLE, 0};
    abi::CiQueryQpOut answer{};
    const Status s = co_await CiIrp(
        ca->lower,
        kernel::BuildCiQueryQpIrp(ca->lower, nullptr, kernel::ProcessorMode::kKernelMode,
                                  {As<QpObj>(qp)->qpn}, nullptr),
        &answer, sizeof answer);
    if (s != Status::SUCCESS) co_return {Status::INVALID_QP_HANDLE, 0};
    co_return {send(Cep(cep), As<QpObj>(qp), params, data, answer.attributes), 0};
  }

  Status CepSendRtu(const kernel::CallContext&, const abi::CepSendRtuIn&,
                    std::span<const uint8_t> private_data, kernel::CepSendRtuRefs& refs,
                    Irp*) override {
    return Cep(refs.cep)->cm->SendRtu(Cep(refs.cep), private_data);
  }

  Status CepSendRej(const kernel::CallContext&, const abi::CepSendRejIn& in,
                    std::span<const uint8_t> private_data, kernel::CepSendRejRefs& refs,
                    Irp*) override {
    if (in.ari_length > sizeof(in.ari)) return Status::INVALID_PARAMETER;
    return Cep(refs.cep)->cm->SendRej(
        Cep(refs.cep), in.reason, std::span<const uint8_t>(in.ari, in.ari_length), private_data);
  }

  Status CepSendMra(const kernel::CallContext&, const abi::CepSendMraIn& in,
                    std::span<const uint8_t> private_data, kernel::CepSendMraRefs& refs,
                    Irp*) override {
    return Cep(refs.cep)->cm->SendMra(Cep(refs.cep), in.service_timeout, private_data);
  }

  Status CepSendLap(const kernel::CallContext&, const abi::CepSendLapIn& in,
                    std::span<const uint8_t> private_data, kernel::CepSendLapRefs& refs,
                    Irp*) override {
    return Cep(refs.cep)->cm->SendLap(Cep(refs.cep), in.alternate_path,
                                      in.remote_cm_response_timeout, private_data);
  }

  Status CepSendApr(const kernel::CallContext&, const abi::CepSendAprIn& in,
                    std::span<const uint8_t> private_data, kernel::CepSendAprRefs& refs,
                    Irp*) override {
    if (in.info_length > sizeof(in.info)) return Status::INVALID_PARAMETER;
    return Cep(refs.cep)->cm->SendApr(
        Cep(refs.cep), in.status, std::span<const uint8_t>(in.info, in.info_length), private_data);
  }

  Status CepSendDreq(const kernel::CallContext&, const abi::CepSendDreqIn&,
                     std::span<const uint8_t> private_data, kernel::CepSendDreqRefs& refs,
                     Irp*) override {
    return Cep(refs.cep)->cm->SendDreq(Cep(refs.cep), private_data);
  }

  Status CepSendDrep(const kernel::CallContext&, const abi::CepSendDrepIn&,
                     std::span<const uint8_t> private_data, kernel::CepSendDrepRefs& refs,
                     Irp*) override {
    return Cep(refs.cep)->cm->SendDrep(Cep(refs.cep), private_data);
  }

  Status CepSendSidrReq(const kernel::CallContext&, const abi::CepSendSidrReqIn& in,
                        std::span<const uint8_t> private_data, kernel::CepSendSidrReqRefs& refs,
                        Irp*) override {
    return Cep(refs.cep)->cm->SendSidrReq(Cep(refs.cep), be64toh(in.service_id), in.path,
                                          in.timeout_ms, in.max_retries, private_data);
  }

  Status CepSendSidrRep(const kernel::CallContext&, const abi::CepSendSidrRepIn& in,
                        std::span<const uint8_t> private_data, kernel::CepSendSidrRepRefs& refs,
                        Irp*) override {
    if (in.info_length > sizeof(in.info)) return Status::INVALID_PARAMETER;
    return Cep(refs.cep)->cm->SendSidrRep(
        Cep(refs.cep), refs.qp ? As<QpObj>(refs.qp) : nullptr, in.status, be32toh(in.qkey),
        std::span<const uint8_t>(in.info, in.info_length), private_data);
  }

  Status CepGetRtrAttributes(const kernel::CallContext&, const abi::CepGetRtrAttributesIn&,
                             kernel::CepGetRtrAttributesRefs& refs,
                             abi::CepGetRtrAttributesOut& out, Irp*) override {
    return Cep(refs.cep)->cm->RtrAttributes(Cep(refs.cep), &out.attributes);
  }

  Status CepGetRtsAttributes(const kernel::CallContext&, const abi::CepGetRtsAttributesIn&,
                             kernel::CepGetRtsAttributesRefs& refs,
                             abi::CepGetRtsAttributesOut& out, Irp*) override {
    return Cep(refs.cep)->cm->RtsAttributes(Cep(refs.cep), &out.attributes);
  }

  Status CepGetEvent(const kernel::CallContext&, const abi::CepGetEventIn&,
                     kernel::CepGetEventRefs& refs, abi::CepGetEventOut& out, Irp* irp) override {
    return Cep(refs.cep)->Wait(irp, out);
  }
};

}  // namespace

kernel::CmVerbHandlers* CmHandlers() {
  static CmVerbs verbs;
  return &verbs;
}

}  // namespace softib::al
