// REJ (IBA 12.6.7, 12.9.8): the consumer's reject, the CM's own (no listen, stale
// connection, timeout, transport type) and a received one.
#include <algorithm>

#include "runtime/al/src/cm/cm.h"
#include "runtime/al/src/cm/cm_wire.h"
#include "softib/mad/mad_cm.h"

namespace softib::al::cm {

using kernel::Status;
namespace wire = softib::mad;

namespace {

std::array<uint8_t, kCmMessageSize> RejMessage(uint32_t local_id, uint32_t remote_id,
                                               uint8_t message, uint16_t reason,
                                               std::span<const uint8_t> ari,
                                               std::span<const uint8_t> private_data) {
  wire::ConnectReject rej;
  rej.LocalCommunicationID = local_id;
  rej.RemoteCommunicationID = remote_id;
  rej.MessageRejected = message;
  rej.RejectedInfoLength = static_cast<uint8_t>(std::min(ari.size(), rej.ARI.size()));
  rej.Reason = reason;
  std::copy_n(ari.begin(), rej.RejectedInfoLength, rej.ARI.begin());
  std::copy_n(private_data.begin(), std::min(private_data.size(), rej.PrivateData.size()),
              rej.PrivateData.begin());
  return rej.Pack();
}

}  // namespace

void ConnectionManager::SendRejLocked(CepObj* cep, uint16_t reason, std::span<const uint8_t> ari,
                                      std::span<const uint8_t> private_data, Work& work) {
  wire::CmRejMessage message = wire::CmRejMessage::OTHER;
  if (cep->state == CepState::REQ_RCVD || cep->state == CepState::MRA_REQ_SENT) {
    message = wire::CmRejMessage::REQ;
  } else if (cep->state == CepState::REP_RCVD || cep->state == CepState::MRA_REP_SENT) {
    message = wire::CmRejMessage::REP;
  }
  SendLocked(cep, wire::ConnectReject::kAttributeId,
             RejMessage(cep->local_id, cep->remote_id, static_cast<uint8_t>(message), reason, ari,
                        private_data),
             work);
}

void ConnectionManager::RejectUnknownLocked(const std::shared_ptr<AlCa>& ca, uint8_t port,
                                            const MadAddress& to, uint32_t local_id,
                                            uint32_t remote_id, uint8_t message, uint16_t reason,
                                            Work& work) {
  rejected.fetch_add(1, std::memory_order_relaxed);
  const auto rej = RejMessage(local_id, remote_id, message, reason, {}, {});
  work.sends.push_back({ca, port, to, CmMad(wire::ConnectReject::kAttributeId, local_id, rej)});
}

Status ConnectionManager::SendRej(CepObj* cep, uint16_t reason, std::span<const uint8_t> ari,
                                  std::span<const uint8_t> private_data) {
  if (ari.size() > abi::kCepAriBytes) return Status::INVALID_PARAMETER;
  return Locked([&](Work& work) {
    const CepState state = cep->state;
    if (state != CepState::REQ_RCVD && state != CepState::MRA_REQ_SENT &&
        state != CepState::REP_RCVD && state != CepState::MRA_REP_SENT) {
      return Status::INVALID_STATE;
    }
    SendRejLocked(cep, reason, ari, private_data, work);
    // A rejected REP leaves a QP that may have been in RTR: time-wait (IBA 12.9.7).
    if (state == CepState::REP_RCVD || state == CepState::MRA_REP_SENT) {
      EnterTimewaitLocked(cep, work);
    } else {
      RemoveLocked(cep, work);
    }
    return Status::SUCCESS;
  });
}

// As Linux's cm_rej_handler: a connection being set up ends (in time-wait after a stale
// REJ), one past the REP goes through time-wait.
void ConnectionManager::OnRejLocked(std::span<const uint8_t> mad, Work& work) {
  wire::ConnectReject rej;
  CepObj* cep = AddressedLocked(mad, &rej);
  if (cep == nullptr) return;
  // Once we know the peer's ID, the REJ must carry it (a REJ to a REQ may not).
  if (cep->remote_id != 0 && rej.LocalCommunicationID != 0 &&
      rej.LocalCommunicationID != cep->remote_id) {
    return;
  }
  const bool stale = rej.Reason == static_cast<uint16_t>(wire::CmRejReason::STALE_CONNECTION);
  switch (cep->state) {
    case CepState::REQ_SENT:
    case CepState::MRA_REQ_RCVD:
    case CepState::REP_SENT:
    case CepState::MRA_REP_RCVD:
    case CepState::REQ_RCVD:
    case CepState::MRA_REQ_SENT:
      Event(cep, abi::CepEventType::REJ_RECEIVED, mad, work);
      if (stale) {
        EnterTimewaitLocked(cep, work);
      } else {
        RemoveLocked(cep, work);
      }
      break;
    case CepState::REP_RCVD:
    case CepState::MRA_REP_SENT:
    case CepState::ESTABLISHED:
    case CepState::DREQ_SENT:
      Event(cep, abi::CepEventType::REJ_RECEIVED, mad, work);
      EnterTimewaitLocked(cep, work);
      break;
    default:
      break;
  }
}

}  // namespace softib::al::cm
