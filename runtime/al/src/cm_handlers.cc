// The CM verbs (CEPs: REQ/REP/RTU, REJ, MRA, LAP/APR, DREQ/DREP, SIDR) before the CM exists
// (issue 5). Every verb runs the generated validation first (lengths, reserved bytes, enum
// values, flag masks, handle lookups), so malformed requests get their exact rejection;
// a request that passes answers UNSUPPORTED. No CEP can be created, so nothing here
// pretends a connection works.
#include "runtime/al/src/handlers.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

namespace {

class CmVerbs final : public kernel::CmVerbHandlers {
 public:
  Status CreateCep(const kernel::CallContext&, const abi::CreateCepIn&, kernel::CreateCepRefs&,
                   abi::CreateCepOut&, Irp*) override {
    return Status::UNSUPPORTED;
  }

  Status DestroyCep(const kernel::CallContext&, const abi::DestroyCepIn&, kernel::DestroyCepRefs&,
                    Irp*) override {
    return Status::UNSUPPORTED;
  }

  Status CepListen(const kernel::CallContext&, const abi::CepListenIn&, kernel::CepListenRefs&,
                   Irp*) override {
    return Status::UNSUPPORTED;
  }

  Status CepSendReq(const kernel::CallContext&, const abi::CepSendReqIn&, std::span<const uint8_t>,
                    kernel::CepSendReqRefs&, Irp*) override {
    return Status::UNSUPPORTED;
  }

  Status CepSendRep(const kernel::CallContext&, const abi::CepSendRepIn&, std::span<const uint8_t>,
                    kernel::CepSendRepRefs&, Irp*) override {
    return Status::UNSUPPORTED;
  }

  Status CepSendRtu(const kernel::CallContext&, const abi::CepSendRtuIn&, std::span<const uint8_t>,
                    kernel::CepSendRtuRefs&, Irp*) override {
    return Status::UNSUPPORTED;
  }

  Status CepSendRej(const kernel::CallContext&, const abi::CepSendRejIn&, std::span<const uint8_t>,
                    kernel::CepSendRejRefs&, Irp*) override {
    return Status::UNSUPPORTED;
  }

  Status CepSendMra(const kernel::CallContext&, const abi::CepSendMraIn&, std::span<const uint8_t>,
                    kernel::CepSendMraRefs&, Irp*) override {
    return Status::UNSUPPORTED;
  }

  Status CepSendLap(const kernel::CallContext&, const abi::CepSendLapIn&, std::span<const uint8_t>,
                    kernel::CepSendLapRefs&, Irp*) override {
    return Status::UNSUPPORTED;
  }

  Status CepSendApr(const kernel::CallContext&, const abi::CepSendAprIn&, std::span<const uint8_t>,
                    kernel::CepSendAprRefs&, Irp*) override {
    return Status::UNSUPPORTED;
  }

  Status CepSendDreq(const kernel::CallContext&, const abi::CepSendDreqIn&,
                     std::span<const uint8_t>, kernel::CepSendDreqRefs&, Irp*) override {
    return Status::UNSUPPORTED;
  }

  Status CepSendDrep(const kernel::CallContext&, const abi::CepSendDrepIn&,
                     std::span<const uint8_t>, kernel::CepSendDrepRefs&, Irp*) override {
    return Status::UNSUPPORTED;
  }

  Status CepSendSidrReq(const kernel::CallContext&, const abi::CepSendSidrReqIn&,
                        std::span<const uint8_t>, kernel::CepSendSidrReqRefs&, Irp*) override {
    return Status::UNSUPPORTED;
  }

  Status CepSendSidrRep(const kernel::CallContext&, const abi::CepSendSidrRepIn&,
                        std::span<const uint8_t>, kernel::CepSendSidrRepRefs&, Irp*) override {
    return Status::UNSUPPORTED;
  }

  Status CepGetRtrAttributes(const kernel::CallContext&, const abi::CepGetRtrAttributesIn&,
                             kernel::CepGetRtrAttributesRefs&, abi::CepGetRtrAttributesOut&,
                             Irp*) override {
    return Status::UNSUPPORTED;
  }

  Status CepGetRtsAttributes(const kernel::CallContext&, const abi::CepGetRtsAttributesIn&,
                             kernel::CepGetRtsAttributesRefs&, abi::CepGetRtsAttributesOut&,
                             Irp*) override {
    return Status::UNSUPPORTED;
  }

  Status CepGetEvent(const kernel::CallContext&, const abi::CepGetEventIn&,
                     kernel::CepGetEventRefs&, abi::CepGetEventOut&, Irp*) override {
    return Status::UNSUPPORTED;
  }
};

}  // namespace

kernel::CmVerbHandlers* CmHandlers() {
  static CmVerbs verbs;
  return &verbs;
}

}  // namespace softib::al
